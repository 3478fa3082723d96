#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench-soak: the long soak (issue 10), numaplaced and then numad under the
same churn in the 4-node QEMU VM of tests/vm, one boot.

The churn is the vm suite's short soak (tests/vm/test_soak.py): hundreds of
short-lived processes a minute with pid_max 1024 (PIDs reused all the time),
a significant 24 MB np-workload every second living 1.5 s, another
interleaved over every node every 2 s living 3 s, a 64 MB process bound to
a random node every 2 s (free memory moving between nodes); with
numaplaced also a Place() of the newest significant process every second,
Reload() every 3 s and Pause()/Resume() every 2 s; and (unless
--no-hotplug, issue 25) every 60 s one CPU other than 0 goes offline (1, 2,
3 in turn; each node has one CPU, so its node loses its last one) and comes
back 30 s later, each change a `hotplug` result line.

1. numaplaced (test_soak.CONFIG: ScanIntervalSec=0.5, significant from 16
   MB, Mode=enforce, so the policy places too) for --duration seconds;
   every --sample seconds its RSS, descriptors, CPU time, Scans and the bus
   objects are recorded. Before the churn (after a 20-scan warm-up churn,
   once everything is gone) and after it (once everything is gone again)
   the baseline figures: RSS, descriptors, bus objects, ManagedProcesses,
   tasks left in its cgroups, MigratedBytes against /proc/vmstat's
   pgmigrate_success. Two long-lived processes (2 threads each) are pinned
   by Place() for the whole phase, on node 2 and on nodes 1 and 3, so that
   every CPU change finds held processes. 10 s after both changes of every
   --check-every-th CPU cycle, and at the end of the churn, the placements
   are checked against /proc (test_soak.placement_check): every held
   process's threads within its TargetNodes' online CPUs (all online CPUs
   when they have none) with Mems_allowed_list its TargetNodes, every task
   in the daemon's cgroups a process it holds.
2. numad (unless --no-numad) (Debian 20150602, `numad -i 1:5 -l 6 -S 1`, its log in /var/log)
   for the same time under the same churn (without the bus calls): RSS,
   descriptors and CPU time sampled the same way.

Printed: mmtests-style Min, Mean, TrimMean, Stddev, Max of each sampled
series, the drift (last sample minus first), CPU per minute, and the
baseline before and after, numad in the next column.

Asserted at the end, one PASS or FAIL line each (exit status 1 on a FAIL):
RSS (within test_soak.RSS_SLACK_KB), descriptors and bus objects back to the
baseline, nothing held or confined after the churn, the placement checks,
nothing bad in the log, the CPU cycles done and the witnesses still pinned.

    meson test -C BUILD --benchmark soak -v           # one hour
    NP_BUILD_ROOT=BUILD python3 tests/bench/bench-soak.py --duration 1800 --sample 30
    NP_BUILD_ROOT=BUILD python3 tests/bench/bench-soak.py --duration 3600 --sample 60 --no-numad
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("NP_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "vm"))
import npvm  # noqa: E402
import test_soak  # noqa: E402
from benchstat import fmt, stats  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=384, cpus=1)

SCRIPT = test_soak.CHURN_LIB + r"""
ticks() { awk '{ print $14 + $15 }' /proc/$1/stat; }
sample() {        # sample KEY PID [bus]
	np_result $1 t=$(awk '{ print int($1) }' /proc/uptime) rss=$(awk '$1 == "VmRSS:" { print $2 }' /proc/$2/status) \
		fds=$(ls /proc/$2/fd | wc -l) ticks=$(ticks $2) forks=$(forks) \
		$([ "$3" = bus ] && echo scans=$(prop Scans) objects=$(objects) scan_us=$(prop LastScanDurationUSec))
}
# two long-lived processes pinned by Place(), so that every CPU cycle finds
# held processes (the churn's live 1.5 s): W1 on node 2, W2 on nodes 1 and 3
witnesses() {
	W1=$(np_start_workload /tmp/w1 --mb 24 --no-thp --no-pin --threads 2) || return 1
	W2=$(np_start_workload /tmp/w2 --mb 24 --no-thp --no-pin --threads 2) || return 1
	np_capture witness.w1.place busctl --timeout=60 call $M Place uau $W1 1 2
	np_capture witness.w2.place busctl --timeout=60 call $M Place uau $W2 2 1 3
	np_result witness.pids w1=$W1 w2=$W2
}
witness_end() {
	for _w in $W1 $W2; do
		np_result witness.end pid=$_w alive=$(kill -0 $_w 2>/dev/null && echo yes || echo no) \
			state=$(busctl get-property org.numaplaced1 /org/numaplaced1/process/$_w org.numaplaced1.Process State 2>/dev/null | cut -d' ' -f2 | tr -d '"') \
			targets=$(busctl get-property org.numaplaced1 /org/numaplaced1/process/$_w org.numaplaced1.Process TargetNodes 2>/dev/null | cut -d' ' -f3- | tr ' ' ,)
		np_capture witness.decision.$_w busctl get-property org.numaplaced1 /org/numaplaced1/process/$_w org.numaplaced1.Process Decision
		np_result witness.proc.$_w cgroup=$(grep -E '^[0-9]+:(cpuset)?:' /proc/$_w/cgroup | head -n 1 | cut -d: -f3) \
			threads=$(for _f in /proc/$_w/task/*/status; do awk '$1 == "Cpus_allowed_list:" { c = $2 } $1 == "Mems_allowed_list:" { m = $2 } END { printf "%s/%s;", c, m }' $_f; done)
		np_capture witness.log.$_w sh -c "grep -w $_w /tmp/numaplaced.log | grep -v 'Placed .*manual)' | tail -n 40"
		kill $_w 2>/dev/null
	done
}
run_phase() {     # run_phase KEY PID [bus]
	[ "$3" = bus ] && [ "$CHECK" = 1 ] && witnesses
	_end=$(( $(awk '{ print int($1) }' /proc/uptime) + DURATION ))
	churn
	while [ $(awk '{ print int($1) }' /proc/uptime) -lt $_end ]; do
		sample $1.s $2 $3
		sleep $SAMPLE
	done
	if [ "$3" = bus ] && [ "$CHECK" = 1 ]; then
		consistency $1.end
		witness_end
	fi
	end_churn_plain
}
end_churn_plain() {
	touch /tmp/stop
	for _c in $CHURN; do wait $_c; done
	np_wait_for 60 sh -c '! pidof np-workload > /dev/null'
	sleep 5
}
figures() {
	np_result $1 rss=$(rss) fds=$(fds) objects=$(objects) scans=$(prop Scans) \
		managed=$(busctl get-property $M ManagedProcesses | awk '{ print $2 }') confined=$(confined) \
		migrated=$(prop MigratedBytes) calls=$(prop MigrationCalls) failed=$(prop MigrationFailedPages) \
		pgmigrate=$(np_vmstat pgmigrate_success) forks=$(forks) seen=$(dump_field "Processes seen:") \
		cpu_ticks=$(ticks $NP_DAEMON_PID)
}

echo 1024 > /proc/sys/kernel/pid_max
np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
wait_scans 4
churn
wait_scans 20
end_churn
figures np.base
: > /tmp/place.ok; : > /tmp/place.fail
CHECK=$CHECKS
run_phase np $NP_DAEMON_PID bus
CHECK=0
wait_scans 6
figures np.after
np_result np.places ok=$(wc -l < /tmp/place.ok) failed=$(wc -l < /tmp/place.fail)
np_result np.alive $(kill -0 $NP_DAEMON_PID 2>/dev/null && echo yes || echo no)
np_result np.log_bad $(grep -c -i -e critical -e assertion -e "event loop failed" /tmp/numaplaced.log)
np_result np.log_topology $(grep -c "NUMA topology changed" /tmp/numaplaced.log)
np_result np.placed_by manual=$(grep -c "Placed .*, manual)" /tmp/numaplaced.log) \
	policy=$(grep -c "Placed .*, policy)" /tmp/numaplaced.log) rebalance=$(grep -c "Placed .*, rebalance)" /tmp/numaplaced.log)
np_stop_numaplaced
[ "$NUMAD" = 1 ] || exit 0

mkdir -p /var/log /var/run
numad -i 1:5 -l 6 -S 1 > /tmp/numad.out 2>&1   # daemonizes
np_wait_file /var/run/numad.pid 30
# the running numad (its pid file and pidof must agree: the daemonized child)
NUMAD=$(pidof numad | awk '{ print $1 }')
[ -n "$NUMAD" ] || NUMAD=$(cat /var/run/numad.pid)
np_capture numad.start cat /tmp/numad.out
np_result numad.comm pidfile=$(cat /var/run/numad.pid) pidof=$(pidof numad | tr ' ' ,) $(cat /proc/$NUMAD/comm) \
	$(awk '$1 ~ /^(VmRSS|VmHWM|VmSize|RssAnon|RssFile):$/ { print $1 $2 }' /proc/$NUMAD/status)
sleep 5
PLACE=0
np_result numad.base rss=$(awk '$1 == "VmRSS:" { print $2 }' /proc/$NUMAD/status) fds=$(ls /proc/$NUMAD/fd | wc -l) \
	cpu_ticks=$(ticks $NUMAD) forks=$(forks)
run_phase numad $NUMAD
np_result numad.after rss=$(awk '$1 == "VmRSS:" { print $2 }' /proc/$NUMAD/status) fds=$(ls /proc/$NUMAD/fd | wc -l) \
	cpu_ticks=$(ticks $NUMAD) forks=$(forks) alive=$(kill -0 $NUMAD 2>/dev/null && echo yes || echo no)
np_result numad.log_lines $(wc -l < /var/log/numad.log 2>/dev/null)
kill $NUMAD
"""



def series(res, key):
    rows = [res_kv(v) for v in res.all(key)]
    return [r for r in rows if isinstance(r.get("t"), int) and isinstance(r.get("ticks"), int)
            and isinstance(r.get("rss"), int)]


def res_kv(value):
    out = {}
    for tok in value.split():
        k, sep, v = tok.partition("=")
        if sep:
            try:
                out[k] = int(v)
            except ValueError:
                out[k] = v
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=int, default=1800, help="seconds per daemon (default 1800)")
    ap.add_argument("--sample", type=int, default=30, help="seconds between samples (default 30)")
    ap.add_argument("--cgroup", default="v1", choices=("v1", "v2"))
    ap.add_argument("--json", help="write the numbers here too")
    ap.add_argument("--no-numad", action="store_true", help="numaplaced only, no numad phase")
    ap.add_argument("--no-hotplug", action="store_true", help="no CPU offline/online cycles in the churn")
    ap.add_argument("--check-every", type=int, default=4, metavar="N",
                    help="check the placements 10 s after both changes of every Nth CPU cycle "
                         "(default 4; 0 = only at the end)")
    args = ap.parse_args()

    vm = npvm.VM("bench-soak-4", TOPO, cgroup=args.cgroup)
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    if not args.no_numad:
        vm.add_commands("numad")
    vm.add_file("etc/np.conf", test_soak.CONFIG)
    numad = 0 if args.no_numad else 1
    script = (f"DURATION={args.duration}\nSAMPLE={args.sample}\nSCANS=0\nNUMAD={numad}\n"
              f"HOTPLUG={0 if args.no_hotplug else 1}\nHP_PERIOD=60\nCHECKS=1\n"
              f"HP_CHECK_EVERY={args.check_every if args.check_every > 0 else 1 << 30}\n" + SCRIPT)
    res = vm.run(script, timeout=(1 + numad) * args.duration + 1200)
    if not res.completed:
        print(res.console[-6000:])
        print("bench-soak: the VM run did not complete")
        return 1
    hz = 100.0
    out = {}
    print(f"\nbench-soak: {args.duration} s per daemon, a sample every {args.sample} s, 4 nodes, cgroup {args.cgroup}\n")
    print(f"{'':34}{'Min':>9}  {'Mean':>9}  {'TrimMean':>9}  {'Stddev':>9}  {'Max':>9}   drift")
    for who in ("np",) if args.no_numad else ("np", "numad"):
        rows = series(res, f"{who}.s")
        name = "numaplaced" if who == "np" else "numad"
        if len(rows) < 2:
            print(f"{name}: too few samples")
            continue
        dur_min = (rows[-1]["t"] - rows[0]["t"]) / 60.0
        cpu_per_min = [(b["ticks"] - a["ticks"]) / hz / ((b["t"] - a["t"]) / 60.0)
                       for a, b in zip(rows, rows[1:]) if b["t"] > a["t"]]
        o = out[name] = {
            "samples": len(rows),
            "rss_kb": stats([r["rss"] for r in rows]),
            "fds": stats([r["fds"] for r in rows]),
            "cpu_s_per_min": stats(cpu_per_min),
            "rss_drift_kb": rows[-1]["rss"] - rows[0]["rss"],
            "fds_drift": rows[-1]["fds"] - rows[0]["fds"],
            "forks": rows[-1]["forks"] - rows[0]["forks"],
            "minutes": dur_min,
        }
        print(f"{name + ' RSS kB':34}{fmt(o['rss_kb'], 0)}   {o['rss_drift_kb']:+d}")
        print(f"{name + ' descriptors':34}{fmt(o['fds'], 0)}   {o['fds_drift']:+d}")
        print(f"{name + ' CPU s per minute':34}{fmt(o['cpu_s_per_min'], 2)}")
        if who == "np":
            scan_ms = [r["scan_us"] / 1000.0 for r in rows if "scan_us" in r]
            o["scan_ms"] = stats(scan_ms)
            o["objects"] = stats([r["objects"] for r in rows if "objects" in r])
            o["scans"] = rows[-1]["scans"] - rows[0]["scans"]
            print(f"{'numaplaced scan ms (sampled)':34}{fmt(o['scan_ms'], 2)}")
            print(f"{'numaplaced bus objects':34}{fmt(o['objects'], 0)}")
        print(f"{name + ' processes created':34}{o['forks']:>9} in {dur_min:.1f} min "
              f"({o['forks'] / dur_min:.0f} a minute)")
    print("(numaplaced scans every 0.5 s and its CPU time includes the migrate_pages() of every Place() -- the\n"
          " kernel copies in the caller's context; numad scans every 1 to 5 s and moves none of these short-lived\n"
          " processes: compare RSS and descriptor drift, not CPU)")
    b, a = res_kv(res.get("np.base") or ""), res_kv(res.get("np.after") or "")
    places = res_kv(res.get("np.places") or "")
    print("\nnumaplaced baseline (after the warm-up churn, everything gone) -> after the soak (everything gone):")
    for k in ("rss", "fds", "objects", "managed", "confined"):
        print(f"  {k:10} {b.get(k)!s:>10} -> {a.get(k)!s:>10}")
    moved = a.get("migrated", 0) - b.get("migrated", 0)
    pg = a.get("pgmigrate", 0) - b.get("pgmigrate", 0)
    print(f"  scans {a.get('scans', 0) - b.get('scans', 0)}, processes created {a.get('forks', 0) - b.get('forks', 0)}, "
          f"seen by the scans {a.get('seen', 0) - b.get('seen', 0)}, Place() ok {places.get('ok')} "
          f"failed {places.get('failed')}")
    print(f"  MigratedBytes +{moved}, pgmigrate_success +{pg} pages = {pg * 4096} bytes, "
          f"MigrationFailedPages +{a.get('failed', 0) - b.get('failed', 0)}")
    nb, na = res_kv(res.get("numad.base") or ""), res_kv(res.get("numad.after") or "")
    if not args.no_numad:
        print(f"numad ({res.get('numad.comm')}): RSS {nb.get('rss')} -> {na.get('rss')} kB, descriptors {nb.get('fds')} -> {na.get('fds')}, "
              f"alive at the end: {na.get('alive')}, log lines {res.get('numad.log_lines')}")
    out["numaplaced_baseline"] = {"before": b, "after": a, "places": places}
    out["numad_baseline"] = {"before": nb, "after": na}

    hp = [res_kv(v) for v in res.all("hotplug")]
    off = [h for h in hp if h.get("op") == "offline"]
    print(f"\nCPU offline/online cycles: {len(off)} (a CPU of 1..3 offline every 60 s, back 30 s later)"
          + ("" if not args.no_hotplug else ", none: --no-hotplug"))
    for h in hp:
        print(f"  t={h.get('t')} cycle {h.get('cycle')} cpu{h.get('cpu')} {h.get('op')} rc={h.get('rc')} "
              f"online {h.get('online')}")
    out["hotplug"] = hp
    wit = [res_kv(v) for v in res.all("witness.end")]
    for w in wit:
        print(f"  witness {w.get('pid')} at the end: alive {w.get('alive')}, state {w.get('state')}, "
              f"TargetNodes {w.get('targets')}, {res.get('witness.proc.%s' % w.get('pid'))}")
        if w.get("state") != "pinned":
            print("    Decision: " + " ".join(res.all(f"witness.decision.{w.get('pid')}")))
            for line in res.all(f"witness.log.{w.get('pid')}"):
                print("    log: " + line)
    pc = test_soak.placement_check(res)
    out["placement_check"] = pc
    print(f"placement checks: {pc['checks']} (two snapshots 1 s apart each), {pc['held']} held processes checked, "
          f"{len(pc['transient'])} inconsistent in one snapshot only; {pc['cg_tasks']} tasks in its cgroups, "
          f"{len(pc['cg_transient'])} untracked in one snapshot only")
    for why in pc["transient"] + pc["cg_transient"]:
        print(f"  transient: {why}")
    for why in pc["bad"] + pc["cg_bad"]:
        print(f"  INCONSISTENT: {why}")

    # the checks of issue 25, asserted
    slack = test_soak.RSS_SLACK_KB
    checks = [
        (res.get("np.alive") == "yes", "numaplaced is running at the end"),
        (a.get("rss", 1 << 30) - b.get("rss", 0) <= slack,
         f"RSS back to the baseline: {b.get('rss')} -> {a.get('rss')} kB (within {slack} kB)"),
        (a.get("fds") is not None and a.get("fds") == b.get("fds"),
         f"descriptors back to the baseline: {b.get('fds')} -> {a.get('fds')} (statm ones apart)"),
        (a.get("objects") is not None and a.get("objects") == b.get("objects"),
         f"bus objects back to the baseline: {b.get('objects')} -> {a.get('objects')}"),
        (a.get("managed") == 0, f"nothing held after the churn (ManagedProcesses {a.get('managed')})"),
        (a.get("confined") == 0, f"no task left in its cgroups after the churn ({a.get('confined')})"),
        (pc["checks"] > 0 and not pc["bad"],
         f"every held process consistent with /proc: {pc['checks']} checks, {pc['held']} processes, "
         f"{len(pc['bad'])} inconsistent in both snapshots"),
        (pc["checks"] > 0 and not pc["cg_bad"],
         f"nothing confined that it does not hold: {pc['cg_tasks']} tasks seen, "
         f"{len(pc['cg_bad'])} untracked in both snapshots"),
        (res.get("np.log_bad") == "0", f"nothing bad in its log ({res.get('np.log_bad')})"),
    ]
    if not args.no_hotplug:
        want = args.duration // 60
        checks.append((len(off) >= want - 1 and all(h.get("rc") == 0 for h in hp),
                       f"{len(off)} CPU cycles done (about {want} expected), every write succeeded"))
        checks.append((len(wit) == 2 and all(w.get("alive") == "yes" and w.get("state") == "pinned" for w in wit),
                       "both witnesses still pinned at the end"))
    print()
    failed = 0
    for ok, what in checks:
        print(f"{'PASS' if ok else 'FAIL'}: {what}")
        failed += not ok
    out["checks"] = [{"ok": ok, "what": what} for ok, what in checks]
    print(f"numaplaced log: {res.get('np.log_topology')} topology changes, placed by {res.get('np.placed_by')}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
