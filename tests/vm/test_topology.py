#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""vm suite: topology smoke tests.  One boot per variant; inside the VM
`numactl -H` must show exactly the nodes, CPUs, memory sizes and distances
asked for, and the scenario's cgroup mode must be set up.

    test_topology.py 2|8|memonly|cpuonly [--list]
(the 4-node smoke checks run in the 4-node workload boot, test_workload.py)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

# variant -> (Topology, cgroup mode)
VARIANTS = {
    "2": (npvm.Topology(2, mem_mb=512, cpus=1), "v2"),
    "8": (npvm.Topology(8, mem_mb=256, cpus=1), "v2"),
    # node 2: memory only
    "memonly": (npvm.Topology(3, mem_mb=[512, 512, 256], cpus=[1, 1, 0],
                              distances=[[10, 20, 30], [20, 10, 30], [30, 30, 10]]), "v1"),
    # node 2: CPUs only (QEMU allows a node with cpus= and no memdev)
    "cpuonly": (npvm.Topology(3, mem_mb=[512, 512, 0], cpus=[1, 1, 1]), "v1"),
}


def main(variant):
    topo, cgroup = VARIANTS[variant]
    vm = npvm.VM(f"topology-{variant}", topo, cgroup=cgroup)
    vm.add_commands("numactl")
    res = vm.run(npvm.SMOKE_SCRIPT, timeout=240)
    t = npvm.Checker(res)
    if t.require_completed():
        npvm.check_smoke(t, res, topo, cgroup)
    return t.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in VARIANTS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(VARIANTS)}")
    npvm.run_test(f"topology-{sys.argv[1]}", lambda: main(sys.argv[1]))
