#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench-migrate: numaplaced's mover (issue 4) in the 8-node QEMU VM of
tests/vm (seed 003's machine), with and without the skip-overlapping-node
rule, paced by MaxRate, and numad side by side.

One boot (8 nodes x 384 MB, one vCPU each, cgroup v1 so attaching to the
daemon's cpuset moves nothing by itself).  numaplaced runs on a private
system bus inside the VM (Mode=advise: only Place() moves anything).

1. Seed moves, rule on and off (Reload() in between), --runs each:
   a fresh np-workload with 32 MB bound to each of nodes 0-7 (--no-thp),
   Place(pid, TO) for TO = {3,4}, {1,3}, {1,4,5}, {1,2,3,5}; and a workload
   with 32 MB on each of 2,3,4, confined first by Place(pid, [2,3,4]), then
   Place(pid, [3,4,5]).  Per run: pgmigrate_success growth x 4096, Place's
   moved_bytes, and the time: `usec` of the ProcessPlaced signal (caught by
   `busctl monitor` in the VM) and the wall time of the busctl call.
2. MaxRate: one move (0-7 -> {3,4}, rule on, --rate-mb-per-node per node)
   under each --rates setting: achieved = moved bytes / ProcessPlaced usec,
   and achieved / MaxRate.
3. numad (Debian's, 20150602) in the same boot after numaplaced stopped:
   a comparable workload numad considers (interleaved over 0-7, --numad-mb
   in total, two sweeping threads), `numad -i 1:5 -S 0 -p PID`; the time
   until it first acts (its log says it moved the process, or
   pgmigrate_success grows) and the bytes moved, bounded by --numad-bound
   seconds; when numad does nothing within the bound the report says so.

Statistics are mmtests-style: Min, Mean, TrimMean (10% dropped at each end,
at least one run each side from 5 runs up), sample Stddev, Max.

    meson test -C BUILD --benchmark migrate -v
    NP_BUILD_ROOT=BUILD python3 tests/bench/bench-migrate.py [--runs 5]
        [--rates 0,64M,16M,4M] [--rate-runs 3] [--rate-mb-per-node 8]
        [--numad-bound 360] [--json FILE]
"""
import argparse
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("NP_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "vm"))
import npvm  # noqa: E402
from benchstat import fmt, stats  # noqa: E402

TOPO = npvm.Topology(8, mem_mb=384, cpus=1)
CGROUP = "v1"

# (label, workload nodes, first Place (confinement) or None, target)
MOVES = [
    ("0-7 -> 3,4", "0-7", None, "3,4"),
    ("0-7 -> 1,3", "0-7", None, "1,3"),
    ("0-7 -> 1,4,5", "0-7", None, "1,4,5"),
    ("0-7 -> 1,2,3,5", "0-7", None, "1,2,3,5"),
    ("2-4 -> 3,4,5", "2-4", "2,3,4", "3,4,5"),
]

CONFIG = """[Daemon]
Mode=advise
ScanIntervalSec=2
MaxScanIntervalSec=5
[Migration]
SkipOverlappingNodes=yes
MaxRate=0
"""

LIB = r"""
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
place() {        # place PID LIST(comma)
	_p=$1
	set -- $(echo "$2" | tr ',' ' ')
	busctl call $M Place uau $_p $# "$@"
}
gone() { ! kill -0 "$1" 2>/dev/null; }
uptime_cs() { awk '{ split($1, a, "."); print a[1] * 100 + a[2] }' /proc/uptime; }
nsig() { grep -c ProcessPlaced /tmp/sig.json 2>/dev/null || echo 0; }
# one_run KEY WORKLOAD_NODES MB PRE TO: a fresh workload, Place, results
one_run() {
	_k=$1 _wn=$2 _mb=$3 _pre=$4 _to=$5
	_pid=$(np_start_workload /tmp/w --per-node $_wn --mb-per-node $_mb --no-thp) || return 1
	[ "$_pre" = - ] || place $_pid $_pre > /dev/null
	_n0=$(nsig)
	_m0=$(np_vmstat pgmigrate_success)
	_c0=$(uptime_cs)
	_out=$(place $_pid $_to 2>&1)
	_c1=$(uptime_cs)
	_m1=$(np_vmstat pgmigrate_success)
	np_wait_for 5 sh -c "[ \$(grep -c ProcessPlaced /tmp/sig.json) -gt $_n0 ]"
	_sig=$(grep ProcessPlaced /tmp/sig.json | tail -n 1 | sed 's/.*"data":\[\(.*\)\].*/\1/' | tr -d '[]" ' )
	np_result $_k pages=$((_m1 - _m0)) wall_cs=$((_c1 - _c0)) place="$(echo $_out | tr ' ' _)" sig=$_sig
	kill $_pid
	np_wait_for 20 gone $_pid
}
set_config() {   # set_config KEY VALUE, then Reload
	sed -i "s/^$1=.*/$1=$2/" /tmp/np.conf
	busctl call $M Reload > /dev/null || np_log "Reload failed"
}
"""


def scenario(args):
    s = [LIB, r"""
mkdir -p /var/log /var/run
np_start_dbus || exit 1
cp /etc/np.conf /tmp/np.conf
np_start_numaplaced /tmp/np.conf || exit 1
busctl --json=short monitor --match "type='signal',interface='org.numaplaced1.Manager',member='ProcessPlaced'" \
	> /tmp/sig.json 2>&1 &
MON=$!
sleep 1
np_result phase seed $(cut -d' ' -f1 /proc/uptime)
"""]
    for rule in ("on", "off"):
        s.append(f"set_config SkipOverlappingNodes {'yes' if rule == 'on' else 'no'}\n")
        for i, (_label, wn, pre, to) in enumerate(MOVES):
            for r in range(args.runs):
                s.append(f"one_run seed.{i}.{rule}.{r} {wn} 32 {pre or '-'} {to}\n")
    s.append("set_config SkipOverlappingNodes yes\n")
    s.append("np_result phase rate $(cut -d' ' -f1 /proc/uptime)\n")
    for rate in args.rates:
        s.append(f"set_config MaxRate {rate}\n")
        for r in range(args.rate_runs):
            s.append(f"one_run rate.{rate}.{r} 0-7 {args.rate_mb_per_node} - 3,4\n")
    s.append(r"""
np_result phase numad $(cut -d' ' -f1 /proc/uptime)
kill $MON
np_stop_numaplaced > /dev/null
""")
    if args.numad_bound > 0:
        s.append(rf"""
pid=$(np_start_workload /tmp/nw --interleave 0-7 --mb {args.numad_mb} --threads 2 --sweep --no-thp) || exit 1
np_result numad.before $(np_numa_kb $pid)
m0=$(np_vmstat pgmigrate_success)
t0=$(uptime_cs)
numad -i 1:5 -l 6 -S 0 -p $pid > /tmp/numad.out 2>&1
np_result numad.rc $?
acted=
while :; do
	sleep 1
	t=$(( $(uptime_cs) - t0 ))
	d=$(( $(np_vmstat pgmigrate_success) - m0 ))
	if [ -z "$acted" ] && {{ [ $d -gt 0 ] || grep -q -e "moved to node" -e "Advising pid" /var/log/numad.log 2>/dev/null; }}; then
		acted=$t
		np_result numad.first_action_cs $t pages=$d
	fi
	if [ -n "$acted" ] && grep -q "moved to node" /var/log/numad.log 2>/dev/null; then
		break
	fi
	[ $t -ge {args.numad_bound * 100} ] && break
done
sleep 2
np_result numad.end_cs $(( $(uptime_cs) - t0 ))
np_result numad.pages $(( $(np_vmstat pgmigrate_success) - m0 ))
np_result numad.after $(np_numa_kb $pid)
np_capture numad.log grep -i -e advis -e "moved to" -e migrat /var/log/numad.log
np_result numad.skipped_too_recently $(grep -c "done too recently" /var/log/numad.log)
np_capture numad.logtail tail -n 5 /var/log/numad.log
kill $(cat /var/run/numad.pid 2>/dev/null) 2>/dev/null
kill $pid
""")
    s.append("np_result phase end $(cut -d' ' -f1 /proc/uptime)\n")
    return "".join(s)


def parse_rate(s):
    m = re.fullmatch(r"(\d+)([KMGT]?)", s.strip().upper())
    if not m:
        raise argparse.ArgumentTypeError(f"bad rate {s!r}")
    return int(m.group(1)) * 1024 ** " KMGT".index(m.group(2) or " ")



def parse_run(value):
    kv = {}
    for tok in value.split():
        k, _, v = tok.partition("=")
        kv[k] = v
    out = {"pages": int(kv.get("pages", 0)), "wall_s": int(kv.get("wall_cs", 0)) / 100.0}
    m = re.fullmatch(r"t_(\d+)", kv.get("place", ""))
    out["moved"] = int(m.group(1)) if m else None
    out["place"] = kv.get("place", "").replace("_", " ")
    # ProcessPlaced data: pid,comm,from...,to...,moved_bytes,usec (flattened)
    sig = [x for x in kv.get("sig", "").split(",") if x]
    out["sig_moved"] = int(sig[-2]) if len(sig) >= 2 and sig[-2].isdigit() else None
    out["usec"] = int(sig[-1]) if sig and sig[-1].isdigit() else None
    return out



def fmt_stats(st, scale=1.0, prec=1):
    return fmt(st, prec=prec, width=8, scale=scale, none="  n/a")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rates", default="0,64M,16M,4M")
    ap.add_argument("--rate-runs", type=int, default=3)
    ap.add_argument("--rate-mb-per-node", type=int, default=8)
    ap.add_argument("--numad-bound", type=int, default=360,
                    help="seconds to wait for numad to act (0: skip numad)")
    ap.add_argument("--numad-mb", type=int, default=320)
    ap.add_argument("--json", help="write the raw results here")
    args = ap.parse_args()
    rate_specs = [r.strip() for r in args.rates.split(",") if r.strip()]
    args.rates = rate_specs
    rate_bytes = {r: parse_rate(r) for r in rate_specs}

    vm = npvm.VM("bench-migrate-8", TOPO, cgroup=CGROUP)
    vm.add_commands("numactl")
    if args.numad_bound > 0:
        vm.add_commands("numad")
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", CONFIG)
    script = scenario(args)
    # generous: ~4 s per seed run, the paced runs, numad's bound, boot
    paced = sum((6 * args.rate_mb_per_node << 20) / rate_bytes[r] for r in rate_specs if rate_bytes[r])
    timeout = int(120 + 10 * len(MOVES) * 2 * args.runs + args.rate_runs * (paced + 10 * len(rate_specs))
                  + args.numad_bound + 60)
    t0 = time.monotonic()
    res = vm.run(script, timeout=timeout)
    if not res.completed or res.rc != 0:
        print(res.console.replace("\r", ""))
        print(f"bench-migrate: the VM run did not complete (rc {res.rc}, timed out {res.timed_out}); "
              f"console above, also in {npvm.vm_build_dir()}/runs/bench-migrate-8.log")
        return 1

    raw = {"seed": {}, "rate": {}, "numad": {}}
    print()
    print(f"bench-migrate: 8 nodes x {TOPO.mem_mb[0]} MB, cgroup {CGROUP}, QEMU TCG on this host; "
          f"{args.runs} runs per move and rule, a fresh workload each run (32 MB bound to each node, "
          f"no THP). VM wall {res.wall:.0f} s.")
    phases = {v.split()[0]: float(v.split()[1]) for v in res.all("phase")}
    print("phases (VM uptime s): " + ", ".join(f"{k} {v:.0f}" for k, v in phases.items()))
    problems = []

    # ---- seed moves
    print("\n== Seed moves: bytes moved (MB = pgmigrate_success x 4096 / 2^20; daemon = Place's moved_bytes)")
    hdr = f"{'move':<16} {'MB on':>8} {'MB off':>8} {'off/on':>7}  {'daemon on':>10} {'daemon off':>10}"
    print(hdr)
    time_rows = []
    for i, (label, _wn, _pre, _to) in enumerate(MOVES):
        per = {}
        for rule in ("on", "off"):
            runs = [parse_run(res.get(f"seed.{i}.{rule}.{r}") or "") for r in range(args.runs)]
            raw["seed"][f"{label} {rule}"] = runs
            for r in runs:
                if r["moved"] is None:
                    problems.append(f"{label} rule {rule}: Place failed: {r['place']}")
                elif abs(r["moved"] - r["pages"] * 4096) > 0.01 * max(r["moved"], 1):
                    problems.append(f"{label} rule {rule}: Place {r['moved']} B vs pgmigrate "
                                    f"{r['pages'] * 4096} B")
            per[rule] = {
                "mb": stats([r["pages"] * 4096 / 2 ** 20 for r in runs]),
                "daemon_mb": stats([r["moved"] / 2 ** 20 if r["moved"] is not None else None for r in runs]),
                "ms": stats([r["usec"] / 1000 if r["usec"] is not None else None for r in runs]),
                "wall": stats([r["wall_s"] * 1000 for r in runs]),
            }
        on, off = per["on"], per["off"]
        ratio = off["mb"]["mean"] / on["mb"]["mean"] if on["mb"] and off["mb"] and on["mb"]["mean"] else float("nan")
        print(f"{label:<16} {on['mb']['mean'] if on['mb'] else float('nan'):>8.1f} "
              f"{off['mb']['mean'] if off['mb'] else float('nan'):>8.1f} {ratio:>7.2f}  "
              f"{on['daemon_mb']['mean'] if on['daemon_mb'] else float('nan'):>10.1f} "
              f"{off['daemon_mb']['mean'] if off['daemon_mb'] else float('nan'):>10.1f}")
        time_rows.append((label, per))

    print("\n== Seed moves: time of Place (ms, ProcessPlaced usec), "
          f"{args.runs} runs: Min Mean TrimMean Stddev Max")
    print(f"{'move':<16} {'rule':<4} {'Min':>8}  {'Mean':>8}  {'TrimMean':>8}  {'Stddev':>8}  {'Max':>8}"
          f"   {'wall ms (busctl, mean)':>22}")
    for label, per in time_rows:
        for rule in ("on", "off"):
            w = per[rule]["wall"]
            print(f"{label:<16} {rule:<4} {fmt_stats(per[rule]['ms'])}   {w['mean'] if w else float('nan'):>22.0f}")
        on, off = per["on"]["ms"], per["off"]["ms"]
        if on and off:
            print(f"{'':<16} {'off/on':<6} time x{off['mean'] / on['mean']:.2f} (mean), "
                  f"x{off['trim'] / on['trim']:.2f} (TrimMean)")

    # ---- MaxRate
    print(f"\n== MaxRate: 0-7 -> 3,4 with the rule, {args.rate_mb_per_node} MB per node "
          f"({6 * args.rate_mb_per_node} MB to move), {args.rate_runs} runs each")
    print(f"{'MaxRate':>8} {'MB moved':>9}  {'s Min':>7} {'s Mean':>7} {'s Max':>7}  "
          f"{'MB/s Min':>8} {'MB/s Mean':>9} {'MB/s Max':>8}  {'achieved/MaxRate':>16}")
    for rate in rate_specs:
        runs = [parse_run(res.get(f"rate.{rate}.{r}") or "") for r in range(args.rate_runs)]
        raw["rate"][rate] = runs
        ok = [r for r in runs if r["moved"] is not None and r["usec"]]
        for r in runs:
            if r["moved"] is None:
                problems.append(f"MaxRate {rate}: Place failed: {r['place']}")
        secs = stats([r["usec"] / 1e6 for r in ok])
        ach = stats([r["moved"] / (r["usec"] / 1e6) / 2 ** 20 for r in ok])
        mb = stats([r["moved"] / 2 ** 20 for r in ok])
        rb = rate_bytes[rate]
        ratio = f"{ach['mean'] * 2 ** 20 / rb:.3f}" if rb and ach else "(unlimited)"
        if secs:
            print(f"{rate:>8} {mb['mean']:>9.1f}  {secs['min']:>7.2f} {secs['mean']:>7.2f} {secs['max']:>7.2f}  "
                  f"{ach['min']:>8.1f} {ach['mean']:>9.1f} {ach['max']:>8.1f}  {ratio:>16}")
        else:
            print(f"{rate:>8}  no successful run")

    # ---- numad
    print("\n== numad (20150602) in the same VM, after numaplaced stopped")
    if args.numad_bound <= 0:
        print("skipped (--numad-bound 0)")
    else:
        before = res.node_kb("numad.before")
        after = res.node_kb("numad.after")
        first = res.get("numad.first_action_cs")
        pages = res.int("numad.pages")
        end = res.int("numad.end_cs")
        raw["numad"] = {"before": before, "after": after, "first": first, "pages": pages, "end_cs": end,
                        "log": res.all("numad.log"), "rc": res.get("numad.rc")}
        print(f"workload: {args.numad_mb} MB interleaved over 0-7, 2 sweeping threads; "
              f"numad -i 1:5 -S 0 -p PID; bound {args.numad_bound} s")
        print(f"before: {before}")
        if first:
            t = int(first.split()[0]) / 100.0
            print(f"numad first acted after {t:.1f} s; {pages} pages = {pages * 4096 / 2 ** 20:.1f} MB moved "
                  f"by {end / 100.0 if end else float('nan'):.1f} s")
        else:
            print(f"numad did NOT act within the bound of {args.numad_bound} s "
                  f"(watched {end / 100.0 if end else float('nan'):.0f} s; pgmigrate_success +{pages})")
        print(f"after:  {after}")
        print(f"numad log: 'Skipping evaluation of PID ... because done too recently' "
              f"{res.get('numad.skipped_too_recently')} times")
        for line in res.all("numad.log")[:12]:
            print(f"  numad log: {line}")
        if not res.all("numad.log"):
            for line in res.all("numad.logtail"):
                print(f"  numad log tail: {line}")

    if problems:
        print("\nproblems seen:")
        for p in problems:
            print(f"  - {p}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(raw, f, indent=1)
    print(f"\nbench-migrate: done in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except npvm.HarnessError as e:
        print(f"bench-migrate: cannot run: {e}", file=sys.stderr)
        sys.exit(1)
