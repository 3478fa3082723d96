#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""vm suite: the daemon on a 4-node VM (cgroup v1).  dbus-daemon runs a
private system bus inside the VM, numaplaced runs in the foreground with
--config, and busctl must report NodeIds 0-3 and each node's CPUs and
memory."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=512, cpus=1)
CGROUP = "v1"

CONFIG = """[Daemon]
Mode=advise
ScanIntervalSec=1
MaxScanIntervalSec=2
"""

SCRIPT = r"""
np_start_dbus || exit 1
np_start_numaplaced /etc/numaplaced.conf || exit 1
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
np_capture NodeIds busctl get-property $M NodeIds
np_capture Mode busctl get-property $M Mode
for n in 0 1 2 3; do
	np_capture node$n.CPUs busctl get-property org.numaplaced1 /org/numaplaced1/node/$n org.numaplaced1.Node CPUs
	np_capture node$n.MemoryTotalBytes busctl get-property org.numaplaced1 /org/numaplaced1/node/$n org.numaplaced1.Node MemoryTotalBytes
	np_result node$n.MemTotal_kB $(awk '/MemTotal/ { print $4 }' /sys/devices/system/node/node$n/meminfo)
done
np_stop_numaplaced
"""


def main():
    vm = npvm.VM("daemon-4", TOPO, cgroup=CGROUP)
    vm.add_commands("numactl")
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/numaplaced.conf", CONFIG)
    res = vm.run(SCRIPT, timeout=300)
    t = npvm.Checker(res)
    if t.require_completed():
        t.eq(res.get("NodeIds"), "au 4 0 1 2 3", "Manager.NodeIds")
        t.eq(res.get("Mode"), 's "advise"', "Manager.Mode")
        for n in range(4):
            cpus = TOPO.cpus[n]
            t.eq(res.get(f"node{n}.CPUs"), f"au {len(cpus)} " + " ".join(map(str, cpus)),
                 f"node {n} CPUs")
            got = (res.get(f"node{n}.MemoryTotalBytes") or "").split()
            got_bytes = int(got[1]) if len(got) == 2 and got[0] == "t" else None
            kb = res.int(f"node{n}.MemTotal_kB")
            t.eq(got_bytes, kb * 1024 if kb is not None else None,
                 f"node {n} MemoryTotalBytes == node{n}/meminfo MemTotal")
            want = TOPO.mem_mb[n] << 20
            t.check(got_bytes is not None and want * 0.85 < got_bytes <= want,
                    f"node {n} MemoryTotalBytes {got_bytes} close to the {TOPO.mem_mb[n]} MB asked for")
    return t.finish()


if __name__ == "__main__":
    npvm.run_test("daemon-4", main)
