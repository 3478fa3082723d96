#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Foundation (issue 2): the real daemon on a private system bus, on fixture
roots, queried with real busctl."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(__file__))
import nptest  # noqa: E402
from nptest import MGR, BusTestCase  # noqa: E402

FIXTURE_CONF = """[Daemon]
Mode=advise
ScanIntervalSec=1
MaxScanIntervalSec=1
[Placement]
MinProcessMemory=100M
MinProcessCPU=0
"""

NODE_IFACE = "org.numaplaced1.Node"
PROC_IFACE = "org.numaplaced1.Process"


def read(root, rel):
    with open(os.path.join(root, rel)) as f:
        return f.read().strip()


def parse_list(s):
    out = []
    for part in filter(None, s.split(",")):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out


def fixture_nodes(root):
    """Expected topology, read straightforwardly from the fixture's sysfs."""
    base = "sys/devices/system/node"
    online = parse_list(read(root, base + "/online"))
    nodes = {}
    for n in online:
        mem = 0
        for line in read(root, "%s/node%d/meminfo" % (base, n)).splitlines():
            if "MemTotal:" in line:
                mem = int(line.split()[-2]) * 1024
        dist = [int(x) for x in read(root, "%s/node%d/distance" % (base, n)).split()]
        nodes[n] = {"cpus": parse_list(read(root, "%s/node%d/cpulist" % (base, n))), "mem": mem,
                    "dist": list(zip(online, dist))}
    return online, nodes


def fixture_significant(root, min_bytes=100 << 20):
    """Pids whose stat rss * 4096 >= min_bytes, kernel threads excluded."""
    pids = {}
    for e in os.listdir(os.path.join(root, "proc")):
        if not e.isdigit():
            continue
        stat = read(root, "proc/%s/stat" % e)
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        f = stat[stat.rindex(")") + 2:].split()
        flags, rss = int(f[6]), int(f[21])
        if flags & 0x00200000 or int(f[1]) == 2:
            continue
        if rss * 4096 >= min_bytes:
            pids[int(e)] = comm
    return pids


class FixtureTopology(BusTestCase):
    def check_tree(self, name):
        root = os.path.join(nptest.FIXTURES, name)
        online, nodes = fixture_nodes(root)
        self.start(FIXTURE_CONF, root=root)
        self.assertEqual(self.bus.get("NodeIds"), online)
        for n in online:
            path = "/org/numaplaced1/node/%d" % n
            self.assertEqual(self.bus.get("Id", path, NODE_IFACE), n)
            self.assertEqual(self.bus.get("CPUs", path, NODE_IFACE), nodes[n]["cpus"], "node %d" % n)
            self.assertEqual(self.bus.get("MemoryTotalBytes", path, NODE_IFACE), nodes[n]["mem"], "node %d" % n)
            self.assertEqual(self.bus.get("Distances", path, NODE_IFACE), nodes[n]["dist"], "node %d" % n)
            self.assertEqual(self.bus.get("CPUCapacity", path, NODE_IFACE), float(len(nodes[n]["cpus"])))
        self.assertEqual(self.bus.get("KernelNumaBalancing"),
                         int(read(root, "proc/sys/kernel/numa_balancing")))

    def test_2node(self):
        self.check_tree("2node")

    def test_4node(self):
        self.check_tree("4node")

    def test_8node(self):
        self.check_tree("8node")

    def test_sparse_ids(self):
        self.check_tree("sparse")

    def test_memory_only_node(self):
        self.check_tree("memonly")

    def test_cpu_only_node(self):
        self.check_tree("cpuonly")

    def test_free_memory_counts_inactive_file(self):
        root = os.path.join(nptest.FIXTURES, "4node")
        self.start(FIXTURE_CONF, root=root)
        meminfo = read(root, "sys/devices/system/node/node2/meminfo")
        kb = {m.group(1): int(m.group(2)) for m in re.finditer(r"Node \d+ (\S+):\s+(\d+) kB", meminfo)}
        self.assertEqual(self.bus.get("MemoryFreeBytes", "/org/numaplaced1/node/2", NODE_IFACE),
                         (kb["MemFree"] + kb["Inactive(file)"]) * 1024)


class FixtureProcesses(BusTestCase):
    def test_tree_lists_nodes_and_significant_processes(self):
        root = os.path.join(nptest.FIXTURES, "4node")
        online, _ = fixture_nodes(root)
        sig = fixture_significant(root)
        self.assertTrue(sig, "fixture has no significant process")
        self.start(FIXTURE_CONF, root=root)
        out = self.bus.busctl("tree", "--list", "org.numaplaced1").stdout.split()
        for n in online:
            self.assertIn("/org/numaplaced1/node/%d" % n, out)
        for pid in sig:
            self.assertIn("/org/numaplaced1/process/%d" % pid, out)
        # kernel threads and small processes are not published
        self.assertNotIn("/org/numaplaced1/process/2", out)
        self.assertNotIn("/org/numaplaced1/process/812", out)

    def test_process_properties(self):
        root = os.path.join(nptest.FIXTURES, "4node")
        self.start(FIXTURE_CONF, root=root)
        path = "/org/numaplaced1/process/4242"
        self.assertEqual(self.bus.get("Pid", path, PROC_IFACE), 4242)
        self.assertEqual(self.bus.get("Comm", path, PROC_IFACE), "bigdb")
        per_node = dict(self.bus.get("MemoryPerNode", path, PROC_IFACE))
        self.assertEqual(per_node, {0: 268435456, 1: 134217728, 2: 536870912, 3: 134217728})
        self.assertEqual(self.bus.get("MemoryBytes", path, PROC_IFACE), 1073741824)
        # State and TargetNodes from one GetAll: one consistent view. With
        # Mode=advise its follow-up scan may have advised it by now (node 2,
        # where half of its memory is); two Gets could straddle that scan
        props = json.loads(self.bus.busctl("--json=short", "call", "org.numaplaced1", path,
                                           "org.freedesktop.DBus.Properties", "GetAll", "s",
                                           PROC_IFACE).stdout)["data"][0]
        self.assertIn((props["State"]["data"], props["TargetNodes"]["data"]),
                      [("observed", []), ("advised", [2])])
        # its only thread last ran on CPU 2 (node 0): 256 MiB of 1 GiB is local
        self.assertAlmostEqual(self.bus.get("Locality", path, PROC_IFACE), 0.25, places=3)

    def test_hostile_comm_and_huge_pages(self):
        root = os.path.join(nptest.FIXTURES, "4node")
        conf = FIXTURE_CONF.replace("MinProcessMemory=100M", "MinProcessMemory=1M")
        self.start(conf, root=root)
        self.assertEqual(self.bus.get("Comm", "/org/numaplaced1/process/5151", PROC_IFACE), "a) (b c")
        per_node = dict(self.bus.get("MemoryPerNode", "/org/numaplaced1/process/6000", PROC_IFACE))
        self.assertEqual(per_node, {2: 570425344, 3: 1644167168})

    def test_processes_come_and_go(self):
        """A process appearing in and vanishing from the root gets and loses its object."""
        import shutil
        import tempfile
        tmp = tempfile.mkdtemp(prefix="np-root-")
        self.addCleanup(shutil.rmtree, tmp, True)
        root = os.path.join(tmp, "root")
        shutil.copytree(os.path.join(nptest.FIXTURES, "4node"), root, symlinks=True)
        self.start(FIXTURE_CONF, root=root)
        path = "/org/numaplaced1/process/4242"
        self.bus.get("Pid", path, PROC_IFACE)
        shutil.copytree(os.path.join(root, "proc", "4242"), os.path.join(root, "proc", "4343"))
        shutil.rmtree(os.path.join(root, "proc", "4242"))
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            # busctl fails (and says so on stdout) when an object it was
            # told of is gone by the time it introspects it: the race this
            # test makes; try again
            r = self.bus.busctl("tree", "--list", "org.numaplaced1", check=False)
            out = r.stdout.split()
            if r.returncode == 0 and "/org/numaplaced1/process/4343" in out and path not in out:
                break
            time.sleep(0.3)
        else:
            self.fail("process objects did not follow the root: %s" % out)
        r = self.bus.busctl("get-property", MGR[0], path, PROC_IFACE, "Pid", check=False)
        self.assertNotEqual(r.returncode, 0)


    def test_nodes_come_and_go(self):
        """A node going offline (and back) takes its object with it."""
        import shutil
        import tempfile
        tmp = tempfile.mkdtemp(prefix="np-root-")
        self.addCleanup(shutil.rmtree, tmp, True)
        root = os.path.join(tmp, "root")
        shutil.copytree(os.path.join(nptest.FIXTURES, "4node"), root, symlinks=True)
        online = os.path.join(root, "sys/devices/system/node/online")
        self.start(FIXTURE_CONF, root=root)

        def wait_nodes(expect):
            deadline = time.monotonic() + 15
            while self.bus.get("NodeIds") != expect and time.monotonic() < deadline:
                time.sleep(0.2)
            self.assertEqual(self.bus.get("NodeIds"), expect)

        with open(online, "w") as f:
            f.write("0-2\n")
        for n in range(4):  # distances now list three nodes
            path = os.path.join(root, "sys/devices/system/node/node%d/distance" % n)
            with open(path) as f:
                d = f.read().split()
            with open(path, "w") as f:
                f.write(" ".join(d[:3]) + "\n")
        wait_nodes([0, 1, 2])
        out = self.bus.busctl("tree", "--list", "org.numaplaced1").stdout.split()
        self.assertNotIn("/org/numaplaced1/node/3", out)
        self.assertIn("/org/numaplaced1/node/2", out)


class Access(BusTestCase):
    def test_unprivileged_reads_but_cannot_pause(self):
        self.start(FIXTURE_CONF, root=os.path.join(nptest.FIXTURES, "2node"))
        self.assertEqual(self.bus.get("NodeIds", user=65534), [0, 1])
        self.assertEqual(self.bus.get("Paused", user=65534), False)
        self.assertIn("numaplaced", self.bus.call("Dump", user=65534).stdout)
        r = self.bus.call("Pause", user=65534, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("denied", r.stderr.lower())
        self.assertEqual(self.bus.get("Paused"), False)
        for m, sig, args in (("Resume", "", ()), ("Reload", "", ()), ("Place", "uau", (1, 1, 0)),
                             ("Forget", "u", (1,)), ("Include", "u", (1,)), ("Exclude", "u", (1,))):
            r = self.bus.call(m, sig, *args, user=65534, check=False)
            self.assertNotEqual(r.returncode, 0, m)
        # root may
        self.bus.call("Pause")
        self.assertEqual(self.bus.get("Paused"), True)
        self.bus.call("Resume")
        self.assertEqual(self.bus.get("Paused"), False)


class DaemonSideCheck(BusTestCase):
    """With a bus that lets everything through, the daemon itself refuses."""
    permissive = True

    def test_daemon_refuses_unprivileged_pause(self):
        d = self.start(FIXTURE_CONF, root=os.path.join(nptest.FIXTURES, "2node"))
        r = self.bus.call("Pause", user=65534, check=False)
        self.assertNotEqual(r.returncode, 0)
        # busctl prints every AccessDenied as "Access denied"; the daemon logs who was refused
        self.assertIn("Access denied", r.stderr)
        self.assertIn("Refused Pause() from uid 65534", d.stderr())
        self.assertEqual(self.bus.get("Paused"), False)
        self.assertTrue(d.alive())

    def test_wrong_arguments_are_errors_not_crashes(self):
        d = self.start(FIXTURE_CONF, root=os.path.join(nptest.FIXTURES, "2node"))
        for args in (("Place", "u", 1), ("Place", "uau", 0, 1, 0), ("Place", "uau", 4242, 0),
                     ("Place", "uau", 4242, 1, 99), ("PlanMigration", "auau", 1, 0, 0),
                     ("Forget", "s", "x"), ("Include", "u", 999999)):
            r = self.bus.call(*args, check=False)
            self.assertNotEqual(r.returncode, 0, args)
        self.assertTrue(d.alive())
        self.assertEqual(self.bus.get("NodeIds"), [0, 1])


class Config(BusTestCase):
    def test_bad_config_at_start_exits_with_file_line(self):
        d = self.start("[Daemon]\nMode=enforce\nScanIntervalSec=fast\n", root=os.path.join(nptest.FIXTURES, "2node"),
                       wait=False)
        rc = d.proc.wait(20)
        self.assertNotEqual(rc, 0)
        self.assertRegex(d.stderr(), re.escape(d.config) + r":3:.*ScanIntervalSec.*fast")

    def check_bad_reload(self, trigger):
        root = os.path.join(nptest.FIXTURES, "2node")
        d = self.start(FIXTURE_CONF, root=root)
        self.assertEqual(self.bus.get("Mode"), "advise")
        with open(d.config, "a") as f:
            f.write("[Placement]\nTargetUtilization=150\n")
        trigger(d)
        deadline = time.monotonic() + 10
        while not self.bus.get("ConfigError") and time.monotonic() < deadline:
            time.sleep(0.1)
        err = self.bus.get("ConfigError")
        self.assertRegex(err, re.escape(d.config) + r":\d+:.*TargetUtilization.*150")
        self.assertTrue(d.alive())
        self.assertEqual(self.bus.get("Mode"), "advise")
        self.assertIn(err, d.stderr())
        # a good file is taken again and clears the error
        with open(d.config, "w") as f:
            f.write(FIXTURE_CONF.replace("ScanIntervalSec=1\nMax", "ScanIntervalSec=0.5\nMax"))
        self.bus.call("Reload")
        self.assertEqual(self.bus.get("ConfigError"), "")
        self.assertEqual(self.bus.get("ScanIntervalUSec"), 500000)

    def test_bad_config_on_sighup_keeps_old(self):
        self.check_bad_reload(lambda d: d.proc.send_signal(signal.SIGHUP))

    def test_bad_config_on_reload_method_keeps_old(self):
        def via_bus(d):
            r = self.bus.call("Reload", check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("TargetUtilization", r.stderr)
        self.check_bad_reload(via_bus)

    def test_config_files_and_dropins(self):
        d = self.start(FIXTURE_CONF, root=os.path.join(nptest.FIXTURES, "2node"), wait=False)
        d.stop()
        os.mkdir(d.config + ".d")
        with open(os.path.join(d.config + ".d", "50-mode.conf"), "w") as f:
            f.write("[Daemon]\nMode=advise\nScanIntervalSec=2\nMaxScanIntervalSec=4\n")
        d2 = self.start(config_file=d.config, root=os.path.join(nptest.FIXTURES, "2node"))
        self.assertEqual(self.bus.get("ConfigFiles"), [d.config, os.path.join(d.config + ".d", "50-mode.conf")])
        self.assertEqual(self.bus.get("ScanIntervalUSec"), 2000000)
        self.assertTrue(d2.alive())


class Lifecycle(BusTestCase):
    def test_notify_and_prompt_sigterm(self):
        d = self.start(FIXTURE_CONF, root=os.path.join(nptest.FIXTURES, "2node"))
        self.assertTrue(d.notify.wait_for("STATUS="))
        d.proc.send_signal(signal.SIGHUP)
        self.assertTrue(d.notify.wait_for("RELOADING=1"))
        t0 = time.monotonic()
        d.proc.send_signal(signal.SIGTERM)
        rc = d.proc.wait(10)  # a bound against hangs, not a timing assertion
        print("SIGTERM to exit: %.3f s" % (time.monotonic() - t0))
        self.assertEqual(rc, 0)
        self.assertTrue(d.notify.wait_for("STOPPING=1", timeout=1))

    def test_scans_advance_and_emit_changes(self):
        self.start(FIXTURE_CONF, root=os.path.join(nptest.FIXTURES, "2node"))
        mon = subprocess.Popen(["busctl", "--address=" + self.bus.address, "monitor", "--match",
                                "type='signal',interface='org.freedesktop.DBus.Properties',path='/org/numaplaced1'"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.addCleanup(mon.kill)
        s0 = self.bus.get("Scans")
        deadline = time.monotonic() + 15
        while self.bus.get("Scans") < s0 + 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertGreaterEqual(self.bus.get("Scans"), s0 + 2)
        self.assertGreater(self.bus.get("LastScanTimestamp"), 0)
        mon.terminate()
        out = mon.communicate(timeout=5)[0]
        self.assertIn("PropertiesChanged", out)
        self.assertIn("Scans", out)

    def test_once_prints_dump(self):
        r = subprocess.run([nptest.DAEMON, "--once", "--root", os.path.join(nptest.FIXTURES, "4node"),
                            "--config", "/nonexistent/numaplaced.conf"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("numaplaced", r.stdout)
        for n in range(4):
            self.assertRegex(r.stdout, r"\n  %d\s+%s" % (n, ["0-3", "4-7", "8-11", "12-15"][n]))

    def test_usage_errors(self):
        for args in (["--bogus"], ["--root", "/nonexistent"], ["--log-level", "loud"], ["extra"]):
            r = subprocess.run([nptest.DAEMON] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=30)
            self.assertEqual(r.returncode, 2, args)
            self.assertTrue(r.stderr.startswith("numaplaced:"), r.stderr)


class Introspection(BusTestCase):
    def members(self, iface_el):
        out = set()
        for el in iface_el:
            if el.tag == "method":
                args = tuple((a.get("direction", "in"), a.get("type")) for a in el.findall("arg"))
                out.add(("method", el.get("name"), args))
            elif el.tag == "property":
                out.add(("property", el.get("name"), el.get("type"), el.get("access")))
            elif el.tag == "signal":
                out.add(("signal", el.get("name"), tuple(a.get("type") for a in el.findall("arg"))))
        return out

    def test_shipped_xml_matches_daemon(self):
        self.start(FIXTURE_CONF, root=os.path.join(nptest.FIXTURES, "4node"))
        shipped = ET.parse(os.path.join(nptest.SRC, "systemd", "org.numaplaced1.xml")).getroot()
        shipped_ifaces = {i.get("name"): i for i in shipped.findall("interface")}
        # bigdb's group (a process of its own): its object once decided
        proc = "/org/numaplaced1/process/4242"
        deadline = time.monotonic() + 30
        while (group := self.bus.get("Group", path=proc, iface="org.numaplaced1.Process")) == "/":
            self.assertLess(time.monotonic(), deadline, "bigdb's Group object")
            time.sleep(0.2)
        self.assertTrue(group.startswith("/org/numaplaced1/group/"), group)
        self.assertEqual(self.bus.get("Name", path=group, iface="org.numaplaced1.Group"), "pid:4242")
        self.assertEqual(self.bus.get("Kind", path=group, iface="org.numaplaced1.Group"), "process")
        self.assertEqual(self.bus.get("Members", path=group, iface="org.numaplaced1.Group"), [4242])
        for path, name in (("/org/numaplaced1", "org.numaplaced1.Manager"),
                           ("/org/numaplaced1/node/0", "org.numaplaced1.Node"),
                           (proc, "org.numaplaced1.Process"),
                           (group, "org.numaplaced1.Group")):
            xml = self.bus.busctl("introspect", "--xml-interface", MGR[0], path).stdout
            live = {i.get("name"): i for i in ET.fromstring(xml).findall("interface")}
            self.assertIn(name, shipped_ifaces)
            self.assertEqual(self.members(live[name]), self.members(shipped_ifaces[name]), name)


if __name__ == "__main__":
    nptest.main()
