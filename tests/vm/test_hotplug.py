#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The machine changing under the daemon (issue 25), in a 4-node VM (4 x 512
MB, one CPU per node).

  cpu-v1, cpu-v2   two processes held on node 2: `a` placed there by the
                   policy (its memory was there), `b` pinned there by
                   Place(). CPU 2, node 2's only CPU, goes offline: within
                   two scans `a` is released and runs on online CPUs, `b`
                   stays pinned with its memory on 2 and runs on the online
                   CPUs; each Decision says what happened; every page of
                   both still holds what was written (np-workload
                   --verify); Node 2 shows no CPUs. CPU 2 comes back: the
                   Node shows it again and `b` is confined to it again.
                   CPU 2 offline once more, the daemon is killed (SIGKILL)
                   and started again: it puts `b` back from its state file.
  memory           memory hot-added to node 3 through QEMU's monitor
                   (pc-dimm, onlined by the kernel): MemoryTotalBytes of
                   node 3 grows within two scans and the policy places a
                   process that did not fit anywhere before onto node 3.

Run one: python3 tests/vm/test_hotplug.py cpu-v1
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=512, cpus=1)

# AdviceHoldSec=0: the memory scenario's Advise() calls are questions about
# the ledger, not guests about to start; held, the first answer's room would
# be taken from the second and from the placement that follows.
CONF = """[Daemon]
Mode=enforce
[Placement]
MinProcessCPU=0.2
MinProcessMemory=100M
AdviceHoldSec=0
"""

COMMON = r"""
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
P=org.numaplaced1.Process
N=org.numaplaced1.Node
mprop() { busctl get-property $M "$1" 2>/dev/null | cut -d' ' -f2-; }
pprop() { busctl get-property org.numaplaced1 /org/numaplaced1/process/$1 $P "$2" 2>/dev/null | cut -d' ' -f2- | tr -d '"'; }
nprop() { busctl get-property org.numaplaced1 /org/numaplaced1/node/$1 $N "$2" 2>/dev/null; }
logged() { grep -q "$1" /tmp/numaplaced.log; }
# Cpus_allowed_list of every thread of $2, distinct values, one result line
cpus_of() { np_result $1 $(cat /proc/$2/task/*/status | sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' | sort -u | tr '\n' ' '); }
mems_of() { np_result $1 $(sed -n 's/^Mems_allowed_list:[[:space:]]*//p' /proc/$2/status); }
cgroup_of() { np_result $1 "$(grep -E '^[0-9]+:(cpuset)?:' /proc/$2/cgroup | head -n 1 | cut -d: -f3)"; }
verify() {
	kill -USR2 $2
	np_wait_for 60 sh -c "[ \$(grep -c VERIFY $3) -ge 2 ]"
	np_result $1 "$(grep VERIFY $3 | tail -n 1)"
}
np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
"""

CPU_SCRIPT = r"""
# a and b started on CPU 0, then free on every CPU: a, away from its
# memory, is placed on node 2 by the policy (started where the shell ran,
# it was sometimes on CPU 2 already, local, and kept there: never placed)
taskset -p -c 0 $$ > /dev/null || exit 1
a=$(np_start_workload /tmp/a --mb 160 --bind 2 --reset-policy --no-thp --sweep --duty 30 --no-pin --verify) || exit 1
b=$(np_start_workload /tmp/b --mb 32 --bind 2 --reset-policy --no-thp --no-pin --verify) || exit 1
taskset -p -c 0-3 $$ > /dev/null && taskset -a -p -c 0-3 $a > /dev/null && taskset -a -p -c 0-3 $b > /dev/null || exit 1
np_result pid.a $a
np_result pid.b $b
cgroup_of a.cgroup.start $a
cgroup_of b.cgroup.start $b
cpus_of a.cpus.start $a
np_capture place busctl call $M Place uau $b 1 2
np_wait_for 120 logged "Placed $a " || np_result a.placed.timeout 1
np_result a.state.before "$(pprop $a State) $(pprop $a TargetNodes)"
np_result b.state.before "$(pprop $b State) $(pprop $b TargetNodes)"
cpus_of b.cpus.before $b

s0=$(mprop Scans)
echo 0 > /sys/devices/system/cpu/cpu2/online
np_result online.off "$(cat /sys/devices/system/cpu/online)"
np_wait_for 60 logged "Process $a (np-workload): its nodes 2 have no online CPU left" || np_result a.release.timeout 1
np_result scans.released $(( $(mprop Scans) - s0 ))
np_wait_for 30 logged "Process $b (np-workload): its nodes 2 have no online CPU:" || np_result b.note.timeout 1
np_result scans.b $(( $(mprop Scans) - s0 ))
cpus_of a.cpus.off $a
cpus_of b.cpus.off $b
mems_of b.mems.off $b
np_result a.decision.off "$(pprop $a Decision)"
np_result b.state.off "$(pprop $b State) $(pprop $b TargetNodes)"
np_result b.decision.off "$(pprop $b Decision)"
np_result node2.cpus.off "$(nprop 2 CPUs)"
np_result node2.capacity.off "$(nprop 2 CPUCapacity)"
verify a.verify.off $a /tmp/a.out
verify b.verify.off $b /tmp/b.out

echo 1 > /sys/devices/system/cpu/cpu2/online
np_result online.on "$(cat /sys/devices/system/cpu/online)"
np_wait_for 60 logged "Process $b (np-workload): the CPUs of its nodes 2 changed" || np_result b.back.timeout 1
np_result node2.cpus.on "$(nprop 2 CPUs)"
cpus_of b.cpus.on $b
cpus_of a.cpus.on $a
np_result b.decision.on "$(pprop $b Decision)"
np_result a.state.on "$(pprop $a State) $(pprop $a TargetNodes)"
np_result daemon.alive $(kill -0 $NP_DAEMON_PID && echo yes)

# a crash while the machine is changed: CPU 2 offline again (b confined to
# the others), SIGKILL, a new daemon: it puts b back from the state file
echo 0 > /sys/devices/system/cpu/cpu2/online
np_wait_for 60 sh -c "[ \$(grep -c 'Process $b (np-workload): its nodes 2 have no online CPU:' /tmp/numaplaced.log) -ge 2 ]" || np_result b.off2.timeout 1
cgroup_of b.cgroup.off2 $b
kill -9 $NP_DAEMON_PID
wait $NP_DAEMON_PID 2>/dev/null
while IFS= read -r _l; do echo "NPVM-R numaplaced.log $_l"; done < /tmp/numaplaced.log
mv /tmp/numaplaced.log /tmp/numaplaced.1.log
np_start_numaplaced /etc/np.conf || exit 1
cgroup_of b.cgroup.restart $b
cpus_of b.cpus.restart $b
np_result restart.released "$(grep -c "Released pid $b " /tmp/numaplaced.log)"
np_result restart.tasks "$(cat $(find /sys/fs/cgroup/cpuset/numaplaced /sys/fs/cgroup/numaplaced -name tasks -o -name cgroup.procs 2>/dev/null) 2>/dev/null | wc -l)"
echo 1 > /sys/devices/system/cpu/cpu2/online
np_stop_numaplaced
cpus_of a.cpus.stop $a
cpus_of b.cpus.stop $b
cgroup_of a.cgroup.stop $a
cgroup_of b.cgroup.stop $b
kill $a $b
"""


def check_cpu(t, res):
    t.eq(res.get("online.off"), "0-1,3", "CPU 2 went offline")
    t.check(res.get("a.placed.timeout") is None, "a was placed by the policy")
    t.eq(res.get("a.state.before"), "placed 1 2", "a placed on node 2 (its memory's node)")
    t.eq(res.get("b.state.before"), "pinned 1 2", "b pinned on node 2 by Place()")
    t.eq(res.get("b.cpus.before"), "2", "b confined to CPU 2")
    # released
    t.check(res.get("a.release.timeout") is None, "a was released when its node lost its CPU")
    n = res.int("scans.released")
    t.check(n is not None and n <= 2, f"a released within two scans ({n})")
    cpus = (res.get("a.cpus.off") or "").split()
    t.check(cpus and all(npvm.id_set(c) & {0, 1, 3} for c in cpus),
            f"a's threads may run on online CPUs ({cpus})")
    t.check("its nodes 2 have no online CPU left (CPUs 2 went offline): released from 2"
            in (res.get("a.decision.off") or ""), f"a's Decision says why ({res.get('a.decision.off')!r})")
    # pinned: stays, runs on the online CPUs, memory pinned
    t.check(res.get("b.note.timeout") is None, "b's placement was checked")
    t.eq(res.get("b.state.off"), "pinned 1 2", "b stays pinned on node 2")
    t.eq(res.get("b.cpus.off"), "0-1,3", "b runs on the online CPUs")
    t.eq(res.get("b.mems.off"), "2", "b's memory stays on node 2")
    t.check((res.get("b.decision.off") or "").startswith(
        "its nodes 2 have no online CPU: it runs on CPUs 0-1,3, its memory stays on 2"),
        f"b's Decision says so ({res.get('b.decision.off')!r})")
    t.eq(res.get("node2.cpus.off"), "au 0", "Node 2 shows no CPUs")
    t.eq(res.get("node2.capacity.off"), "d 0", "Node 2's CPUCapacity is 0")
    for w in ("a", "b"):
        v = res.get(f"{w}.verify.off") or ""
        t.check(re.search(r"\bbad=0\b", v) is not None, f"{w}: every page kept its contents ({v!r})")
    # back
    t.eq(res.get("online.on"), "0-3", "CPU 2 came back")
    t.check(res.get("b.back.timeout") is None, "b confined to CPU 2 again")
    t.eq(res.get("node2.cpus.on"), "au 1 2", "Node 2 shows CPU 2 again")
    t.eq(res.get("b.cpus.on"), "2", "b runs on CPU 2 again")
    t.check((res.get("b.decision.on") or "").startswith("the CPUs of its nodes 2 changed (0-1,3 -> 2)"),
            f"b's Decision says so ({res.get('b.decision.on')!r})")
    # a, released while CPU 2 was offline, has CPU 2 back in its affinity,
    # or the policy placed it on node 2 again in the same scan
    st = (res.get("a.state.on") or "").split()
    want = "2" if st[:3] == ["placed", "1", "2"] else "0-3"
    t.eq(res.get("a.cpus.on"), want, f"a runs on CPU 2 again ({' '.join(st)})")
    t.check(st[:1] != ["foreign"], f"a is not taken for narrowed by someone else ({st})")
    t.eq(res.get("daemon.alive"), "yes", "the daemon runs throughout")
    t.eq(res.get("numaplaced.stop"), "exited", "the daemon stopped on SIGTERM")
    # the crash and restart while CPU 2 is offline
    t.check(res.get("b.off2.timeout") is None, "b confined to the online CPUs again")
    t.check((res.get("b.cgroup.off2") or "").startswith("/numaplaced/"), f"b held ({res.get('b.cgroup.off2')!r})")
    t.eq(res.get("restart.released"), "1", "the restarted daemon put b back from the state file")
    t.eq(res.get("b.cgroup.restart"), res.get("b.cgroup.start"), "b in its own cgroup again after the restart")
    t.eq(res.get("b.cpus.restart"), "0-1,3", "b on the online CPUs after the restart")
    t.eq(res.get("restart.tasks"), "0", "no task left in the daemon's cgroups after the restart")
    # a was released or stopped with the daemon: its CPUs are whole again
    # only if it was not released while CPU 2 was offline at the crash
    t.eq(res.get("a.cpus.stop") in ("0-3", "0-1,3"), True, f"a on online CPUs at the end ({res.get('a.cpus.stop')})")
    for w in ("b",):
        t.eq(res.get(f"{w}.cpus.stop"), "0-1,3", f"{w}: as the restart left it (CPU 2 was offline then)")
        t.eq(res.get(f"{w}.cgroup.stop"), res.get(f"{w}.cgroup.start"), f"{w}: its own cgroup again after the stop")
    t.check(any("has its original CPUs 0-3 back" in line for line in res.all("numaplaced.log")),
            "the log says a got its CPUs back")
    errors = [line for line in res.all("numaplaced.log") if "[err" in line or "[crit" in line]
    t.eq(errors, [], "no error-level log line")
    print(f"  ..   a after CPU 2 came back: {res.get('a.state.on')}")


MEM_SCRIPT = r"""
np_result node3.total.before "$(nprop 3 MemoryTotalBytes)"
np_capture advise.before busctl call $M Advise dt 1 629145600
np_host_memadd 3 512 || np_result memadd.timeout 1
s0=$(mprop Scans)
kb=$(awk '/MemTotal/ { print $4 }' /sys/devices/system/node/node3/meminfo)
np_result node3.kb.after $kb
# the daemon may have read the node while the kernel was still onlining
# its blocks: it logs a change for each read that differs, and its
# property follows within a scan or two of the last block
np_wait_for 60 logged "NUMA topology changed: node 3: memory" || np_result seen.timeout 1
np_wait_for 60 sh -c "[ \"\$(busctl get-property org.numaplaced1 /org/numaplaced1/node/3 $N MemoryTotalBytes)\" = 't $((kb * 1024))' ]" || np_result total.timeout 1
np_result scans.seen $(( $(mprop Scans) - s0 ))
np_result node3.total.after "$(nprop 3 MemoryTotalBytes)"
np_capture advise.after busctl call $M Advise dt 1 629145600
w=$(np_start_workload /tmp/w --mb 600 --interleave 0-3 --reset-policy --no-thp --sweep --duty 30 --no-pin) || exit 1
np_result pid.w $w
np_wait_for 300 logged "Placed $w " || np_result w.placed.timeout 1
np_result w.state "$(pprop $w State) $(pprop $w TargetNodes)"
np_result w.decision "$(pprop $w Decision)"
np_result w.kb $(np_numa_kb $w)
np_result daemon.alive $(kill -0 $NP_DAEMON_PID && echo yes)
np_stop_numaplaced
kill $w
"""


def check_memory(t, res):
    t.check(res.get("memadd.timeout") is None, "node 3's MemTotal grew after the hot-add")
    before = (res.get("node3.total.before") or "t 0").split()[-1]
    after = (res.get("node3.total.after") or "t 0").split()[-1]
    kb = res.int("node3.kb.after")
    t.eq(int(after), kb * 1024 if kb is not None else None, "MemoryTotalBytes of node 3 is its MemTotal")
    t.check(int(after) >= int(before) + (500 << 20), f"MemoryTotalBytes of node 3 grew by 512 MB ({before} -> {after})")
    t.check(res.get("seen.timeout") is None, "the daemon logged the change")
    t.check(res.get("total.timeout") is None, "MemoryTotalBytes of node 3 reached its MemTotal")
    n = res.int("scans.seen")
    t.check(n is not None and n <= 2, f"seen within two scans of the last block online ({n})")
    t.check((res.get("advise.before") or "").split()[1:2] != ["1"],
            f"before: 600 MB fit no single node ({res.get('advise.before')!r})")
    t.eq(res.get("advise.after"), "au 1 3", "after: Advise() puts 600 MB on node 3")
    t.check(res.get("w.placed.timeout") is None, "the 600 MB process was placed")
    t.eq(res.get("w.state"), "placed 1 3", f"placed on node 3 alone ({res.get('w.decision')!r})")
    kbs = res.node_kb("w.kb")
    total = sum(kbs.values())
    t.check(total and kbs.get(3, 0) / total >= 0.95, f"at least 95% of its pages on node 3 ({kbs})")
    t.eq(res.get("daemon.alive"), "yes", "the daemon runs throughout")
    errors = [line for line in res.all("numaplaced.log") if "[err" in line or "[crit" in line]
    t.eq(errors, [], "no error-level log line")


SCENARIOS = {
    "cpu-v1": ("v1", CPU_SCRIPT, check_cpu, 600),
    "cpu-v2": ("v2", CPU_SCRIPT, check_cpu, 600),
    "memory": ("v1", MEM_SCRIPT, check_memory, 600),
}


def main(name):
    cgroup, script, check, timeout = SCENARIOS[name]
    vm = npvm.VM(f"hotplug-{name}", TOPO, cgroup=cgroup, hotplug_mb=512 if name == "memory" else 0)
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", CONF)
    res = vm.run(COMMON + script, timeout=timeout)
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()
    check(t, res)
    for line in vm.host_log:
        print(f"  ..   host: {line}")
    for line in res.all("numaplaced.log"):
        if re.search(r"Placed |Placing |topology changed|Process [0-9]+ ", line):
            print(f"  ..   {line}")
    return t.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        sys.exit("usage: test_hotplug.py " + "|".join(SCENARIOS))
    npvm.run_test(f"hotplug-{sys.argv[1]}", lambda: main(sys.argv[1]))
