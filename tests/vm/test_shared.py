#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Pages shared with other processes, [Migration] MoveSharedPages= (4 nodes).

Each case starts `np-workload --bind 0 --mb 32 --share-mb 32`: 32 MB of its
own and 32 MB of MAP_SHARED memory that a child maps too, all on node 0, and
calls Place(pid, [1]):

- MoveSharedPages=no: its own 32 MB move to node 1, the shared
  32 MB stay on node 0 (in its numa_maps and in the child's), Place's bytes
  and pgmigrate_success count its own memory only (and less than 8 MB of
  stack, heap and library data). On cgroup v2 the memory
  nodes narrow after the plan and the kernel moves the rest itself (v2's
  cpuset always migrates): the shared pages end on node 1 too, Place's bytes
  include them and the log says the kernel moved them.
- MoveSharedPages=yes (Reload()): everything moves, the child's view of the
  shared memory too.
- The policy, with the default (no): a busy process whose memory is half a
  shared segment, both interleaved over the four nodes, is placed on one
  node once. Its own memory moves; on v1 the shared pages outside stay
  there, and the policy, remembering that its move left them, does not
  "move the rest" again at every MinSecondsBetweenMoves= (5 s) over the
  next eight scans; its Decision says what was left. On v2, where the
  kernel moves the shared pages when the memory nodes narrow, the Decision
  does not say any were left.

Usage: test_shared.py v1|v2
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=256, cpus=1)
MB = 32

POLICY_MB = 64
POLICY_CONFIG = """[Daemon]
Mode=enforce
ScanIntervalSec=3
MaxScanIntervalSec=3
[Placement]
MinProcessMemory=100M
MinProcessCPU=0.2
MinSecondsBetweenMoves=5
"""

CONFIG = """[Daemon]
Mode=advise
LogLevel=debug
[Migration]
MoveSharedPages={shared}
"""

SCRIPT = r"""
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
# run_case TAG: a fresh workload on node 0, Place(pid, [1])
run_case() {
	pid=$(np_start_workload /tmp/w$1 --bind 0 --mb {mb} --share-mb {mb} --no-thp) || return 1
	child=$(sed -n 's/^CHILD pid=\([0-9]*\).*/\1/p' /tmp/w$1.out)
	np_result $1.child $child
	np_result $1.before.own $(np_numa_kb $pid 'anon=')
	np_result $1.before.shared $(np_numa_kb $pid 'dev/zero')
	m0=$(np_vmstat pgmigrate_success)
	np_capture $1.place busctl call $M Place uau $pid 1 1
	np_result $1.vmstat $(( $(np_vmstat pgmigrate_success) - m0 ))
	np_result $1.after.own $(np_numa_kb $pid 'anon=')
	np_result $1.after.shared $(np_numa_kb $pid 'dev/zero')
	np_result $1.child.shared $(np_numa_kb $child 'dev/zero')
	kill $pid
	np_wait_for 20 sh -c "! kill -0 $pid 2>/dev/null && ! kill -0 $child 2>/dev/null"
}
np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
run_case no
printf '{conf_yes}' > /etc/np.conf
np_capture reload busctl call $M Reload
run_case yes
np_stop_numaplaced
# the policy, MoveSharedPages= left at its default
printf '{conf_policy}' > /etc/np2.conf
np_start_numaplaced /etc/np2.conf || exit 1
pid=$(np_start_workload /tmp/wp --interleave 0-3 --mb {pmb} --share-mb {pmb} --no-thp --sweep --no-pin --reset-policy) || exit 1
np_result policy.pid $pid
np_wait_for 240 grep -q "Placed $pid " /tmp/numaplaced.log
# eight scans or more, waited for without polling the bus (a busctl call
# under TCG is CPU that the policy sees on the workload's node)
scans() { busctl get-property $M Scans | cut -d' ' -f2; }
s0=$(scans)
sleep 30
np_result policy.scans $(( $(scans) - s0 ))
np_result policy.placed $(grep -c "Placed $pid " /tmp/numaplaced.log)
P="org.numaplaced1 /org/numaplaced1/process/$pid org.numaplaced1.Process"
np_result policy.target $(busctl get-property $P TargetNodes | cut -d' ' -f3-)
np_result policy.decision "$(busctl get-property $P Decision | cut -d' ' -f2-)"
np_result policy.own $(np_numa_kb $pid 'anon=')
np_result policy.shared $(np_numa_kb $pid 'dev/zero')
kill $pid
np_stop_numaplaced
"""


def moved_bytes(res, tag):
    line = res.get(f"{tag}.place") or ""
    f = line.split()
    return int(f[1]) if len(f) == 2 and f[0] == "t" and f[1].isdigit() else None


def main(cg):
    vm = npvm.VM(f"shared-4-{cg}", TOPO, cgroup=cg)
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", CONFIG.format(shared="no"))
    script = (SCRIPT.replace("{mb}", str(MB)).replace("{pmb}", str(POLICY_MB))
              .replace("{conf_yes}", CONFIG.format(shared="yes").replace("\n", "\\n"))
              .replace("{conf_policy}", POLICY_CONFIG.replace("\n", "\\n")))
    res = vm.run(script, timeout=300)
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()
    mb_kb = MB * 1024
    t.eq(res.get("reload.rc"), "0", "Reload() with MoveSharedPages=yes")
    for tag in ("no", "yes"):
        what = f"[{cg}] MoveSharedPages={tag}"
        t.eq(res.get(f"{tag}.place.rc"), "0", f"{what}: Place(pid, [1]) succeeded")
        before_own, before_sh = res.node_kb(f"{tag}.before.own"), res.node_kb(f"{tag}.before.shared")
        t.check(before_own.get(0, 0) >= mb_kb and before_sh.get(0, 0) >= mb_kb,
                f"{what}: before, its own and the shared {MB} MB on node 0 ({before_own}, {before_sh})")
        own, sh, child = (res.node_kb(f"{tag}.after.own"), res.node_kb(f"{tag}.after.shared"),
                          res.node_kb(f"{tag}.child.shared"))
        # its stack, heap and library data still shared with the child after
        # fork(2) (a few pages) stay with no
        t.check(own.get(1, 0) >= mb_kb and sum(own.values()) - own.get(1, 0) <= 1024,
                f"{what}: its own memory on node 1, at most 1 MB elsewhere ({own})")
        shared_moves = tag == "yes" or cg == "v2"
        want = 1 if shared_moves else 0
        t.check(sh.get(want, 0) >= mb_kb and sum(sh.values()) - sh.get(want, 0) == 0,
                f"{what}: the shared memory all on node {want} ({sh})")
        t.check(child.get(want, 0) >= mb_kb, f"{what}: the child sees it on node {want} too ({child})")
        moved = moved_bytes(res, tag)
        pages = res.int(f"{tag}.vmstat")
        want_mb = 2 * MB if shared_moves else MB
        # and its other pages: with no about 1.6 MB of stack, heap and library
        # data; with yes also the program's and the libraries' text (about 4 MB)
        lo, hi = want_mb * 2**20, (want_mb + 8) * 2**20
        t.check(moved is not None and lo <= moved < hi,
                f"{what}: Place moved {want_mb} to {want_mb + 8} MB ({moved} bytes)")
        t.check(pages is not None and lo <= pages * 4096 < hi,
                f"{what}: pgmigrate_success grew by {want_mb} to {want_mb + 8} MB ({pages} pages)")
    if cg == "v2":
        t.check(any("made the kernel move" in l for l in res.all("numaplaced.log")),
                f"[{cg}] the kernel's own move of the shared pages is logged")
    check_policy(t, res, cg)
    return t.finish()


def check_policy(t, res, cg):
    what = f"[{cg}] policy, MoveSharedPages=no"
    t.check((res.int("policy.scans") or 0) >= 8, f"{what}: eight scans or more after the placement "
            f"({res.get('policy.scans')})")
    t.eq(res.get("policy.placed"), "1", f"{what}: placed once, not again over eight scans")
    target = (res.get("policy.target") or "").split()
    t.check(len(target) == 1 and target[0].isdigit(), f"{what}: placed on one node ({target})")
    if len(target) != 1 or not target[0].isdigit():
        return
    node = int(target[0])
    own, sh = res.node_kb("policy.own"), res.node_kb("policy.shared")
    own_kb, sh_kb = POLICY_MB * 1024, POLICY_MB * 1024
    t.check(own.get(node, 0) >= own_kb, f"{what}: its own memory on node {node} ({own})")
    decision = res.get("policy.decision") or ""
    if cg == "v1":
        # interleaved over four nodes: three quarters of it stay outside
        outside = sum(sh.values()) - sh.get(node, 0)
        t.check(outside >= sh_kb * 3 // 4 - 1024, f"{what}: the shared pages outside node {node} stay ({sh})")
        t.check("could not move" in decision, f"{what}: the Decision says what its move left ({decision!r})")
    else:
        t.check(sh.get(node, 0) >= sh_kb, f"{what}: the kernel moved the shared pages too on v2 ({sh})")
        # the daemon sees where they went: from its own read after the
        # kernel's move, not the mover's from before it (with that, the
        # pages the kernel had just moved counted as left outside, and as
        # someone else's memory on the node, which could then look crowded)
        t.check("could not move" not in decision and decision.startswith('"placed on'),
                f"{what}: the Decision knows the kernel moved them ({decision!r})")


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("v1", "v2"):
        sys.exit("usage: test_shared.py v1|v2")
    npvm.run_test(f"shared-4-{sys.argv[1]}", lambda: main(sys.argv[1]))
