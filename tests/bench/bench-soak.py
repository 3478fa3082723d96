#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench-soak: the long soak (issue 10), numaplaced and then numad under the
same churn in the 4-node QEMU VM of tests/vm, one boot.

The churn is the vm suite's short soak (tests/vm/test_soak.py): hundreds of
short-lived processes a minute with pid_max 1024 (PIDs reused all the time),
a significant 24 MB np-workload every second living 1.5 s, a 64 MB process
bound to a random node every 2 s (free memory moving between nodes); with
numaplaced also a Place() of the newest significant process every second,
Reload() every 3 s and Pause()/Resume() every 2 s.

1. numaplaced (ScanIntervalSec=0.5, significant from 16 MB, Mode=advise)
   for --duration seconds; every --sample seconds its RSS, descriptors,
   CPU time, Scans and the bus objects are recorded. Before the churn (after
   a 20-scan warm-up churn, once everything is gone) and after it (once
   everything is gone again) the baseline figures: RSS, descriptors, bus
   objects, ManagedProcesses, tasks left in its cgroups, MigratedBytes
   against /proc/vmstat's pgmigrate_success.
2. numad (Debian 20150602, `numad -i 1:5 -l 6 -S 1`, its log in /var/log)
   for the same time under the same churn (without the bus calls): RSS,
   descriptors and CPU time sampled the same way.

Printed: mmtests-style Min, Mean, TrimMean, Stddev, Max of each sampled
series, the drift (last sample minus first), CPU per minute, and the
baseline before and after, numad in the next column.

    meson test -C BUILD --benchmark soak -v           # one hour
    NP_BUILD_ROOT=BUILD python3 tests/bench/bench-soak.py --duration 1800 --sample 30
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
run_phase() {     # run_phase KEY PID [bus]
	_end=$(( $(awk '{ print int($1) }' /proc/uptime) + DURATION ))
	churn
	while [ $(awk '{ print int($1) }' /proc/uptime) -lt $_end ]; do
		sample $1.s $2 $3
		sleep $SAMPLE
	done
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
run_phase np $NP_DAEMON_PID bus
wait_scans 6
figures np.after
np_result np.places ok=$(wc -l < /tmp/place.ok) failed=$(wc -l < /tmp/place.fail)
np_stop_numaplaced

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
    args = ap.parse_args()

    vm = npvm.VM("bench-soak-4", TOPO, cgroup=args.cgroup)
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_commands("numad")
    vm.add_file("etc/np.conf", test_soak.CONFIG)
    script = f"DURATION={args.duration}\nSAMPLE={args.sample}\nSCANS=0\n" + SCRIPT
    res = vm.run(script, timeout=2 * args.duration + 1200)
    if not res.completed:
        print(res.console[-6000:])
        print("bench-soak: the VM run did not complete")
        return 1
    hz = 100.0
    out = {}
    print(f"\nbench-soak: {args.duration} s per daemon, a sample every {args.sample} s, 4 nodes, cgroup {args.cgroup}\n")
    print(f"{'':34}{'Min':>9}  {'Mean':>9}  {'TrimMean':>9}  {'Stddev':>9}  {'Max':>9}   drift")
    for who in ("np", "numad"):
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
    print(f"numad ({res.get('numad.comm')}): RSS {nb.get('rss')} -> {na.get('rss')} kB, descriptors {nb.get('fds')} -> {na.get('fds')}, "
          f"alive at the end: {na.get('alive')}, log lines {res.get('numad.log_lines')}")
    out["numaplaced_baseline"] = {"before": b, "after": a, "places": places}
    out["numad_baseline"] = {"before": nb, "after": na}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
