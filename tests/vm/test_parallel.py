#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Moves to different nodes side by side, with real pages moving.

4 nodes x 512 MB, cgroup v1, Mode=advise (only Place() moves). Four
processes of 192 MB, 48 MB bound on each node: Place() of a on node 1 and
of b on node 2 (144 MB each to move, about 1.3 s under TCG), then of c on
nodes 1-2. While they run, Dump() is read over and over: a and b are in
flight at once, c waits in the queue (its nodes are theirs) and starts
when they end (when its call comes after a's move has ended, it waits
behind b's alone). Every process ends on its nodes with all its pages, in
the daemon's cpuset of them, and MigratedBytes grew by what /proc/vmstat's
pgmigrate_success says moved.

Then with MaxRate= set (the daemon's rate as a whole) the same two kinds of
Place() run one at a time: d on node 3 and a on node 0, the second queued
while the first runs, never both in flight. MaxRate=64M paces d's 144 MB
over more than 2 s, so that the second Place() arrives while d moves
(with 1G, d's move took 0.4 s under TCG, and once the second call came
after it had ended).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=512, cpus=1)
MB_PER_NODE = 48

CONFIG = """[Daemon]
Mode=advise
ScanIntervalSec=1
MaxScanIntervalSec=1
[Placement]
MinProcessMemory=32M
MinProcessCPU=0
"""

SCRIPT = r"""
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
prop() { busctl get-property $M "$1" | awk '{ print $2 }'; }
cgroup_of() { sed -n 's/^[0-9]*:cpuset:\(.*\)$/\1/p' /proc/$1/cgroup | head -n 1; }
place() {         # place KEY PID NODES...: Place() in the background
	_k=$1 _p=$2
	shift 2
	(busctl --timeout=120 call $M Place uau $_p $# "$@" > /tmp/$_k.out 2>&1; echo $? > /tmp/$_k.rc) &
}
# in_mover PID KEY: its move runs, or its Place() (KEY) has returned
in_mover() {
	[ -e /tmp/$2.rc ] && return 0
	busctl call $M Dump | sed 's/\\n/\n/g' | grep -q "pid $1 moving"
}
# watch KEY FILES...: Dump()'s moves line, every one that differs from the
# one before, until every FILE exists
watch() {
	_k=$1
	shift
	_last=
	_n=0
	while [ $_n -lt 600 ]; do
		_all=1
		for _f in "$@"; do [ -e $_f ] || _all=0; done
		[ $_all = 1 ] && break
		_l=$(busctl call $M Dump | sed 's/\\n/\n/g' | grep -o 'Moves: .*')
		[ "$_l" != "$_last" ] && np_result $_k "$_l"
		_last=$_l
		_n=$((_n + 1))
	done
}

np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
for w in a b c d; do
	eval $w=$(np_start_workload /tmp/$w --per-node 0-3 --mb-per-node @MB@ --no-thp) || exit 1
done
np_result pids $a $b $c $d
m0=$(np_vmstat pgmigrate_success)
b0=$(prop MigratedBytes)

# --- 1: a to node 1 and b to node 2 side by side, c (nodes 1-2) after them;
# each asked for once the one before is in the mover's hands
place pa $a 1
np_wait_for 30 in_mover $a pa
place pb $b 2
np_wait_for 30 in_mover $b pb
place pc $c 1 2
watch p1 /tmp/pa.rc /tmp/pb.rc /tmp/pc.rc
for k in pa pb pc; do np_result $k.rc $(cat /tmp/$k.rc); np_result $k.out "$(cat /tmp/$k.out)"; done
np_result a.after $(np_numa_kb $a bind:)
np_result b.after $(np_numa_kb $b bind:)
np_result c.after $(np_numa_kb $c bind:)
np_result a.cgroup $(cgroup_of $a)
np_result b.cgroup $(cgroup_of $b)
np_result c.cgroup $(cgroup_of $c)

# --- 2: MaxRate= set: one at a time
sed -i 's/^MinProcessCPU=0$/MinProcessCPU=0\n[Migration]\nMaxRate=64M/' /etc/np.conf
busctl call $M Reload > /dev/null
np_result maxrate "$(busctl call $M Dump | sed 's/\\n/\n/g' | grep -o 'MaxRate=.*')"
place pd $d 3
np_wait_for 30 in_mover $d pd
place pa2 $a 0
watch p2 /tmp/pd.rc /tmp/pa2.rc
for k in pd pa2; do np_result $k.rc $(cat /tmp/$k.rc); np_result $k.out "$(cat /tmp/$k.out)"; done
np_result d.after $(np_numa_kb $d bind:)
np_result a.after2 $(np_numa_kb $a bind:)

np_result pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
np_result migrated $(( $(prop MigratedBytes) - b0 ))
while IFS= read -r l; do np_result log "$l"; done < /tmp/numaplaced.log
kill $a $b $c $d
"""


def moving(line):
    """The pids a Dump() moves line shows in flight, and how many queued."""
    pids = [int(x) for x in re.findall(r"pid (\d+) moving for", line)]
    q = re.search(r"(\d+) queued", line)
    return pids, int(q.group(1)) if q else 0


def main():
    vm = npvm.VM("parallel-4", TOPO, cgroup="v1")
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", CONFIG)
    res = vm.run(SCRIPT.replace("@MB@", str(MB_PER_NODE)), timeout=420)
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()
    a, b, c, d = (int(x) for x in res.get("pids").split())
    total = 4 * MB_PER_NODE * 1024

    # 1: side by side
    for k in ("pa", "pb", "pc"):
        t.eq(res.get(f"{k}.rc"), "0", f"Place() {k[1]} succeeds ({res.get(k + '.out')!r})")
    seen = res.all("p1")
    for line in seen:
        print(f"  ..   {line}")
    both = [x for x in seen if {a, b} <= set(moving(x)[0])]
    t.check(both, f"Dump() showed the moves of a ({a}) and b ({b}) in flight at once")
    # c's nodes are a's and b's: it waits while either of them moves. When
    # c's Place() arrives only after a's move has ended (a busctl call takes
    # about 0.3 s under TCG, a's move 1.3 s), it waits behind b alone
    busy = [x for x in seen if {a, b} & set(moving(x)[0])]
    t.check(all(c not in moving(x)[0] for x in busy) and any(moving(x)[1] == 1 for x in busy),
            "c, to nodes 1-2, waited in the queue while a or b moved, and never ran beside them")
    t.check(any(c in moving(x)[0] for x in seen), f"c's move ran after them ({c})")
    for w, nodes, cg in (("a", {1}, "/numaplaced/nodes-1"), ("b", {2}, "/numaplaced/nodes-2"),
                         ("c", {1, 2}, "/numaplaced/nodes-1-2")):
        after = res.node_kb(f"{w}.after")
        t.near(sum(v for n, v in after.items() if n in nodes), total, 256,
               f"{w}: every page on nodes {sorted(nodes)} ({after})")
        t.eq(res.get(f"{w}.cgroup"), cg, f"{w}: in the daemon's cpuset of its nodes")

    # 2: MaxRate=: one at a time
    t.check("MaxRate=64M" in (res.get("maxrate") or ""), f"MaxRate=64M in force ({res.get('maxrate')!r})")
    for k in ("pd", "pa2"):
        t.eq(res.get(f"{k}.rc"), "0", f"Place() {k} succeeds ({res.get(k + '.out')!r})")
    seen2 = res.all("p2")
    for line in seen2:
        print(f"  ..   {line}")
    t.check(seen2 and all(len(moving(x)[0]) <= 1 for x in seen2),
            "with MaxRate= no two moves were in flight at once")
    t.check(any(len(moving(x)[0]) == 1 and moving(x)[1] == 1 for x in seen2),
            "with MaxRate= the second move waited in the queue")
    t.near(res.node_kb("d.after").get(3, 0), total, 256, "d: every page on node 3")
    t.near(res.node_kb("a.after2").get(0, 0), total, 256, "a: every page on node 0")

    pages, moved = res.int("pgmigrate"), res.int("migrated")
    t.check(pages is not None and moved is not None and abs(moved - pages * 4096) <= 64 * 4096,
            f"MigratedBytes grew by {moved}, pgmigrate_success by {pages} pages ({(pages or 0) * 4096} bytes)")
    return t.finish()


if __name__ == "__main__":
    npvm.run_test("parallel-4", main)
