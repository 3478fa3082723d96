#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""vm suite: the workload scenarios on 4 nodes (one boot, cgroup v1), plus
the 4-node topology smoke checks:

- np-workload interleaves 64 MB over nodes 0-3: numa_maps shows ~16 MB each
- bound to node 2: everything on node 2
- `migratepages PID 2 3` moves it to node 3 and /proc/vmstat
  pgmigrate_success grows by the number of pages moved
- per-node chunks (--per-node 0-3 --mb-per-node 32): 32 MB on each node
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=512, cpus=1)
CGROUP = "v1"
MB = 64

SCRIPT = npvm.SMOKE_SCRIPT + r"""
# --- interleave 64 MB over 0-3
pid=$(np_start_workload /tmp/il --interleave 0-3 --mb 64 --no-thp --report) || exit 1
np_result il.kb $(np_numa_kb $pid interleave:)
np_result il.all $(np_numa_kb $pid)
np_result il.self $(sed -n 's/^PAGES //p' /tmp/il.out)
kill $pid

# --- bind 64 MB to node 2, then migratepages 2 -> 3
pid=$(np_start_workload /tmp/bind --bind 2 --mb 64 --report) || exit 1
np_result bind.kb $(np_numa_kb $pid)
np_result bind.only $(np_numa_kb $pid bind:)
np_result bind.self $(sed -n 's/^PAGES //p' /tmp/bind.out)
before=$(np_vmstat pgmigrate_success)
np_capture migratepages migratepages $pid 2 3
after=$(np_vmstat pgmigrate_success)
np_result moved.kb $(np_numa_kb $pid)
np_result moved.only $(np_numa_kb $pid bind:)
np_result pgmigrate_success.delta $((after - before))
kill -USR1 $pid
np_wait_for 10 sh -c "[ \$(grep -c '^PAGES' /tmp/bind.out) -ge 2 ]"
np_result moved.self $(sed -n 's/^PAGES //p' /tmp/bind.out | tail -n 1)
kill $pid

# --- one 32 MB chunk per node, one sweeping thread per node
pid=$(np_start_workload /tmp/pn --per-node 0-3 --mb-per-node 32 --threads 4 --sweep) || exit 1
np_result pn.kb $(np_numa_kb $pid bind:)
np_result pn.threads $(ls /proc/$pid/task | wc -l)
kill $pid
"""


def main():
    vm = npvm.VM("workload-4", TOPO, cgroup=CGROUP)
    vm.add_commands("numactl", "migratepages")
    vm.add_workload()
    res = vm.run(SCRIPT, timeout=300)
    t = npvm.Checker(res)
    if t.require_completed():
        npvm.check_smoke(t, res, TOPO, CGROUP)
        mb = 1024
        pages_per_mb = 256
        # interleave (no THP, so page by page): exactly 16 MB per node in
        # the interleaved mapping, ~16 MB in the whole process
        il = res.node_kb("il.kb")
        il_all = res.node_kb("il.all")
        il_self = res.kv("il.self")
        for n in range(4):
            t.eq(il.get(n), 16 * mb, f"interleave: kB on node {n} (interleaved mapping)")
            # + the shared libraries np-workload maps (~2 MB, on node 0)
            t.near(il_all.get(n), 16 * mb, 3 * mb, f"interleave: kB on node {n} (whole process)")
            t.eq(il_self.get(str(n)), 16 * pages_per_mb, f"interleave: np-workload's own count, node {n}")
        # bind to node 2
        b = res.node_kb("bind.kb")
        t.near(b.get(2), MB * mb, 2 * mb, "bind 2: kB on node 2")
        # the shared libraries' page cache (~2 MB) lies wherever it was read
        t.check(sum(v for k, v in b.items() if k != 2) < 3 * mb,
                f"bind 2: under 3 MB of the process outside node 2 ({b})")
        t.eq(res.node_kb("bind.only"), {0: 0, 1: 0, 2: MB * mb, 3: 0}, "bind 2: the bound mapping")
        t.eq(res.kv("bind.self").get("2"), MB * pages_per_mb, "bind 2: np-workload's own count, node 2")
        # migratepages 2 -> 3
        t.eq(res.get("migratepages.rc"), "0", "migratepages exit status")
        m = res.node_kb("moved.kb")
        t.check(m.get(2, 0) < mb, f"after migratepages: node 2 empty ({m.get(2)} kB)")
        # what left node 2 (the 64 MB, and library pages that were there
        # and mapped by this process only) arrived on node 3
        t.near(m.get(3), b.get(3, 0) + b.get(2, 0) - m.get(2, 0), 64,
               "after migratepages: kB on node 3")
        t.eq(res.node_kb("moved.only"), {0: 0, 1: 0, 2: 0, 3: MB * mb}, "after migratepages: the bound mapping")
        t.eq(res.kv("moved.self").get("3"), MB * pages_per_mb, "after migratepages: np-workload's own count, node 3")
        moved_pages = (b.get(2, 0) - m.get(2, 0)) // 4
        delta = res.int("pgmigrate_success.delta")
        t.eq(delta, moved_pages, "pgmigrate_success delta == pages moved off node 2")
        # per-node chunks
        pn = res.node_kb("pn.kb")
        for n in range(4):
            t.eq(pn.get(n), 32 * mb, f"per-node 32 MB: kB on node {n} (bound chunks)")
        t.eq(res.int("pn.threads"), 5, "per-node: main thread + 4 workers")
    return t.finish()


if __name__ == "__main__":
    npvm.run_test("workload-4", main)
