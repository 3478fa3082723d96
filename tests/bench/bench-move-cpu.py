#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench-move-cpu: what moving a busy process's pages costs the mover, by the
CPU the mover runs on, in the 4-node QEMU VM of tests/vm (4 x 512 MB, one
vCPU per node, TCG, cgroup v1).

Per run and way, in one boot: a fresh busy 320 MB process whose memory was
allocated interleaved over nodes 0-3 (np-workload --sweep --duty 50, the
policy reset to default, as in bench-policy's scenario 1), with its threads
on node 0's CPU (what a confinement to node 0 does), and a busy 100 MB
bystander anywhere; then `migratepages PID 0-3 0` (one migrate_pages(2)
call, 240 MB to move) under busybox `time`, started with taskset on

  own      CPU 0, the process's own (what numaplaced's mover does since
           it follows the CPUs it confined the process to)
  other    CPU 2, another node's (what a mover does that runs where the
           scheduler puts it, numad's or numaplaced's before)
  alone    CPU 2, with no bystander running

Printed per way: the mover's system time (s) and its CPU ms per MB moved
(pgmigrate_success x 4096), min/mean/trimmed mean/stddev/max over the runs,
and the ratio of the means against `other`. The ways run interleaved in
each round, so a slow stretch of the host hits all of them.

A VM's vCPUs are host threads on 2 cores here: a guest thread's CPU time
includes the time its vCPU waits for the host, as it does for every placer
measured in bench-policy.

    meson test -C BUILD --benchmark move-cpu -v
    NP_BUILD_ROOT=BUILD python3 tests/bench/bench-move-cpu.py [--runs 5] [--json FILE]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("NP_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "vm"))
import npvm  # noqa: E402
from benchstat import fmt, stats  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=512, cpus=1)
BUSY = "--mb 320 --interleave 0-3 --no-thp --sweep --duty 50 --no-pin --reset-policy"
WAYS = ("own", "other", "alone")

SCRIPT = r"""
BUSY="{busy}"
for r in $(seq 1 {runs}); do
for way in {ways}; do
	pid=$(np_start_workload /tmp/w $BUSY) || exit 1
	b=
	if [ $way != alone ]; then
		b=$(np_start_workload /tmp/wb $BUSY --mb 100) || exit 1
	fi
	taskset -a -p 1 $pid > /dev/null || exit 1
	sleep 2
	case $way in own) cpu=0 ;; *) cpu=2 ;; esac
	m0=$(np_vmstat pgmigrate_success)
	time -p taskset -c $cpu migratepages $pid 0-3 0 2> /tmp/t.err
	rc=$?
	np_result run $way $rc $(( $(np_vmstat pgmigrate_success) - m0 )) $(tr '\n' ' ' < /tmp/t.err)
	np_result loc $way $(np_numa_kb $pid)
	kill $pid $b
	# not this shell's children (np_start_workload runs them in $(...))
	for p in $pid $b; do np_wait_for 30 sh -c "! kill -0 $p 2> /dev/null"; done
done
done
true
"""


def parse(res):
    """{way: [(sys_s, pages)]} from `run WAY RC PAGES real R user U sys S`."""
    out = {w: [] for w in WAYS}
    for line in res.all("run"):
        f = line.split()
        if len(f) < 9 or f[1] != "0":
            raise npvm.HarnessError(f"a move failed: {line!r}")
        kv = dict(zip(f[3::2], f[4::2]))
        out[f[0]].append((float(kv["sys"]), int(f[2])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()

    vm = npvm.VM("bench-move-cpu", TOPO, cgroup="v1")
    vm.add_commands("migratepages", "taskset")
    vm.add_workload()
    res = vm.run(npvm.SMOKE_SCRIPT + SCRIPT.format(busy=BUSY, runs=a.runs, ways=" ".join(WAYS)),
                 timeout=120 + 60 * a.runs * len(WAYS))
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()
    runs = parse(res)

    print(f"\nbench-move-cpu: migratepages PID 0-3 0 of a busy 320 MB interleaved process, {a.runs} runs per way")
    print(f"{'way':<6} {'MB moved':>9}  {'system s: min mean trim sd max':>52}  "
          f"{'ms per MB: min mean trim sd max':>52}  vs other")
    summary = {}
    for w in WAYS:
        sys_s = [s for s, _ in runs[w]]
        mb = [p * 4096 / 2**20 for _, p in runs[w]]
        per_mb = [1000.0 * s / m for s, m in zip(sys_s, mb) if m > 0]
        summary[w] = {"sys_s": stats(sys_s), "ms_per_mb": stats(per_mb), "mb": stats(mb)}
    base = summary["other"]["sys_s"]["mean"]
    for w in WAYS:
        s = summary[w]
        ratio = s["sys_s"]["mean"] / base if base else float("nan")
        print(f"{w:<6} {s['mb']['mean']:>9.1f}  {fmt(s['sys_s'], 2, ' ', 10)}  "
              f"{fmt(s['ms_per_mb'], 2, ' ', 10)}  {ratio:.2f}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"runs": runs, "summary": summary}, fh, indent=1)
    return t.finish()


if __name__ == "__main__":
    npvm.run_test("bench-move-cpu", main)
