#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench-balancing-confined: does the kernel's automatic NUMA balancing
still scan a process that numaplaced confined to one memory node, and what
does that cost? In the 4-node QEMU VM of tests/vm (4 x 512 MB, one vCPU per
node, TCG, cgroup v1), booted with numa_balancing=enable; the VM's kernel
is the one tests/vm boots (uname -r is printed).

One busy 320 MB process (np-workload --sweep --duty 50 --no-pin, all of its
memory on node 1), alone on the machine, measured for --seconds each way in
one boot, the ways in turn:

  free      in the root cpuset (every CPU, every node)
  confined  in a cpuset with cpuset.cpus = node 1's CPU and cpuset.mems = 1,
            as numaplaced's cpuset backend confines a process it placed on
            node 1 (its memory is all there already: nothing moves)

Printed per way: numa_pte_updates, numa_hint_faults and
numa_hint_faults_local per second (/proc/vmstat), pgmigrate_success, and
the process's system time per second (the hinting faults are taken in its
context), min/mean/max over --runs rounds.

    NP_BUILD_ROOT=BUILD python3 tests/bench/bench-balancing-confined.py [--runs 3] [--seconds 30] [--cgroup v2]

Another kernel: NPVM_KERNEL=/path/to/vmlinuz (Debian's 6.12 has no cgroup v1
cpusets: --cgroup v2).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("NP_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "vm"))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=512, cpus=1)
WAYS = ("free", "confined")

SCRIPT = r"""
np_result kernel $(uname -r)
np_result balancing $(cat /proc/sys/kernel/numa_balancing)
# cgroup v1: the cpuset hierarchy, a thread at a time; v2 (kernels built
# without cgroup v1 cpusets, as Debian's 6.12): the whole process at once
if [ "$NPVM_CGROUP" = v2 ]; then CS=/sys/fs/cgroup; TASKS=cgroup.procs; else CS=/sys/fs/cgroup/cpuset; TASKS=tasks; fi
mkdir -p $CS/one
cat /sys/devices/system/node/node1/cpulist > $CS/one/cpuset.cpus
echo 1 > $CS/one/cpuset.mems
a=$(np_start_workload /tmp/a --mb 320 --bind 1 --reset-policy --no-thp --sweep --duty 50 --no-pin) || exit 1
sleep 5
measure() {  # measure WAY
	p0=$(np_vmstat numa_pte_updates); f0=$(np_vmstat numa_hint_faults)
	l0=$(np_vmstat numa_hint_faults_local); m0=$(np_vmstat pgmigrate_success)
	s0=$(awk '{ print $15 }' /proc/$a/stat); t0=$(cut -d' ' -f1 /proc/uptime)
	sleep {seconds}
	t1=$(cut -d' ' -f1 /proc/uptime)
	np_result way $1 $(awk -v a="$t1" -v b="$t0" 'BEGIN { print a - b }') \
		$(( $(np_vmstat numa_pte_updates) - p0 )) $(( $(np_vmstat numa_hint_faults) - f0 )) \
		$(( $(np_vmstat numa_hint_faults_local) - l0 )) $(( $(np_vmstat pgmigrate_success) - m0 )) \
		$(( $(awk '{ print $15 }' /proc/$a/stat) - s0 )) $(np_numa_kb $a | tr ' ' ,)
}
for r in $(seq {runs}); do
	echo $a > $CS/$TASKS
	[ $TASKS = tasks ] && for t in /proc/$a/task/*; do echo ${t##*/} > $CS/tasks; done
	measure free
	if [ $TASKS = tasks ]; then
		for t in /proc/$a/task/*; do echo ${t##*/} > $CS/one/tasks; done
	else
		echo $a > $CS/one/cgroup.procs
	fi
	measure confined
done
np_result hz $(getconf CLK_TCK 2>/dev/null || echo 100)
kill $a
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--cgroup", choices=("v1", "v2"), default="v1",
                    help="the cpuset hierarchy to confine in (v2 for kernels without cgroup v1 cpusets)")
    args = ap.parse_args()
    vm = npvm.VM("bench-balancing-confined", TOPO, cgroup=args.cgroup,
                 cmdline=[c for c in npvm.DEFAULT_CMDLINE if not c.startswith("numa_balancing=")]
                 + ["numa_balancing=enable"])
    vm.add_workload()
    script = SCRIPT.replace("{seconds}", str(args.seconds)).replace("{runs}", str(args.runs))
    res = vm.run(script, timeout=120 + args.runs * 2 * (args.seconds + 15))
    if not res.completed or res.rc != 0:
        print(res.console.replace("\r", "")[-3000:])
        return 1
    hz = res.int("hz") or 100
    print(f"kernel {res.get('kernel')}, numa_balancing={res.get('balancing')}; "
          f"{args.runs} round(s) of {args.seconds} s per way; min/mean/max per second")
    rows = {w: [] for w in WAYS}
    for line in res.all("way"):
        f = line.split()
        secs = float(f[1])
        rows[f[0]].append([int(x) / secs for x in f[2:6]] + [int(f[6]) / hz / secs, f[7]])
    print(f"{'way':<9} {'pte updates':>20} {'hint faults':>20} {'of them local':>20} {'pages migrated':>16} "
          f"{'its system s/s':>16}  memory (kB per node, last round)")
    for w in WAYS:
        r = rows[w]
        if not r:
            continue
        cols = []
        for i in range(5):
            xs = [x[i] for x in r]
            cols.append(f"{min(xs):.0f}/{sum(xs) / len(xs):.0f}/{max(xs):.0f}" if i < 4
                        else f"{min(xs):.3f}/{sum(xs) / len(xs):.3f}/{max(xs):.3f}")
        print(f"{w:<9} {cols[0]:>20} {cols[1]:>20} {cols[2]:>20} {cols[3]:>16} {cols[4]:>16}  {r[-1][5]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
