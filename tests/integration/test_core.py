#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The core's structure (issue 7), seen from the bus: PropertiesChanged only
for what really changed, method calls that never run a scan, Place() whose
reply comes when its move has ended, and the documented errors."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import nptest  # noqa: E402
from nptest import BusTestCase  # noqa: E402

FAST_CONF = """[Daemon]
Mode=advise
ScanIntervalSec=0.2
MaxScanIntervalSec=0.2
[Placement]
MinProcessMemory=100M
MinProcessCPU=0
"""

SLOW_CONF = FAST_CONF.replace("ScanIntervalSec=0.2\nMaxScanIntervalSec=0.2", "ScanIntervalSec=3600\nMaxScanIntervalSec=3600")

# Manager properties an idle scan changes on a fixture root (DaemonCPUUSec
# only as an invalidation).
SCAN_PROPS = {"Scans", "LastScanTimestamp", "LastScanDurationUSec"}


class Monitor:
    """busctl monitor on the private bus, every PropertiesChanged signal."""

    def __init__(self, bus):
        self.proc = subprocess.Popen(
            ["busctl", "--address=" + bus.address, "monitor", "--json=short", "--match",
             "type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(0.5)  # let it subscribe

    def stop(self):
        self.proc.terminate()
        out = self.proc.communicate(timeout=10)[0]
        signals = []
        for line in out.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            msg = json.loads(line)
            if msg.get("member") != "PropertiesChanged":
                continue
            iface, changed, invalidated = msg["payload"]["data"]
            signals.append((msg["path"], iface, set(changed), set(invalidated)))
        return signals


class Core(BusTestCase):
    def test_idle_scans_emit_only_what_changed(self):
        self.start(FAST_CONF, root=os.path.join(nptest.FIXTURES, "4node"))
        # the first scans publish the processes and nodes: let them pass
        deadline = time.monotonic() + 20
        while self.bus.get("Scans") < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        # the monitor's window lies between before and after: scans go on
        # while busctl asks (more of them under ASan on a busy machine)
        before = self.bus.get("Scans")
        mon = Monitor(self.bus)
        s0 = self.bus.get("Scans")
        deadline = time.monotonic() + 30
        while self.bus.get("Scans") < s0 + 10 and time.monotonic() < deadline:
            time.sleep(0.1)
        s1 = self.bus.get("Scans")
        signals = mon.stop()
        after = self.bus.get("Scans")
        self.assertGreaterEqual(s1, s0 + 10)
        scans = s1 - s0
        print("%d idle scans, %d PropertiesChanged signals" % (scans, len(signals)))
        for path, iface, changed, invalidated in signals:
            # nothing of a node or a process changed on a fixture root
            self.assertEqual(path, "/org/numaplaced1", (path, iface, changed))
            self.assertEqual(iface, "org.numaplaced1.Manager")
            self.assertLessEqual(changed, SCAN_PROPS, changed)
            self.assertLessEqual(invalidated, {"DaemonCPUUSec"}, invalidated)
        # one signal per scan (give or take the window's edges), not one per property
        self.assertGreaterEqual(len(signals), scans - 1)
        self.assertLessEqual(len(signals), after - before + 1, (before, s0, s1, after))

    def test_changes_are_published(self):
        """What does change is published: a reload's Mode, Pause()."""
        d = self.start(FAST_CONF, root=os.path.join(nptest.FIXTURES, "2node"))
        mon = Monitor(self.bus)
        with open(d.config, "w") as f:
            f.write(FAST_CONF.replace("Mode=advise", "Mode=enforce"))
        self.bus.call("Reload")
        self.bus.call("Pause")
        time.sleep(0.5)
        signals = mon.stop()
        changed = set()
        for path, iface, c, inv in signals:
            if path == "/org/numaplaced1":
                changed |= c
        self.assertIn("Mode", changed)
        self.assertIn("Paused", changed)
        self.assertIn("ConfigFiles", changed)
        self.assertEqual(self.bus.get("Mode"), "enforce")

    def test_method_calls_do_not_scan(self):
        """Include/Exclude/Forget read only the process concerned: Scans counts
        the timer's scans alone (here one, at start: the timer is an hour)."""
        self.start(SLOW_CONF, root=os.path.join(nptest.FIXTURES, "2node"))
        self.assertEqual(self.bus.get("Scans"), 1)
        for method in ("Include", "Exclude", "Forget", "Include", "Forget"):
            self.bus.call(method, "u", 812)
        r = self.bus.call("Include", "u", 99999, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("No process with PID 99999", r.stderr)
        self.assertEqual(self.bus.get("Scans"), 1)
        # Include() made it a candidate at once, without a scan
        self.bus.call("Include", "u", 812)
        st = self.bus.get("State", path="/org/numaplaced1/process/812", iface="org.numaplaced1.Process")
        self.assertEqual(st, "observed")
        self.assertEqual(self.bus.get("Scans"), 1)

    def test_hugetlb_process_is_significant(self):
        """hugeapp (4node fixture: 64 MiB resident, 2 GiB of hugetlb pages,
        pools in use) reaches MinProcessMemory=300M by its huge pages:
        significant, its MemoryBytes and MemoryPerNode count them, and the
        policy never advises it off node 3, the only node whose pool holds
        its 1 GiB page."""
        self.start(FAST_CONF.replace("MinProcessMemory=100M", "MinProcessMemory=300M"),
                   root=os.path.join(nptest.FIXTURES, "4node"))
        path, iface = "/org/numaplaced1/process/6000", "org.numaplaced1.Process"
        deadline = time.monotonic() + 20
        while self.bus.get("Scans") < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.bus.get("Comm", path=path, iface=iface), "hugeapp")
        mib = 1 << 20
        self.assertEqual(self.bus.get("MemoryBytes", path=path, iface=iface), 2048 * mib + 64 * mib)
        per_node = dict(self.bus.get("MemoryPerNode", path=path, iface=iface))
        self.assertEqual(per_node, {2: 512 * mib + 32 * mib, 3: 1536 * mib + 32 * mib})
        decision = self.bus.get("Decision", path=path, iface=iface)
        target = self.bus.get("TargetNodes", path=path, iface=iface)
        print("hugeapp: %s; target %s" % (decision, target))
        self.assertTrue(not target or 3 in target, (decision, target))

    def objects(self):
        return subprocess.run(["busctl", "--address=" + self.bus.address, "tree", "--list", "org.numaplaced1"],
                              stdout=subprocess.PIPE, text=True).stdout.split()

    def test_hugetlb_looked_at_only_while_pools_in_use(self):
        """With every huge page free (a copy of 4node) nothing is in use, so
        no status is read for hugetlb pages and hugeapp stays below
        MinProcessMemory=300M; once its pools' pages are in use (the files
        written back) the next scans find its huge pages."""
        tmp = tempfile.mkdtemp(prefix="np-hugetlb-")
        self.addCleanup(shutil.rmtree, tmp, True)
        root = os.path.join(tmp, "4node")
        shutil.copytree(os.path.join(nptest.FIXTURES, "4node"), root, symlinks=True)
        pools = os.path.join(root, "sys/kernel/mm/hugepages")
        kept = {}
        for size in os.listdir(pools):
            with open(os.path.join(pools, size, "free_hugepages")) as f:
                kept[size] = f.read()
            with open(os.path.join(pools, size, "nr_hugepages")) as f:
                nr = f.read()
            with open(os.path.join(pools, size, "free_hugepages"), "w") as f:
                f.write(nr)
        self.start(FAST_CONF.replace("MinProcessMemory=100M", "MinProcessMemory=300M"), root=root)
        path, iface = "/org/numaplaced1/process/6000", "org.numaplaced1.Process"
        deadline = time.monotonic() + 20
        while self.bus.get("Scans") < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.bus.get("Comm", path="/org/numaplaced1/process/4242", iface=iface), "bigdb")
        objs = self.objects()
        self.assertNotIn(path, objs)
        for size, text in kept.items():
            with open(os.path.join(pools, size, "free_hugepages"), "w") as f:
                f.write(text)
        deadline = time.monotonic() + 20
        while path not in objs and time.monotonic() < deadline:
            time.sleep(0.2)
            objs = self.objects()
        self.assertIn(path, objs)
        self.assertEqual(self.bus.get("MemoryBytes", path=path, iface=iface), (2048 + 64) << 20)


if __name__ == "__main__":
    nptest.main()
