#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""vm suite: a short soak (issue 10). `test_soak.py v1|v2 SCANS` boots 4
nodes, runs numaplaced (ScanIntervalSec=0.5, significant from 16 MB) and for
SCANS scans keeps it busy:

  - hundreds of short-lived processes a minute (busybox sleeps) with a
    pid_max of 1024, so PIDs are reused over and over;
  - a significant np-workload (24 MB) every second, living 1.5 s, and a
    Place() of the newest one on a random node set (it often exits while
    held, or during the call);
  - free memory moving between nodes: a 64 MB process bound to a random node
    every 2 s;
  - Reload() every 3 s, Pause() and Resume() every 2 s;
  - Mode=enforce: the placement policy places the significant processes
    too (while not paused).

The same churn runs once before for warm-up; the baseline is taken after
it, when everything it started is gone. After the soak, when everything is
gone again: the daemon is running, its descriptors and the bus objects are
exactly the baseline's, its RSS is within RSS_SLACK_KB of it (allocator
noise, as in test_bus_robustness.py), MigratedBytes grew by what
/proc/vmstat's pgmigrate_success says moved, no task is left in a cgroup of
the daemon and nothing is held, the configuration is not in error and it is
not paused. Then SIGTERM removes its hierarchy."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=384, cpus=1)
RSS_SLACK_KB = 512

CONFIG = """[Daemon]
Mode=enforce
ScanIntervalSec=0.5
MaxScanIntervalSec=0.5
LogLevel=info
[Placement]
MinProcessMemory=16M
MinProcessCPU=0
"""

CHURN_LIB = r"""
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
CG=/sys/fs/cgroup
[ "$NPVM_CGROUP" = v1 ] && CG=/sys/fs/cgroup/cpuset
prop() { busctl get-property $M "$1" | awk '{ print $2 }'; }
dump_field() { busctl call $M Dump | sed 's/\\n/\n/g' | awk -v k="$1" 'index($0, k) { print $3; exit }'; }
rss() { awk '$1 == "VmRSS:" { print $2 }' /proc/$NP_DAEMON_PID/status; }
# descriptors other than the statm ones the cheap tier keeps (one per process
# it tracks: their number follows the processes alive, not a leak)
fds() { for f in /proc/$NP_DAEMON_PID/fd/*; do readlink $f; done | grep -vc '/statm$'; }
statm_fds() { for f in /proc/$NP_DAEMON_PID/fd/*; do readlink $f; done | grep -c '/statm$'; }
objects() { busctl tree --list org.numaplaced1 | wc -l; }
confined() { find $CG/numaplaced -name tasks -o -name cgroup.threads 2>/dev/null | xargs cat 2>/dev/null | wc -l; }
forks() { awk '$1 == "processes" { print $2 }' /proc/stat; }
place_random() {
	_p=$1
	case $((RANDOM % 5)) in
	0) set -- 1 0 ;; 1) set -- 1 3 ;; 2) set -- 2 1 2 ;; 3) set -- 2 0 3 ;; *) set -- 3 1 2 3 ;;
	esac
	busctl --timeout=60 call $M Place uau $_p "$@"
}
wait_scans() {
	_s=$(( $(prop Scans) + $1 ))
	np_wait_for 300 sh -c "[ \$(busctl get-property $M Scans | awk '{ print \$2 }') -ge $_s ]"
}

# the churn, until /tmp/stop exists
churn() {
	rm -f /tmp/stop /tmp/sig.pids
	CHURN=
	(while [ ! -e /tmp/stop ]; do
		sleep 0.3 & sleep 0.6 & sleep 0.1 &
		usleep 200000
	done) &
	CHURN="$CHURN $!"
	(while [ ! -e /tmp/stop ]; do
		np-workload --mb 24 --no-thp --duration 1.5 > /dev/null 2>&1 &
		echo $! >> /tmp/sig.pids
		sleep 1
	done) &
	CHURN="$CHURN $!"
	(while [ ! -e /tmp/stop ]; do
		p=$(tail -n 1 /tmp/sig.pids 2>/dev/null)
		if [ -n "$p" ] && [ "${PLACE:-1}" = 1 ]; then
			if place_random $p > /dev/null 2>&1; then echo ok >> /tmp/place.ok; else echo x >> /tmp/place.fail; fi
		fi
		sleep 1
	done) &
	CHURN="$CHURN $!"
	(while [ ! -e /tmp/stop ]; do
		np-workload --bind $((RANDOM % 4)) --mb 64 --no-thp --duration 1.5 > /dev/null 2>&1
		sleep 0.5
	done) &
	CHURN="$CHURN $!"
	[ "${PLACE:-1}" = 1 ] && (n=0; while [ ! -e /tmp/stop ]; do
		n=$((n + 1))
		[ $((n % 3)) = 0 ] && busctl call $M Reload > /dev/null
		if [ $((n % 2)) = 0 ]; then busctl call $M Pause > /dev/null; else busctl call $M Resume > /dev/null; fi
		sleep 1
	done; busctl call $M Resume > /dev/null) &
	CHURN="$CHURN $!"
}
end_churn() {
	touch /tmp/stop
	for _c in $CHURN; do wait $_c; done
	np_wait_for 60 sh -c '! pidof np-workload > /dev/null'
	wait_scans 6
}
figures() {
	np_result $1 rss=$(rss) fds=$(fds) statm=$(statm_fds) procs=$(ls -d /proc/[0-9]* | wc -l) \
		objects=$(objects) scans=$(prop Scans) \
		managed=$(busctl get-property $M ManagedProcesses | awk '{ print $2 }') confined=$(confined) \
		migrated=$(prop MigratedBytes) calls=$(prop MigrationCalls) failed=$(prop MigrationFailedPages) \
		pgmigrate=$(np_vmstat pgmigrate_success) pgfail=$(np_vmstat pgmigrate_fail) forks=$(forks) \
		seen=$(dump_field "Processes seen:") paused=$(busctl get-property $M Paused | awk '{ print $2 }') \
		lastpid=$(cat /proc/sys/kernel/ns_last_pid)
}

"""

SCRIPT = CHURN_LIB + r"""
echo 1024 > /proc/sys/kernel/pid_max
np_result pid_max $(cat /proc/sys/kernel/pid_max)
np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
wait_scans 4
# warm-up: the same churn for 20 scans
churn
wait_scans 20
end_churn
figures base
: > /tmp/place.ok; : > /tmp/place.fail
churn
wait_scans $SCANS
end_churn
figures after
np_result places ok=$(wc -l < /tmp/place.ok) failed=$(wc -l < /tmp/place.fail)
np_capture config_error busctl get-property $M ConfigError
np_result alive $(kill -0 $NP_DAEMON_PID 2>/dev/null && echo yes || echo no)
np_result log_bad $(grep -c -i -e critical -e assertion -e "event loop failed" /tmp/numaplaced.log)
np_result placed_by manual=$(grep -c "Placed .*, manual)" /tmp/numaplaced.log) \
	policy=$(grep -c "Placed .*, policy)" /tmp/numaplaced.log) rebalance=$(grep -c "Placed .*, rebalance)" /tmp/numaplaced.log)
np_stop_numaplaced
np_result dir_end $([ -e $CG/numaplaced ] && echo present || echo gone)
"""


def main(cg, scans):
    name = f"soak-4-{cg}"
    vm = npvm.VM(name, TOPO, cgroup=cg)
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", CONFIG)
    res = vm.run(f"SCANS={scans}\n" + SCRIPT, timeout=300 + 3 * scans)
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()
    b, a = res.kv("base"), res.kv("after")
    places = res.kv("places")
    print(f"  ..   [{cg}] baseline {b}")
    print(f"  ..   [{cg}] after    {a}")
    t.eq(res.get("pid_max"), "1024", f"[{cg}] pid_max is 1024")
    t.eq(res.get("alive"), "yes", f"[{cg}] the daemon is running")
    t.check(a.get("scans", 0) - b.get("scans", 0) >= scans, f"[{cg}] {scans} scans made during the soak")
    forks = a.get("forks", 0) - b.get("forks", 0)
    seen = a.get("seen", 0) - b.get("seen", 0)
    t.check(forks > 1024, f"[{cg}] {forks} processes created: more than pid_max, so PIDs were reused")
    t.check(seen > 0, f"[{cg}] the scans saw {seen} new processes")
    t.eq(a.get("fds"), b.get("fds"), f"[{cg}] open descriptors back to the baseline (statm ones apart)")
    t.check(a.get("statm", 1 << 30) <= a.get("procs", 0),
            f"[{cg}] kept statm descriptors ({a.get('statm')}) no more than processes alive ({a.get('procs')})")
    t.check(a.get("rss", 1 << 30) - b.get("rss", 0) <= RSS_SLACK_KB,
            f"[{cg}] RSS {b.get('rss')} -> {a.get('rss')} kB (within {RSS_SLACK_KB} kB of allocator noise)")
    t.eq(a.get("objects"), b.get("objects"), f"[{cg}] bus objects back to the baseline")
    t.eq(a.get("managed"), 0, f"[{cg}] nothing held")
    t.eq(a.get("confined"), 0, f"[{cg}] no task left in a cgroup of the daemon")
    t.eq(a.get("paused"), "false", f"[{cg}] not paused")
    moved = a.get("migrated", 0) - b.get("migrated", 0)
    pg = a.get("pgmigrate", 0) - b.get("pgmigrate", 0)
    t.check(moved > 0 and abs(moved - pg * 4096) <= 0.01 * pg * 4096 + 64 * 4096,
            f"[{cg}] MigratedBytes grew by {moved}, /proc/vmstat pgmigrate_success by {pg} pages "
            f"({pg * 4096} bytes)")
    # pages migrate_pages() could not move (a process exiting during its
    # move leaves some): informational, the kernel counts them differently
    print(f"  ..   [{cg}] MigrationFailedPages +{a.get('failed', 0) - b.get('failed', 0)}, "
          f"pgmigrate_fail +{a.get('pgfail', 0) - b.get('pgfail', 0)}")
    t.check(places.get("ok", 0) > 0, f"[{cg}] Place() succeeded {places.get('ok')} times "
            f"({places.get('failed')} ended with an error: the process was gone)")
    t.eq(res.get("config_error"), 's ""', f"[{cg}] no configuration error after the Reload()s")
    t.eq(res.get("log_bad"), "0", f"[{cg}] nothing bad in the log")
    by = res.kv("placed_by")
    t.check(by.get("policy", 0) > 0, f"[{cg}] the policy placed processes too ({by})")
    t.eq(res.get("numaplaced.stop"), "exited", f"[{cg}] SIGTERM stops it")
    t.eq(res.get("dir_end"), "gone", f"[{cg}] its hierarchy is removed at the stop")
    print(f"  ..   [{cg}] soak: {a.get('scans', 0) - b.get('scans', 0)} scans, {forks} processes created, "
          f"{seen} seen by the scans, {places.get('ok')} Place() calls succeeded ({places.get('failed')} refused), "
          f"placements by reason over the whole boot {by}, "
          f"{moved} bytes migrated; RSS {b.get('rss')} -> {a.get('rss')} kB, fds {b.get('fds')} -> "
          f"{a.get('fds')}, bus objects {b.get('objects')} -> {a.get('objects')}")
    return t.finish()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "v1"
    scans = int(sys.argv[2]) if len(sys.argv) > 2 else 120
    npvm.run_test(f"soak-4-{mode}", lambda: main(mode, scans))
