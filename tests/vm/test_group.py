#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Placement groups by shared memory (issue 23) in a 4-node VM (4 x 768 MB,
two CPUs per node), numaplaced at its defaults but for MinProcessCPU=0.08
(the workers are light: four of them together must fit one node).

  shared-v1 / shared-v2  a parent maps 400 MB of shared anonymous memory
              (MAP_SHARED|MAP_ANONYMOUS) interleaved over 0-3, touches it
              and forks four workers that each read all of it and then
              sweep it (np-workload --share-mb 400 --share-children 4
              --share-busy --sleep); each worker has little memory of its
              own. Checked: the four workers are one group (their Decisions
              begin "with the 4 processes of its group shm:<inode>"), all on
              one node, at least 95% of the shared pages there (the parent's
              view of the mapping: every page), pages moved (pgmigrate_success)
              at most 1.05 times the minimum (the shared pages outside that
              node, plus the workers' and the parent's own pages outside it),
              with the default MoveSharedPages=no. On v1 the pages of the
              shared libraries (file mappings of /lib and /usr/lib that no
              one wrote to) are where they were; on v2, where the kernel
              migrates every page of a process whose cpuset.mems narrow,
              their moves are printed.

Run one: python3 tests/vm/test_group.py shared-v1
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=768, cpus=2)

CONF = """[Daemon]
Mode=enforce
[Placement]
MinProcessCPU=0.08
"""

# the library pages nobody wrote to: file mappings of libraries whose
# numa_maps line has no anon= (no private copy), which would come right
# after the path (the initramfs's files are on tmpfs: dirty=)
LIBS = r"file=[^ ]*/lib[^ ]* (dirty=[0-9]+ )?(mapped=[0-9]+ )?(mapmax=[0-9]+ )?(active=[0-9]+ )?N[0-9]"

SCRIPT = r"""
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
P=org.numaplaced1.Process
mprop() { busctl get-property $M "$1" 2>/dev/null | cut -d' ' -f2-; }
pprop() { busctl get-property org.numaplaced1 /org/numaplaced1/process/$1 $P "$2" 2>/dev/null | cut -d' ' -f2- | tr -d '"'; }
placed_all() { for _p in "$@"; do grep -q "Placed $_p " /tmp/numaplaced.log || return 1; done; }
np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
m0=$(np_vmstat pgmigrate_success)
# (five processes fault in 400 MB each under TCG: longer than 60 s on a busy host)
NP_READY_WAIT=300
w=$(np_start_workload /tmp/w --mb 8 --share-mb 400 --share-children 4 --share-busy --sleep --duty 12 \
    --interleave 0-3 --no-thp --no-pin) || exit 1
kids=$(sed -n 's/^CHILD pid=//p' /tmp/w.out | tr '\n' ' ')
np_result parent $w
np_result children $kids
np_result shared.before $(np_numa_kb $w 'zero')
np_result own.before $(np_numa_kb $w '^[0-9a-f]+ [^ ]+ (heap |stack )?anon=')
for c in $kids; do
	np_result child.own.before $c $(np_numa_kb $c '^[0-9a-f]+ [^ ]+ (heap |stack )?anon=')
done
set -- $kids
grep 'lib' /proc/$1/numa_maps | head -n 4 | while IFS= read -r l; do np_result libline "$l"; done
np_result libs.before $(np_numa_kb $1 '""" + LIBS + r"""')
np_wait_for 300 placed_all $kids
# (each Placed line is logged when that move ended)
sleep 5
for c in $kids; do
	np_result child $c "$(pprop $c State)" "$(pprop $c TargetNodes | tr ' ' ,)"
	np_result decision $c "$(pprop $c Decision)"
done
np_result shared.after $(np_numa_kb $w 'zero')
np_result libs.after $(np_numa_kb $1 '""" + LIBS + r"""')
np_result pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
np_result migrated $(mprop MigratedBytes)
np_result failed $(mprop MigrationFailedPages)
grep -E "Placing|Placed|group" /tmp/numaplaced.log | while IFS= read -r l; do np_result log "$l"; done
np_stop_numaplaced
"""


def kb_of(words):
    return {int(k): int(v) for k, v in (x.split("=") for x in words)}


def main(cg):
    vm = npvm.VM(f"group-shared-{cg}", TOPO, cgroup=cg)
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", CONF)
    res = vm.run(SCRIPT, timeout=600)
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()
    kids = (res.get("children") or "").split()
    t.eq(len(kids), 4, f"four workers forked ({kids})")
    children = {}
    for line in res.all("child"):
        f = line.split()
        if len(f) >= 3 and f[0].isdigit():
            children[f[0]] = (f[1], [int(x) for x in f[2].split(",")[1:]])
    decisions = {}
    for line in res.all("decision"):
        pid, _, text = line.partition(" ")
        decisions[pid] = text
    targets = set()
    for c in kids:
        st, nodes = children.get(c, ("?", []))
        t.eq(st, "placed", f"worker {c} is placed")
        t.eq(len(nodes), 1, f"worker {c} on one node ({nodes})")
        targets.add(tuple(nodes))
        d = decisions.get(c, "")
        t.check(d.startswith("with the 4 processes of its group shm:"), f"worker {c}: one group of four ({d!r})")
    t.eq(len(targets), 1, f"one target for the group ({sorted(targets)})")
    node = next(iter(targets))[0] if len(targets) == 1 and next(iter(targets)) else None
    before = kb_of((res.get("shared.before") or "").split())
    after = kb_of((res.get("shared.after") or "").split())
    total = sum(after.values())
    share = after.get(node, 0) / total if total and node is not None else 0.0
    t.check(total >= 400 * 1024 * 0.99 and share >= 0.95,
            f"{share:.1%} of the {total} kB of shared memory on node {node}")
    minimum = sum(v for n, v in before.items() if n != node)
    minimum += sum(v for n, v in kb_of((res.get("own.before") or "").split()).items() if n != node)
    for line in res.all("child.own.before"):
        minimum += sum(v for n, v in kb_of(line.split()[1:]).items() if n != node)
    moved = (res.int("pgmigrate") or 0) * 4
    ratio = moved / minimum if minimum else float("nan")
    t.check(minimum > 0 and moved <= minimum * 1.05,
            f"pages moved {moved} kB, at most 1.05 times the minimum {minimum} kB (ratio {ratio:.3f})")
    lb, la = kb_of((res.get("libs.before") or "").split()), kb_of((res.get("libs.after") or "").split())
    if cg == "v1":
        t.check(sum(lb.values()) > 0 and lb == la,
                f"the shared libraries' pages did not move ({lb} -> {la})")
    else:
        print(f"  ..   v2: the shared libraries' pages {lb} -> {la} (the kernel migrates a process's every page "
              f"when its cpuset.mems narrow)")
    print(f"  ..   moved {moved} kB, minimum {minimum} kB (ratio {ratio:.3f}); MigratedBytes "
          f"{res.get('migrated')}, MigrationFailedPages {res.get('failed')}")
    for line in res.all("libline"):
        print(f"  ..   {line}")
    for line in res.all("log"):
        print(f"  ..   {line}")
    return t.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("shared-v1", "shared-v2"):
        sys.exit("usage: test_group.py shared-v1|shared-v2")
    npvm.run_test(f"group-{sys.argv[1]}", lambda: main(sys.argv[1].split("-")[1]))
