#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Migrations off the main loop (issue 7), with real pages moving.

4 nodes x 512 MB, cgroup v1 (real cpusets in the VM). A 64 MB process (16
MB bound on each node) is placed on node 1 with MaxRate=4M: 48 MB to move,
about 12 s. While Place() runs, a property read, Dump() and PlanMigration()
issued after it started all return before it does, Scans keeps growing, and
a second Place() of the same pid gets the MoveInProgress error; the mover's
thread runs on node 1's CPU (the process's new one) and the main thread
where it did; the placement's log line gives the move's CPU time. At the
SIGTERM the daemon exits, the process is back in its original cpuset, numaplaced/ is gone, the
Place() caller got a Cancelled error, and MigratedBytes in the daemon's
final log line equals the pages that left their nodes (pgmigrate_success x
4096).

Then a second long move (three pairs) of another 64 MB process is stopped
by SIGTERM after two pairs.

This machine has one NUMA node, so no page can move here and no move can
be long: that is why this runs in the VM rather than on the host's cpusets.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=512, cpus=1)
MB_PER_NODE = 16

CONFIG = """[Daemon]
Mode=advise
ScanIntervalSec=1
MaxScanIntervalSec=1
[Placement]
MinProcessMemory=32M
MinProcessCPU=0
[Migration]
MaxRate=4M
"""

SCRIPT = r"""
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
CG=/sys/fs/cgroup/cpuset
now() { awk '{ print $1 }' /proc/uptime; }
prop() { busctl get-property $M "$1" | awk '{ print $2 }'; }
status_field() { sed -n "s/^$2:[[:space:]]*//p" /proc/$1/status; }
cgroup_of() { sed -n 's/^[0-9]*:cpuset:\(.*\)$/\1/p' /proc/$1/cgroup | head -n 1; }

np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
pid=$(np_start_workload /tmp/w --per-node 0-3 --mb-per-node 16 --no-thp) || exit 1
np_result pid $pid
np_result cgroup0 $(cgroup_of $pid)
np_result before $(np_numa_kb $pid bind:)
m0=$(np_vmstat pgmigrate_success)

# --- 1: a long move; the bus answers meanwhile
(busctl call $M Place uau $pid 1 1 > /tmp/p1.out 2>&1; echo $? > /tmp/p1.rc; now > /tmp/p1.end) &
np_result p1.start $(now)
sleep 1
np_result d.scans0 $(prop Scans)
np_result d.scans0.t $(now)
# the worker runs the move on the CPU the process was confined to (node 1's),
# the daemon's main thread where it was
for t in /proc/$NP_DAEMON_PID/task/*; do
	if [ "$(cat $t/comm)" = np-mover ]; then
		np_result d.mover.cpus $(status_field ${t#/proc/} Cpus_allowed_list)
	elif [ "${t##*/}" = "$NP_DAEMON_PID" ]; then
		np_result d.main.cpus $(status_field ${t#/proc/} Cpus_allowed_list)
	fi
done
busctl call $M Dump > /tmp/dump 2>&1
np_result d.dump.rc $?
np_result d.dump.t $(now)
np_result d.dump.moves "$(grep -o 'Moves: pid [0-9]* moving for [0-9.]* s' /tmp/dump)"
np_capture d.plan busctl call $M PlanMigration auau 4 0 1 2 3 1 1
np_result d.plan.t $(now)
np_result d.mode "$(busctl get-property $M Mode)"
np_result d.mode.t $(now)
np_capture d.second busctl call $M Place uau $pid 1 2
np_result d.second.t $(now)
sleep 3
np_result d.scans1 $(prop Scans)
np_result d.scans1.t $(now)
np_result d.p1_running $([ -e /tmp/p1.end ] && echo no || echo yes)
np_wait_for 120 test -e /tmp/p1.end
np_result p1.end $(cat /tmp/p1.end)
np_result p1.rc $(cat /tmp/p1.rc)
np_result p1.out "$(cat /tmp/p1.out)"
np_result after1 $(np_numa_kb $pid bind:)
np_result cgroup1 $(cgroup_of $pid)

# --- 2: SIGTERM in the middle of a long move (three pairs of 16 MB, each
# followed by a 4 s pacing sleep: stopped after the second)
pid2=$(np_start_workload /tmp/w2 --per-node 0-3 --mb-per-node 16 --no-thp) || exit 1
np_result cgroup0.2 $(cgroup_of $pid2)
(busctl call $M Place uau $pid2 1 2 > /tmp/p2.out 2>&1; echo $? > /tmp/p2.rc) &
sleep 6
np_result mid2 $(np_numa_kb $pid2 bind:)
t0=$(now)
kill $NP_DAEMON_PID
np_wait_for 30 sh -c "! kill -0 $NP_DAEMON_PID 2>/dev/null"
np_result term.exited $?
np_result term.t0 $t0
np_result term.t1 $(now)
np_wait_for 30 test -e /tmp/p2.rc
np_result p2.rc $(cat /tmp/p2.rc)
np_result p2.out "$(cat /tmp/p2.out)"
np_result after2 $(np_numa_kb $pid2 bind:)
np_result cgroup2 $(cgroup_of $pid2)
np_result cgroup1.2 $(cgroup_of $pid)
np_result dir $([ -d $CG/numaplaced ] && echo present || echo gone)
np_result pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
while IFS= read -r l; do np_result log "$l"; done < /tmp/numaplaced.log
kill $pid $pid2
"""


def main():
    vm = npvm.VM("async-4", TOPO, cgroup="v1")
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", CONFIG)
    res = vm.run(SCRIPT, timeout=420)
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()

    def f(key):
        v = res.get(key)
        return float(v) if v is not None else None

    # 1: the bus answers while Place() runs
    end1 = f("p1.end")
    t.eq(res.get("p1.rc"), "0", "Place(pid, [1]) succeeds")
    for key in ("d.scans0.t", "d.dump.t", "d.plan.t", "d.mode.t", "d.second.t", "d.scans1.t"):
        got = f(key)
        t.check(got is not None and end1 is not None and got < end1,
                f"{key[2:-2]}: answered at {got} s, before Place() returned at {end1} s")
    t.eq(res.get("d.p1_running"), "yes", "Place() still running 4 s after it started")
    t.eq(res.get("d.dump.rc"), "0", "Dump() answers during the move")
    t.eq(res.get("d.mover.cpus"), "1", "the mover's thread runs on node 1's CPU, the process's new one")
    t.eq(res.get("d.main.cpus"), "0-3", "the daemon's main thread still runs anywhere")
    t.check(re.match(r"Moves: pid \d+ moving for", res.get("d.dump.moves") or ""),
            f"Dump() shows the move in flight ({res.get('d.dump.moves')!r})")
    t.check((res.get("d.plan") or "").startswith("a(uu) 3 "),
            f"PlanMigration(0-3 -> 1) gives 3 pairs during the move ({res.get('d.plan')!r})")
    t.eq(res.get("d.plan.rc"), "0", "PlanMigration() answers during the move")
    t.eq(res.get("d.mode"), 's "advise"', "a property read answers during the move")
    second = " ".join(res.all("d.second"))
    t.check("already running" in second and res.get("d.second.rc") != "0",
            f"a second Place() of the same pid is refused: {second!r}")
    s0, s1 = res.int("d.scans0"), res.int("d.scans1")
    t.check(s0 is not None and s1 is not None and s1 >= s0 + 2, f"scans go on during the move ({s0} -> {s1})")
    before, after1 = res.node_kb("before"), res.node_kb("after1")
    total = sum(before.values())
    t.near(after1.get(1, 0), total, 64, "after the first move everything is on node 1")
    t.eq(res.get("cgroup1"), "/numaplaced/nodes-1", "placed in numaplaced/nodes-1")
    placed = [line for line in res.all("log") if "Placed %s " % res.get("pid") in line]
    cpu = re.search(r"\(([0-9.]+) s of the daemon's CPU\)", placed[0]) if placed else None
    t.check(cpu is not None and float(cpu.group(1)) > 0,
            f"the placement's log line gives the move's CPU time ({placed[:1]})")
    dur = end1 - f("p1.start") if end1 else None
    print(f"  ..   first move: {total - before.get(1, 0)} kB at MaxRate=4M took {dur:.1f} s")

    # 2: SIGTERM during a long move
    mid2 = res.node_kb("mid2")
    t.check(MB_PER_NODE * 1024 < mid2.get(2, 0) < total, f"the second move was half-way at SIGTERM ({mid2})")
    t.eq(res.get("term.exited"), "0", "the daemon exits on SIGTERM during a move")
    stop = f("term.t1") - f("term.t0")
    print(f"  ..   SIGTERM to exit during a paced move: {stop:.2f} s (polled every 0.1 s)")
    p2 = res.get("p2.out") or ""
    t.check(res.get("p2.rc") != "0" and "cancelled" in p2, f"the second Place() got Cancelled: {p2!r}")
    t.eq(res.get("cgroup2"), res.get("cgroup0.2"), "the process is back in its original cpuset")
    t.eq(res.get("cgroup1.2"), res.get("cgroup0"), "the first one too (ReleaseOnStop=yes)")
    after2 = res.node_kb("after2")
    t.eq(after2, mid2, "what moved before the stop stays where it went (nothing is moved back)")
    t.eq(res.get("dir"), "gone", "numaplaced/ removed at stop")
    log = res.all("log")
    final = [line for line in log if "Stopped after" in line]
    t.check(len(final) == 1, f"one final log line ({final})")
    m = re.search(r"MigratedBytes=(\d+)", final[0]) if final else None
    pages = res.int("pgmigrate")
    t.check(m is not None and pages is not None and int(m.group(1)) == pages * 4096,
            f"MigratedBytes in the final log line ({m.group(1) if m else None}) == pgmigrate_success x 4096 "
            f"({pages * 4096 if pages is not None else None})")
    return t.finish()


if __name__ == "__main__":
    npvm.run_test("async-4", main)
