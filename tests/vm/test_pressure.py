#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Moves that the machine cuts short (issue 25), in a 4-node VM (4 x 512 MB,
one CPU per node, cgroup v1), MaxRate=16M so a move takes seconds.

  node-full   a busy 300 MB process, allocated interleaved, is placed by the
              policy; while its move runs, another process fills the target
              node. The move ends with the pages it could not move counted
              (MigrationFailedPages is what numa_maps shows left outside the
              target: its private pages there, less at most 1% that
              migrate_pages(2) could not isolate and so did not count, and
              at most the pages it shares with other processes), the
              Decision says so, and
              over the next 60 s the daemon does not try again and again:
              at most one more move of it, and its bus answers throughout.
  oom         a 300 MB process in a memory cgroup (the v1 memory hierarchy
              beside the cpuset one) is placed by Place(); during the move a
              second process in the same cgroup allocates past the limit and
              the OOM killer ends the first. The move ends, the process's
              record and the daemon's cpuset are gone, the counters add up,
              and no error-level line is logged.
  queued-full two busy 200 MB processes, allocated interleaved, are placed
              by the policy in one scan; while the first one's paced move
              runs, another process fills the second one's target node.
              When the second move's turn comes its pages no longer fit
              there: it does not start ("Not moving ... now" in the log),
              the process is not confined to that node, the kernel's OOM
              killer ends no one, and the policy places it once there is
              room (on that node once the filler is gone, or elsewhere).

node-full runs on cgroup v1 and v2 (node-full-v2), queued-full on v1. oom needs the v1 memory
hierarchy: on cgroup v2 a process the cpuset backend confines leaves its
memory cgroup for the daemon's, so a limit on its own cgroup no longer
applies to it.

Run one: python3 tests/vm/test_pressure.py node-full
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=512, cpus=1)

CONF = """[Daemon]
Mode=enforce
[Placement]
MinProcessCPU=0.2
MinProcessMemory=100M
[Migration]
MaxRate=16M
"""

COMMON = r"""
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
P=org.numaplaced1.Process
np_result cgroup $NPVM_CGROUP
mprop() { busctl get-property $M "$1" 2>/dev/null | cut -d' ' -f2-; }
pprop() { busctl get-property org.numaplaced1 /org/numaplaced1/process/$1 $P "$2" 2>/dev/null | cut -d' ' -f2- | tr -d '"'; }
logged() { grep -q "$1" /tmp/numaplaced.log; }
count() { grep -c "$1" /tmp/numaplaced.log; }
np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
m0=$(np_vmstat pgmigrate_success)
"""

NODE_FULL = r"""
w=$(np_start_workload /tmp/w --mb 300 --interleave 0-3 --reset-policy --no-thp --sweep --duty 30 --no-pin) || exit 1
np_result pid.w $w
np_wait_for 120 logged "Placing $w " || { np_result placing.timeout 1; exit 0; }
t=$(grep "Placing $w " /tmp/numaplaced.log | head -n 1 | sed -n 's/.*: place on \([0-9]*\) .*/\1/p')
np_result target $t
np_result free.before $(awk '/MemFree/ { print $4 }' /sys/devices/system/node/node$t/meminfo)
# fill the target while the paced move runs: as much as is free there now,
# preferred there (what does not fit goes elsewhere, no OOM), touched at
# full speed, faster than the move
fill=$(( $(awk '/MemFree/ { print $4 }' /sys/devices/system/node/node$t/meminfo) / 1024 ))
f=$(np_start_workload /tmp/f --mb $fill --preferred $t --no-thp) || np_result filler.failed 1
np_result f.kb $(np_numa_kb $f)
np_result pid.f $f
np_result fill.mb $fill
np_wait_for 120 logged "Placed $w " || np_result placed.timeout 1
np_result failed.pages $(mprop MigrationFailedPages)
np_result w.kb $(np_numa_kb $w)
np_result w.anon.kb $(np_numa_kb $w '^[0-9a-f]+ [^ ]+ (heap |stack )?anon=')
# the Decision of the next scan (until then it says "moving to", or what
# the scan that decided the move said)
i=0
while ! pprop $w Decision | grep -q 'its last move' && [ $i -lt 30 ]; do sleep 1; i=$((i + 1)); done
np_result w.decision.after "$(pprop $w Decision)"
np_result w.state.after "$(pprop $w State) $(pprop $w TargetNodes)"
# the next 60 s: the daemon answers, and does not keep trying
# (the back-off after a move that failed on pages is 60 s here: a retry
# every MinSecondsBetweenMoves=30 would make two)
placing0=$(count "Placing $w ")
calls0=$(mprop MigrationCalls)
answered=0
i=0
while [ $i -lt 12 ]; do
	sleep 5
	busctl get-property $M Scans > /dev/null 2>&1 && answered=$((answered + 1))
	i=$((i + 1))
done
np_result answered $answered
np_result placing.more $(( $(count "Placing $w ") - placing0 ))
np_result calls.more $(( $(mprop MigrationCalls) - calls0 ))
np_result w.decision.end "$(pprop $w Decision)"
np_result w.state.end "$(pprop $w State) $(pprop $w TargetNodes)"
np_result pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
np_result migrated $(mprop MigratedBytes)
np_stop_numaplaced
kill $w $f 2>/dev/null
true
"""


def check_node_full(t, res):
    t.check(res.get("placing.timeout") is None, "the policy decided to place the process")
    t.check(res.get("filler.failed") is None, "the filler got its memory")
    t.check(res.get("placed.timeout") is None, "the move ended")
    tgt = res.int("target")
    failed = res.int("failed.pages") or 0
    kb, anon = res.node_kb("w.kb"), res.node_kb("w.anon.kb")
    outside = sum(v for n, v in kb.items() if n != tgt) // 4
    private = sum(v for n, v in anon.items() if n != tgt) // 4
    t.check(failed > 0, f"the kernel could not move some pages ({failed} failed)")
    # what numa_maps shows left outside the target: all of its private
    # pages there, and at most the pages it shares with other processes
    # (libraries: MoveSharedPages=no leaves them, they are not failures)
    # (on cgroup v2 the kernel tries the rest once more when the daemon
    # narrows cpuset.mems after the move; the daemon takes what it moved
    # then off the failed pages, a few may still leave after that read)
    slack = 16 if res.get("cgroup") == "v2" else 0
    # (migrate_pages(2) leaves the pages it could not isolate, a busy
    # process's pages in flight between LRU lists, without counting them in
    # its return: a pair that did not fill its destination reports fewer
    # than stayed. One CI run of v2 counted 36413 failed against 36552 private
    # pages left, 0.4% fewer: 1% is allowed below)
    low = private // 100 + slack
    t.check(private - low <= failed <= outside + slack,
            f"MigrationFailedPages {failed} is what numa_maps shows left outside {tgt}: its private pages "
            f"there ({private}) and at most the pages it shares ({outside - private} more)")
    dec = res.get("w.decision.after") or ""
    t.check("its last move could not move" in dec and "(no free memory there)" in dec,
            f"the Decision says the move could not move everything ({dec!r})")
    print(f"  ..   after the move: {res.get('w.state.after')}: {dec!r}")
    print(f"  ..   60 s later: {res.get('w.state.end')}: {res.get('w.decision.end')!r}")
    t.eq(res.get("answered"), "12", "the bus answered throughout")
    more = res.int("placing.more")
    t.check(more is not None and more <= 1, f"no retry storm: {more} more placements in 60 s")
    t.eq(res.get("numaplaced.stop"), "exited", "the daemon stopped on SIGTERM")
    errors = [line for line in res.all("numaplaced.log") if "[err" in line or "[crit" in line]
    t.eq(errors, [], "no error-level log line")


OOM = r"""
MC=/sys/fs/cgroup/memory
mkdir -p $MC && mount -t cgroup -o memory memory $MC && mkdir $MC/oomtest || np_result memcg.failed 1
echo 380M > $MC/oomtest/memory.limit_in_bytes
# a slower move, so that the kill comes in its middle
printf '[Migration]\nMaxRate=4M\n' >> /etc/np.conf
busctl call $M Reload
# a process inside the memory cgroup from its start (its pages are charged there)
in_memcg() { _rf=$1; shift; rm -f $_rf; sh -c "echo \$\$ > $MC/oomtest/cgroup.procs; exec np-workload --ready-file $_rf $*" > $_rf.out 2>&1 & echo $!; }
w=$(in_memcg /tmp/w --mb 300 --interleave 0-3 --reset-policy --no-thp)
np_wait_file /tmp/w 120 || np_result w.ready.timeout 1
np_result pid.w $w
np_result w.memcg "$(grep memory /proc/$w/cgroup)"
np_result usage.before $(cat $MC/oomtest/memory.usage_in_bytes)
busctl --timeout=300 call $M Place uau $w 1 3 > /tmp/place.out 2>&1 &
PL=$!
moving() { busctl call $M Dump 2>/dev/null | grep -q "Moves: pid $w moving"; }
i=0
while ! moving && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
np_result during "$(busctl call $M Dump | grep -o 'Moves: pid [0-9]* moving for [0-9.]* s, [0-9]* queued')"
# a second process in the same cgroup allocates past the limit: the OOM
# killer ends the biggest, the one being moved
a=$(in_memcg /tmp/a --mb 120 --no-thp --sleep)
np_wait_for 60 sh -c "! kill -0 $w 2>/dev/null" || np_result w.alive 1
np_result oom.kill "$(dmesg | grep -c "Killed process $w ")"
wait $PL
np_result place.rc $?
np_result place.out "$(cat /tmp/place.out)"
np_wait_for 30 sh -c "[ \$(busctl get-property $M ManagedProcesses | cut -d' ' -f2) = 0 ]" || np_result managed.timeout 1
np_result managed "$(mprop ManagedProcesses)"
np_result cpusets "$(ls -d /sys/fs/cgroup/cpuset/numaplaced/*/ 2>/dev/null | wc -l)"
np_result migrated $(mprop MigratedBytes)
np_result failed.pages $(mprop MigrationFailedPages)
np_result pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
np_result daemon.alive $(kill -0 $NP_DAEMON_PID && echo yes)
np_stop_numaplaced
kill $a 2>/dev/null
true
"""


def check_oom(t, res):
    t.check(res.get("memcg.failed") is None, "the memory hierarchy is mounted")
    t.check(res.get("w.ready.timeout") is None, "the process got its memory in the cgroup")
    t.check("oomtest" in (res.get("w.memcg") or ""), f"it is in the memory cgroup ({res.get('w.memcg')!r})")
    t.check((res.get("during") or "").startswith("Moves: pid"), f"it was moving ({res.get('during')!r})")
    t.check(res.get("w.alive") is None, "the process was killed")
    t.eq(res.get("oom.kill"), "1", "by the OOM killer")
    out = res.get("place.out") or ""
    t.check(res.get("place.rc") != "0" and "exited during placement" in out, f"Place() says it exited ({out!r})")
    t.check(res.get("managed.timeout") is None, "nothing is held afterwards")
    t.eq(res.get("cpusets"), "0", "the daemon's cpuset is gone")
    migrated, pg = res.int("migrated"), res.int("pgmigrate")
    # a process gone before the after-read: each pair that ran counts what
    # its source held (np_migrate_moved_bytes()), so the pages it shares
    # with others (libraries, which MoveSharedPages=no leaves) count too
    t.check(migrated is not None and pg is not None and pg * 4096 <= migrated <= pg * 4096 + (4 << 20),
            f"MigratedBytes {migrated} is what the kernel moved ({pg} pages), plus at most 4 MiB of shared pages")
    t.check(any(re.search(rf"Process {res.get('pid.w')} \(np-workload\) ended during its move to 3", line)
                for line in res.all("numaplaced.log")), "the log says it ended during its move")
    print(f"  ..   MigratedBytes {migrated}, pgmigrate_success {pg} pages ({pg * 4096} bytes), "
          f"MigrationFailedPages {res.get('failed.pages')}")
    t.eq(res.get("daemon.alive"), "yes", "the daemon runs throughout")
    t.eq(res.get("numaplaced.stop"), "exited", "the daemon stopped on SIGTERM")
    errors = [line for line in res.all("numaplaced.log") if "[err" in line or "[crit" in line]
    t.eq(errors, [], "no error-level log line")


QUEUED_FULL = r"""
# slower moves: the first one lasts while the filler takes its memory
printf '[Migration]\nMaxRate=8M\n' >> /etc/np.conf
busctl call $M Reload > /dev/null
a=$(np_start_workload /tmp/a --mb 200 --interleave 0-3 --reset-policy --no-thp --sweep --duty 30 --no-pin) || exit 1
b=$(np_start_workload /tmp/b --mb 200 --interleave 0-3 --reset-policy --no-thp --sweep --duty 30 --no-pin) || exit 1
np_result pid.a $a
np_result pid.b $b
placing() { grep -E "Placing ($a|$b) " /tmp/numaplaced.log; }
two_placing() { [ $(placing | wc -l) -ge 2 ]; }
np_wait_for 120 two_placing || { np_result placing.timeout 1; exit 0; }
# the second in the mover's queue (the log says Placing in the queue's
# order), and its target
q=$(placing | sed -n 2p | sed 's/.*Placing \([0-9]*\) .*/\1/')
t=$(placing | sed -n 2p | sed -n 's/.*: place on \([0-9]*\) .*/\1/p')
np_result queued $q
np_result target $t
np_result placing "$(placing | tr '\n' '|')"
fill=$(( $(awk '/MemFree/ { print $4 }' /sys/devices/system/node/node$t/meminfo) / 1024 ))
f=$(np_start_workload /tmp/f --mb $fill --preferred $t --no-thp --sleep) || np_result filler.failed 1
np_result fill.mb $fill
np_result f.kb $(np_numa_kb $f)
# the first move still ran when the filler had its memory
np_result placed.before.fill "$(grep -c -E "Placed ($a|$b) " /tmp/numaplaced.log)"
np_wait_for 120 logged "Not moving $q " || np_result refused.timeout 1
np_result refused "$(grep "Not moving $q " /tmp/numaplaced.log | head -n 1)"
np_result q.cpuset "$(grep cpuset /proc/$q/cgroup)"
np_result q.mems "$(awk '/^Mems_allowed_list/ { print $2 }' /proc/$q/status)"
np_result oom.refused "$(dmesg | grep -c 'Killed process')"
kill $f
np_wait_for 120 logged "Placed $q " || np_result placed.timeout 1
np_result q.placed "$(grep "Placed $q " /tmp/numaplaced.log | head -n 1)"
np_result q.alive $(kill -0 $q 2>/dev/null && echo yes)
np_result oom.end "$(dmesg | grep -c 'Killed process')"
np_stop_numaplaced
kill $a $b 2>/dev/null
true
"""


def check_queued_full(t, res):
    t.check(res.get("placing.timeout") is None, "the policy decided to place both processes")
    print(f"  ..   {res.get('placing')}")
    t.check(res.get("filler.failed") is None, "the filler got its memory")
    q, tgt = res.get("queued"), res.get("target")
    f_kb = res.node_kb("f.kb")
    print(f"  ..   the filler: {res.get('fill.mb')} MB, {f_kb} kB per node")
    t.eq(res.get("placed.before.fill"), "0", "the first move still ran when the filler had its memory")
    t.check(res.get("refused.timeout") is None, f"the queued move of {q} did not start ({res.get('refused')!r})")
    t.check(f"nodes-{tgt}" not in (res.get("q.cpuset") or ""),
            f"{q} is not confined to node {tgt} ({res.get('q.cpuset')!r}, Mems_allowed_list {res.get('q.mems')})")
    t.eq(res.get("oom.refused"), "0", "the kernel's OOM killer ended no one")
    t.check(res.get("placed.timeout") is None, f"{q} is placed once there is room ({res.get('q.placed')!r})")
    t.eq(res.get("q.alive"), "yes", f"{q} still runs")
    t.eq(res.get("oom.end"), "0", "no OOM kill to the end")
    t.eq(res.get("numaplaced.stop"), "exited", "the daemon stopped on SIGTERM")
    errors = [line for line in res.all("numaplaced.log") if "[err" in line or "[crit" in line]
    t.eq(errors, [], "no error-level log line")


SCENARIOS = {
    "node-full": ("v1", NODE_FULL, check_node_full, 600),
    "node-full-v2": ("v2", NODE_FULL, check_node_full, 600),
    "oom": ("v1", OOM, check_oom, 600),
    "queued-full": ("v1", QUEUED_FULL, check_queued_full, 600),
}


def main(name):
    cgroup, script, check, timeout = SCENARIOS[name]
    vm = npvm.VM(f"pressure-{name}", TOPO, cgroup=cgroup)
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", CONF)
    res = vm.run(COMMON + script, timeout=timeout)
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()
    check(t, res)
    for line in res.all("numaplaced.log"):
        if re.search(r"Placed |Placing |Not placing|Not moving|Process [0-9]+ |OOM|killed", line):
            print(f"  ..   {line}")
    return t.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        sys.exit("usage: test_pressure.py " + "|".join(SCENARIOS))
    npvm.run_test(f"pressure-{sys.argv[1]}", lambda: main(sys.argv[1]))
