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
  - a significant np-workload (24 MB) interleaved over every node every
    2 s, living 3 s, which Place() leaves to the policy;
  - Mode=enforce: the placement policy places the significant processes
    too (while not paused).

The same churn runs once before for warm-up; the baseline is taken after
it, when everything it started is gone. After the soak, when everything is
gone again: the daemon is running, its descriptors and the bus objects are
exactly the baseline's, its RSS is within RSS_SLACK_KB of it (allocator
noise, as in test_bus_robustness.py; where the RSS is, is printed) and its
own memory gets no transparent huge pages (THP_enabled 0), MigratedBytes grew by what
/proc/vmstat's pgmigrate_success says moved, no task is left in a cgroup of
the daemon and nothing is held, the configuration is not in error and it is
not paused. Then SIGTERM removes its hierarchy.

`test_soak.py v1|v2 SCANS hotplug` (not in the suite) adds CPU offline/online
cycles to the churn (CPU 1, 2, 3 in turn offline every 30 s, back 15 s
later), checks the placements against /proc 10 s after each change and at
the end (placement_check) and asserts those checks too."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=384, cpus=1)
# The daemon's RSS once everything is gone is steady (five readings a
# second apart were equal), but where it settles differs from boot to boot:
# after the warm-up 5692 to 6192 kB in five runs, after the soak 5996 to
# 6220 kB, and 250 scans of churn grew it by 32 kB. So the baseline can be
# below the working size the soak reaches (the split rss_parts prints puts
# most of the spread in the library pages touched: files 4796 to 5012 kB
# at the baselines of 11 runs, heap and anonymous within 30 kB);
# 512 kB failed once on such a baseline (+528).
# A jump of 1.3 MB, in the warm-up or in the soak (in the last 3 full runs
# of the suite, 3 of 14 runs by hand), was libcgroup's static tables (2.4 MB
# of .bss, about 200 pages in use) made resident by khugepaged collapsing
# their one aligned 2 MB range into a huge page (AnonHugePages 2048 kB).
# The daemon opts out of transparent huge pages (PR_SET_THP_DISABLE),
# which THP_enabled in its status shows; rss_parts prints where the RSS is.
# A leak of 10 kB a scan still fails here; longer runs: tests/bench/bench-soak.py.
RSS_SLACK_KB = 768

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
# where its RSS is (kB): the brk heap, other anonymous mappings (thread
# arenas, large allocations, stacks of threads), the main stack, files
rss_parts() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { name = $6; maps++ }
	     $1 == "Rss:" { if (name == "[heap]") h += $2; else if (name == "") a += $2; else if (name == "[stack]") s += $2; else f += $2 }
	     $1 == "AnonHugePages:" { thp += $2 }
	     END { printf "heap=%d anon=%d stack=%d files=%d maps=%d thp=%d", h, a, s, f, maps, thp }' /proc/$NP_DAEMON_PID/smaps
}
# the anonymous mappings with 64 kB or more resident: START:SIZE:RSS (kB)
rss_anon() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { name = $6; split($1, r, "-"); start = r[1] }
	     $1 == "Size:" { size = $2 }
	     $1 == "Rss:" && name == "" && $2 >= 64 { printf "%s:%d:%d ", start, size, $2 }' /proc/$NP_DAEMON_PID/smaps
}
# rss_trace: every second while /tmp/stop does not exist, a `rss.trace`
# result when the RSS changed (the scan count and where it is)
rss_trace() {
	_last=
	while [ ! -e /tmp/stop ]; do
		_r=$(rss)
		[ "$_r" != "$_last" ] && np_result rss.trace scans=$(prop Scans) rss=$_r $(rss_parts) $(rss_anon)
		_last=$_r
		sleep 1
	done
}
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

uptime_s() { awk '{ print int($1) }' /proc/uptime; }
uptime_f() { awk '{ print $1 }' /proc/uptime; }
# hp_sleep_until T: sleep until uptime T; returns 1 early once /tmp/stop exists
hp_sleep_until() {
	while [ $(uptime_s) -lt $1 ]; do
		[ -e /tmp/stop ] && return 1
		sleep 1
	done
}
hp_set() {        # hp_set CPU 0|1 CYCLE OP
	echo $2 > /sys/devices/system/cpu/cpu$1/online
	_rc=$?
	np_result hotplug t=$(uptime_f) cycle=$3 cpu=$1 op=$4 rc=$_rc online=$(cat /sys/devices/system/cpu/online)
}
# CPU offline/online cycles (HOTPLUG=1): every HP_PERIOD s (default 60) one
# CPU other than 0 goes offline, 1, 2, 3 in turn, and comes back HP_PERIOD/2
# s later; with CHECK=1 every HP_CHECK_EVERY-th cycle (default 1) the
# placements are checked 10 s after each change. At /tmp/stop every CPU is
# brought back.
hotplug_loop() {
	_hp=${HP_PERIOD:-60}
	_t0=$(uptime_s)
	_n=0
	while [ ! -e /tmp/stop ]; do
		_n=$((_n + 1))
		_cpu=$(( (_n - 1) % 3 + 1 ))
		_off=$((_t0 + _n * _hp))
		hp_sleep_until $_off || break
		hp_set $_cpu 0 $_n offline
		_chk=0
		[ "${CHECK:-0}" = 1 ] && [ $((_n % ${HP_CHECK_EVERY:-1})) = 0 ] && _chk=1
		[ $_chk = 1 ] && hp_sleep_until $((_off + 10)) && consistency hp$_n.off
		hp_sleep_until $((_off + _hp / 2))
		hp_set $_cpu 1 $_n online
		[ $_chk = 1 ] && hp_sleep_until $((_off + _hp / 2 + 10)) && consistency hp$_n.on
	done
	for _c in 1 2 3; do
		[ "$(cat /sys/devices/system/cpu/cpu$_c/online)" = 1 ] || hp_set $_c 1 $_n online-at-stop
	done
}
# A consistency check (checked on the host, test_soak.placement_check): two
# snapshots 1 s apart of every process held at the first one: its start
# time, state, TargetNodes and every thread's Cpus_allowed_list and
# Mems_allowed_list, the online CPUs and nodes' CPUs, the PIDs held before
# and after; and every task in the daemon's cgroups with its process.
consistency() {   # consistency KEY
	_pids=$(busctl get-property $M ManagedProcesses | cut -d' ' -f3-)
	snap $1.a "$_pids"
	sleep 1
	snap $1.b "$_pids"
}
snap() {          # snap KEY PIDS
	_m0=$(busctl get-property $M ManagedProcesses | cut -d' ' -f3- | tr ' ' ,)
	_nodes=$(for _d in /sys/devices/system/node/node[0-9]*; do printf '%s:%s;' ${_d##*/node} "$(cat $_d/cpulist)"; done)
	np_result chk.on key=$1 t=$(uptime_f) online=$(cat /sys/devices/system/cpu/online) nodes=$_nodes
	for _p in $2; do
		_s=$(awk '{ print $22 }' /proc/$_p/stat 2>/dev/null)
		_th=$(for _f in /proc/$_p/task/*/status; do awk '$1 == "Cpus_allowed_list:" { c = $2 } $1 == "Mems_allowed_list:" { m = $2 } END { if (c != "") printf "%s/%s;", c, m }' $_f 2>/dev/null; done)
		_tg=$(busctl get-property org.numaplaced1 /org/numaplaced1/process/$_p org.numaplaced1.Process TargetNodes 2>/dev/null | cut -d' ' -f3- | tr ' ' ,)
		_st=$(busctl get-property org.numaplaced1 /org/numaplaced1/process/$_p org.numaplaced1.Process State 2>/dev/null | cut -d' ' -f2 | tr -d '"')
		np_result chk.held key=$1 pid=$_p start=${_s:-none} start2=$(awk '{ print $22 }' /proc/$_p/stat 2>/dev/null || echo none) \
			state=${_st:-none} targets=${_tg:-none} threads=${_th:-none}
	done
	for _f in $(find $CG/numaplaced -name tasks -o -name cgroup.threads 2>/dev/null); do
		for _t in $(cat $_f 2>/dev/null); do
			_g=$(awk '$1 == "Tgid:" { print $2 }' /proc/$_t/status 2>/dev/null)
			np_result chk.cg key=$1 tid=$_t tgid=${_g:-none} start=$(awk '{ print $22 }' /proc/${_g:-0}/stat 2>/dev/null || echo none) \
				dir=${_f%/*}
		done
	done
	np_result chk.managed key=$1 before=$_m0 after=$(busctl get-property $M ManagedProcesses | cut -d' ' -f3- | tr ' ' ,)
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
	# for the policy: a significant process spread over every node, which
	# Place() leaves alone (most of the ones above are local where they
	# run, and the policy leaves those; it placed 0 to 8 of them a soak)
	(while [ ! -e /tmp/stop ]; do
		np-workload --interleave 0-3 --mb 24 --no-thp --duration 3 > /dev/null 2>&1 &
		sleep 2
	done) &
	CHURN="$CHURN $!"
	(while [ ! -e /tmp/stop ]; do
		np-workload --bind $((RANDOM % 4)) --mb 64 --no-thp --duration 1.5 > /dev/null 2>&1
		sleep 0.5
	done) &
	CHURN="$CHURN $!"
	if [ "${HOTPLUG:-0}" = 1 ]; then hotplug_loop & CHURN="$CHURN $!"; fi
	rss_trace &
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
	np_result $1.rss $(rss_parts) $(rss_anon)
	np_result $1 rss=$(rss) fds=$(fds) statm=$(statm_fds) procs=$(ls -d /proc/[0-9]* | wc -l) \
		objects=$(objects) scans=$(prop Scans) \
		managed=$(busctl get-property $M ManagedProcesses | awk '{ print $2 }') confined=$(confined) \
		migrated=$(prop MigratedBytes) calls=$(prop MigrationCalls) failed=$(prop MigrationFailedPages) \
		pgmigrate=$(np_vmstat pgmigrate_success) pgfail=$(np_vmstat pgmigrate_fail) forks=$(forks) \
		midmove=$(grep -c 'ended during its move' /tmp/numaplaced.log) \
		seen=$(dump_field "Processes seen:") paused=$(busctl get-property $M Paused | awk '{ print $2 }') \
		lastpid=$(cat /proc/sys/kernel/ns_last_pid)
}

"""

SCRIPT = CHURN_LIB + r"""
np_result thp $(cat /sys/kernel/mm/transparent_hugepage/enabled)
echo 1024 > /proc/sys/kernel/pid_max
np_result pid_max $(cat /proc/sys/kernel/pid_max)
np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
np_result thp_enabled $(awk '$1 == "THP_enabled:" { print $2 }' /proc/$NP_DAEMON_PID/status)
wait_scans 4
# warm-up: the same churn for 20 scans
churn
wait_scans 20
end_churn
figures base
: > /tmp/place.ok; : > /tmp/place.fail
churn
wait_scans $SCANS
[ "${HOTPLUG:-0}" = 1 ] && consistency end
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


def _kv(value):
    out = {}
    for tok in value.split():
        k, sep, v = tok.partition("=")
        if sep:
            out[k] = v
    return out


def placement_check(res):
    """The consistency snapshots of `consistency` (CHURN_LIB), checked.

    A held process is consistent when every thread's Cpus_allowed_list is
    within its TargetNodes' online CPUs (every online CPU when they have
    none) and its Mems_allowed_list is TargetNodes. A task in the daemon's
    cgroups is consistent when its process is one the daemon holds. A
    snapshot races with the scans (a process placed, released or exiting
    while it is read), so each check takes two snapshots 1 s apart: a
    process is a failure when it is inconsistent in both, the same process
    (start time), held in both with the same TargetNodes; inconsistent in
    one only, it is counted as transient.

    Returns a dict: checks, held (records checked), bad (list of strings),
    transient (list), cg_tasks, cg_bad, cg_transient."""
    online, held, cg, managed = {}, {}, {}, {}
    for v in res.all("chk.on"):
        d = _kv(v)
        nodes = {}
        for ent in d.get("nodes", "").split(";"):
            if ":" in ent:
                n, _, c = ent.partition(":")
                nodes[int(n)] = npvm.id_set(c)
        online[d["key"]] = (d.get("t"), npvm.id_set(d.get("online")), nodes)
    for v in res.all("chk.managed"):
        d = _kv(v)
        managed[d["key"]] = {int(x) for x in (d.get("before", "") + "," + d.get("after", "")).split(",") if x.isdigit()}
    for v in res.all("chk.held"):
        d = _kv(v)
        held.setdefault(d["key"], []).append(d)
    for v in res.all("chk.cg"):
        d = _kv(v)
        cg.setdefault(d["key"], []).append(d)

    def verdict(key, d):
        """None when not checkable, else (ok, why, identity)."""
        if d.get("start") in (None, "none") or d.get("start") != d.get("start2"):
            return None
        if d.get("state") not in ("pinned", "placed") or d.get("targets") in (None, "none", ""):
            return None
        if int(d["pid"]) not in managed.get(key, set()):
            return None
        t, on, nodes = online[key]
        targets = npvm.id_set(d["targets"])
        want = set()
        for n in targets:
            want |= nodes.get(n, set())
        want &= on
        if not want:
            want = set(on)
        why = []
        threads = [x for x in d.get("threads", "").split(";") if "/" in x]
        if not threads:
            return None
        for th in threads:
            c, _, m = th.partition("/")
            cs, ms = npvm.id_set(c), npvm.id_set(m)
            if not cs or not cs <= want:
                why.append(f"Cpus_allowed_list {c} not within {sorted(want)}")
            if ms != targets:
                why.append(f"Mems_allowed_list {m} != TargetNodes {d['targets']}")
        ident = (d["pid"], d["start"], d["targets"])
        return (not why, f"{key} t={t} pid {d['pid']} ({d['state']}, TargetNodes {d['targets']}, "
                f"online {sorted(on)}): " + "; ".join(sorted(set(why))), ident)

    out = {"checks": 0, "held": 0, "bad": [], "transient": [], "cg_tasks": 0, "cg_bad": [], "cg_transient": []}
    keys = sorted({k[:-2] for k in online if k.endswith(".a")})
    for base in keys:
        ka, kb = base + ".a", base + ".b"
        if kb not in online:
            continue
        out["checks"] += 1
        vb = {}
        for d in held.get(kb, []):
            r = verdict(kb, d)
            if r:
                vb[r[2]] = r
        for d in held.get(ka, []):
            r = verdict(ka, d)
            if not r:
                continue
            out["held"] += 1
            if r[0]:
                continue
            rb = vb.get(r[2])
            if rb and not rb[0]:
                out["bad"].append(r[1] + " | 1 s later: " + rb[1])
            else:
                out["transient"].append(r[1])
        def untracked(key):
            bad = {}
            for d in cg.get(key, []):
                if d.get("tgid") in (None, "none") or d.get("start") in (None, "none"):
                    continue
                if int(d["tgid"]) not in managed.get(key, set()):
                    bad[(d["tgid"], d["start"])] = f"{key} task {d['tid']} of {d['tgid']} in {d['dir']}"
            return bad
        out["cg_tasks"] += len(cg.get(ka, []))
        ua, ub = untracked(ka), untracked(kb)
        for ident, why in ua.items():
            (out["cg_bad"] if ident in ub else out["cg_transient"]).append(why)
        out["cg_transient"] += [why for ident, why in ub.items() if ident not in ua]
    return out


def main(cg, scans, hotplug=False):
    name = f"soak-4-{cg}" + ("-hotplug" if hotplug else "")
    vm = npvm.VM(name, TOPO, cgroup=cg)
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", CONFIG)
    hp = "HOTPLUG=1\nCHECK=1\nHP_PERIOD=30\n" if hotplug else ""
    res = vm.run(f"SCANS={scans}\n{hp}" + SCRIPT, timeout=300 + 3 * scans)
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
    t.eq(res.get("thp_enabled"), "0", f"[{cg}] no transparent huge pages for the daemon's own memory "
         f"(THP_enabled in its status; the kernel's setting: {res.get('thp')})")
    print(f"  ..   [{cg}] RSS by mapping (kB): baseline {res.get('base.rss')}, after {res.get('after.rss')}; "
          f"transparent huge pages {res.get('thp')}")
    for v in res.all("rss.trace"):
        print(f"  ..   [{cg}] RSS during the churn: {v}")
    t.eq(a.get("objects"), b.get("objects"), f"[{cg}] bus objects back to the baseline")
    t.eq(a.get("managed"), 0, f"[{cg}] nothing held")
    t.eq(a.get("confined"), 0, f"[{cg}] no task left in a cgroup of the daemon")
    t.eq(a.get("paused"), "false", f"[{cg}] not paused")
    moved = a.get("migrated", 0) - b.get("migrated", 0)
    pg = a.get("pgmigrate", 0) - b.get("pgmigrate", 0)
    # a process that ends during its move has no numa_maps to read after
    # it: what its plan's sources held is counted, the pages it shared
    # (libraries) too, about 0.5 MB each here (19 such ends and 9.5 MB in
    # one run on a loaded host, where moves last longer and more processes
    # end during them): 2 MiB each allowed on top
    mid = a.get("midmove", 0) - b.get("midmove", 0)
    t.check(moved > 0 and abs(moved - pg * 4096) <= 0.01 * pg * 4096 + 64 * 4096 + mid * (2 << 20),
            f"[{cg}] MigratedBytes grew by {moved}, /proc/vmstat pgmigrate_success by {pg} pages "
            f"({pg * 4096} bytes; {mid} processes ended during their move)")
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
    if hotplug:
        cycles = [v for v in res.all("hotplug") if "op=offline" in v]
        t.check(len(cycles) > 0 and all("rc=0" in v for v in res.all("hotplug")),
                f"[{cg}] {len(cycles)} CPU offline/online cycles, every write succeeded")
        pc = placement_check(res)
        for why in pc["bad"] + pc["cg_bad"]:
            print(f"  ..   [{cg}] INCONSISTENT: {why}")
        t.check(pc["checks"] > 0 and not pc["bad"],
                f"[{cg}] every held process consistent with /proc ({pc['checks']} checks, {pc['held']} processes, "
                f"{len(pc['transient'])} inconsistent in one snapshot only)")
        t.check(pc["checks"] > 0 and not pc["cg_bad"],
                f"[{cg}] every task in its cgroups a process it holds ({pc['cg_tasks']} tasks, "
                f"{len(pc['cg_transient'])} untracked in one snapshot only)")
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
    hotplug = len(sys.argv) > 3 and sys.argv[3] == "hotplug"
    npvm.run_test(f"soak-4-{mode}" + ("-hotplug" if hotplug else ""), lambda: main(mode, scans, hotplug))
