#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Seen from the fleet: the metrics file read by the real
prometheus-node-exporter (textfile collector) and checked by promtool, the
journal entries the daemon sends (captured from sd_journal_send() on a test
socket), and `numaplaced --status` against busctl."""
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import nptest  # noqa: E402
from nptest import DAEMON, FIXTURES, MGR, SRC  # noqa: E402

HOSTILE = 'a) (b "c\\'  # 9 bytes: parentheses, space, quote, backslash

FAMILIES = [
    "numaplaced_info", "numaplaced_scans_total", "numaplaced_last_scan_duration_seconds",
    "numaplaced_cpu_seconds_total", "numaplaced_node_cpus_busy", "numaplaced_node_cpus",
    "numaplaced_node_memory_total_bytes", "numaplaced_node_memory_free_bytes", "numaplaced_migrated_bytes_total",
    "numaplaced_migration_calls_total", "numaplaced_migration_failed_pages_total", "numaplaced_processes",
    "numaplaced_process_memory_bytes", "numaplaced_process_locality_ratio", "numaplaced_placements_total",
    "numaplaced_config_reload_errors_total",
]


def parse_exposition(text):
    """{name: [(labels, value)]} from the text format, label escapes undone."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        i = 0
        while i < len(line) and line[i] not in "{ ":
            i += 1
        name, labels = line[:i], {}
        if i < len(line) and line[i] == "{":
            i += 1
            while line[i] != "}":
                eq = line.index("=", i)
                key = line[i:eq].strip(", ")
                assert line[eq + 1] == '"', line
                j, val = eq + 2, []
                while line[j] != '"':
                    if line[j] == "\\":
                        val.append({"n": "\n", "\\": "\\", '"': '"'}[line[j + 1]])
                        j += 2
                    else:
                        val.append(line[j])
                        j += 1
                labels[key] = "".join(val)
                i = j + 1
                if line[i] == ",":
                    i += 1
            i += 1
        value = float(line[i:].split()[0])
        out.setdefault(name, []).append((labels, value))
    return out


def one(metrics, name, **labels):
    found = [v for lab, v in metrics.get(name, []) if all(lab.get(k) == str(x) for k, x in labels.items())]
    assert len(found) == 1, "%s%s: %r" % (name, labels, found)
    return found[0]


def managed_objects(bus):
    """GetManagedObjects as JSON (busctl -j)."""
    r = bus.busctl("--json=short", "call", MGR[0], MGR[1], "org.freedesktop.DBus.ObjectManager",
                   "GetManagedObjects")
    objs = json.loads(r.stdout)["data"][0]
    return {path: {iface: {k: v["data"] for k, v in props.items()} for iface, props in ifaces.items()}
            for path, ifaces in objs.items()}


def spawn_named(name, mb=0):
    """A real process whose comm is `name`, with `mb` MiB touched."""
    code = ("import ctypes,sys,time\n"
            "ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)\n"
            "b = bytearray(int(sys.argv[2]) << 20)\n"
            "for i in range(0, len(b), 4096): b[i] = 1\n"
            "print('ready', flush=True)\n"
            "time.sleep(3600)\n")
    p = subprocess.Popen([sys.executable, "-c", code, name, str(mb)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def stop_child(p):
    p.kill()
    p.wait()
    p.stdout.close()


def wait_for(pred, timeout=30, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


class Exporter:
    """The real prometheus-node-exporter, only its textfile collector, on
    127.0.0.1 (a free port)."""

    def __init__(self, directory):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.log = open(os.path.join(directory, "..", "node-exporter.log"), "w")
        self.proc = subprocess.Popen(["prometheus-node-exporter", "--web.listen-address=127.0.0.1:%d" % self.port,
                                      "--collector.disable-defaults", "--collector.textfile",
                                      "--collector.textfile.directory=" + directory],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(self._up, 30, "node_exporter to listen")

    def _up(self):
        try:
            self.scrape()
            return True
        except OSError:
            return False

    def scrape(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=5) as r:
            return r.read().decode()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


class Metrics(nptest.BusTestCase):
    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix="np-metrics-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.textdir = os.path.join(self.dir, "textfile")
        os.mkdir(self.textdir)
        self.file = os.path.join(self.textdir, "numaplaced.prom")

    def read_file(self):
        with open(self.file) as f:
            return f.read()

    def promtool(self):
        r = subprocess.run(["promtool", "check", "metrics"], input=self.read_file(), text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(r.returncode, 0, "promtool check metrics:\n" + r.stdout)

    def test_fixture_values_match_busctl(self):
        """On a fixture root (values that do not move): the families are
        there and equal what busctl reports, through node_exporter."""
        d = self.start("[Daemon]\nScanIntervalSec=1\nMetricsFile=%s\n[Placement]\nMinProcessCPU=0\n" % self.file,
                       root=os.path.join(FIXTURES, "2node"))
        wait_for(lambda: os.path.exists(self.file), 30, "the metrics file")
        exp = Exporter(self.textdir)
        self.addCleanup(exp.stop)
        self.promtool()
        scraped = parse_exposition(exp.scrape())
        objs = managed_objects(self.bus)
        for fam in FAMILIES:
            self.assertIn(fam, scraped, fam)
        # node_exporter itself says the file was read without error
        self.assertEqual(one(scraped, "node_textfile_scrape_error"), 0)

        nodes = {p: o["org.numaplaced1.Node"] for p, o in objs.items() if "org.numaplaced1.Node" in o}
        self.assertEqual(len(nodes), 2)
        for n in nodes.values():
            self.assertEqual(one(scraped, "numaplaced_node_memory_total_bytes", node=n["Id"]), n["MemoryTotalBytes"])
            self.assertEqual(one(scraped, "numaplaced_node_memory_free_bytes", node=n["Id"]), n["MemoryFreeBytes"])
            self.assertEqual(one(scraped, "numaplaced_node_cpus", node=n["Id"]), n["CPUCapacity"])
        procs = {o["org.numaplaced1.Process"]["Pid"]: o["org.numaplaced1.Process"] for o in objs.values()
                 if "org.numaplaced1.Process" in o}
        self.assertTrue(procs, "the fixture has significant processes")
        for pid, p in procs.items():
            self.assertEqual(one(scraped, "numaplaced_process_memory_bytes", pid=pid), p["MemoryBytes"])
            self.assertAlmostEqual(one(scraped, "numaplaced_process_locality_ratio", pid=pid), p["Locality"],
                                   places=6)
            comms = [lab["comm"] for lab, _ in scraped["numaplaced_process_memory_bytes"] if lab["pid"] == str(pid)]
            self.assertEqual(comms, [p["Comm"]])
        by_state = sum(v for _, v in scraped["numaplaced_processes"])
        self.assertEqual(by_state, len(procs))
        mgr = {k: self.bus.get(k) for k in ("MigratedBytes", "MigrationCalls", "Scans", "Backend", "Mode")}
        self.assertEqual(one(scraped, "numaplaced_migrated_bytes_total"), mgr["MigratedBytes"])
        self.assertEqual(one(scraped, "numaplaced_migration_calls_total"), mgr["MigrationCalls"])
        self.assertLessEqual(one(scraped, "numaplaced_scans_total"), mgr["Scans"])
        self.assertGreaterEqual(one(scraped, "numaplaced_scans_total"), 1)
        self.assertEqual(one(scraped, "numaplaced_info", backend=mgr["Backend"], mode=mgr["Mode"]), 1)

        # a rejected reload is counted
        with open(d.config, "a") as f:
            f.write("Bogus=1\n")
        self.bus.call("Reload", check=False)
        wait_for(lambda: one(parse_exposition(self.read_file()), "numaplaced_config_reload_errors_total") == 1, 30,
                 "the reload error in the metrics")

        # the cap: only the biggest process keeps series of its own
        with open(d.config, "w") as f:
            f.write("[Daemon]\nScanIntervalSec=1\nMetricsFile=%s\nMetricsMaxProcesses=1\n"
                    "[Placement]\nMinProcessCPU=0\n" % self.file)
        self.bus.call("Reload")
        biggest = max(procs.values(), key=lambda p: p["MemoryBytes"])

        def capped():
            m = parse_exposition(self.read_file())
            series = m.get("numaplaced_process_memory_bytes", [])
            return m if len(series) == 1 else None
        m = wait_for(capped, 30, "MetricsMaxProcesses=1 to apply")
        self.assertEqual(m["numaplaced_process_memory_bytes"][0][0]["pid"], str(biggest["Pid"]))
        self.assertEqual(one(m, "numaplaced_process_series_left_out"), len(procs) - 1)

        # stop: the file goes with the daemon
        self.assertEqual(d.stop(), 0)
        self.assertFalse(os.path.exists(self.file))
        self.assertEqual([n for n in os.listdir(self.textdir)], [])

    def test_hostile_comm_on_this_machine(self):
        """A real process named 'a) (b "c\\' keeps its name through the file,
        promtool and node_exporter."""
        child = spawn_named(HOSTILE, 8)
        self.addCleanup(stop_child, child)
        self.start("[Daemon]\nScanIntervalSec=1\nMetricsFile=%s\n" % self.file)
        self.bus.call("Include", "u", child.pid)

        def has_child():
            if not os.path.exists(self.file):
                return None
            m = parse_exposition(self.read_file())
            s = [lab for lab, _ in m.get("numaplaced_process_memory_bytes", []) if lab["pid"] == str(child.pid)]
            return s[0] if s else None
        lab = wait_for(has_child, 30, "the included process in the metrics file")
        self.assertEqual(lab["comm"], HOSTILE)
        self.promtool()
        exp = Exporter(self.textdir)
        self.addCleanup(exp.stop)
        scraped = parse_exposition(exp.scrape())
        self.assertEqual(one(scraped, "node_textfile_scrape_error"), 0)
        labs = [lab for lab, _ in scraped["numaplaced_process_memory_bytes"] if lab["pid"] == str(child.pid)]
        self.assertEqual([lab["comm"] for lab in labs], [HOSTILE])
        rss = one(scraped, "numaplaced_process_memory_bytes", pid=child.pid)
        self.assertGreaterEqual(rss, 8 << 20)
        # this machine's node: what busctl says
        node = self.bus.get("MemoryTotalBytes", path="/org/numaplaced1/node/0", iface="org.numaplaced1.Node")
        self.assertEqual(one(scraped, "numaplaced_node_memory_total_bytes", node=0), node)
        cap = self.bus.get("CPUCapacity", path="/org/numaplaced1/node/0", iface="org.numaplaced1.Node")
        self.assertEqual(one(scraped, "numaplaced_node_cpus", node=0), cap)

    def test_unwritable_directory(self):
        """A directory that does not exist: one warning naming the file, the
        daemon goes on, and writes once the directory is there."""
        missing = os.path.join(self.dir, "later", "numaplaced.prom")
        d = self.start("[Daemon]\nScanIntervalSec=0.2\nMetricsFile=%s\n" % missing)
        wait_for(lambda: self.bus.get("Scans") >= 5, 30, "5 scans")
        self.assertTrue(d.alive())
        warnings = [l for l in d.stderr().splitlines() if "Metrics not written" in l]
        self.assertEqual(len(warnings), 1, d.stderr())
        self.assertIn(missing, warnings[0])
        os.mkdir(os.path.dirname(missing))
        wait_for(lambda: os.path.exists(missing), 30, "the metrics file once its directory exists")
        wait_for(lambda: "Metrics written to %s again" % missing in d.stderr(), 10, "the recovery line")


class Status(nptest.BusTestCase):
    def status(self, *args, user=None):
        cmd = [DAEMON, "--status"] + list(args)
        if user is not None:
            cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
        return subprocess.run(cmd, env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)

    def test_rows_match_busctl(self):
        for fixture in ("2node", "4node", "sparse"):
            with self.subTest(fixture=fixture):
                d = nptest.Daemon(self.bus, "[Daemon]\nScanIntervalSec=1\n[Placement]\nMinProcessCPU=0\n",
                                  root=os.path.join(FIXTURES, fixture))
                try:
                    self.check_rows(d)
                finally:
                    d.cleanup()

    def test_group_rows(self):
        """Two processes of one podman container (a copy of 4node, bigdb
        cloned as 4343, both in a libpod scope): one group in the table
        and the JSON, equal to its Group object."""
        root = tempfile.mkdtemp(prefix="np-status-group-")
        try:
            shutil.copytree(os.path.join(FIXTURES, "4node"), root, dirs_exist_ok=True, symlinks=True)
            shutil.copytree(os.path.join(root, "proc", "4242"), os.path.join(root, "proc", "4343"))
            stat = os.path.join(root, "proc", "4343", "stat")
            with open(stat) as f:
                text = f.read()
            with open(stat, "w") as f:
                f.write("4343" + text[len("4242"):])
            for pid in ("4242", "4343"):
                with open(os.path.join(root, "proc", pid, "cgroup"), "w") as f:
                    f.write("0::/machine.slice/libpod-c1.scope/container\n")
            d = nptest.Daemon(self.bus, "[Daemon]\nScanIntervalSec=1\n[Placement]\nMinProcessCPU=0\n", root=root)
            try:
                self.check_rows(d)
                objs = managed_objects(self.bus)
                groups = [o["org.numaplaced1.Group"] for o in objs.values() if "org.numaplaced1.Group" in o]
                ours = [g for g in groups if g["Name"] == "/machine.slice/libpod-c1.scope"]
                self.assertEqual(len(ours), 1, groups)
                g = ours[0]
                self.assertEqual((g["Kind"], sorted(g["Members"])), ("cgroup", [4242, 4343]))
                js = json.loads(self.status("--json").stdout)
                self.assertEqual(js["groups"], [{
                    "name": g["Name"], "kind": "cgroup", "members": g["Members"], "memory_bytes": g["MemoryBytes"],
                    "locality": js["groups"][0]["locality"], "target_nodes": g["TargetNodes"], "state": g["State"]}])
                self.assertAlmostEqual(js["groups"][0]["locality"], g["Locality"], places=4)
                out = self.status().stdout
                self.assertIn("Placement groups of more than one process", out)
                row = [l for l in out.splitlines() if l.endswith("/machine.slice/libpod-c1.scope")
                       and l.startswith("cgroup")]
                self.assertEqual(len(row), 1, out)
                self.assertEqual(row[0].split()[1], ",".join(str(x) for x in g["Members"]))
            finally:
                d.cleanup()
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def check_rows(self, d):
        wait_for(lambda: self.bus.get("Scans") >= 2, 30, "two scans")
        objs = managed_objects(self.bus)
        nodes = sorted((o["org.numaplaced1.Node"] for o in objs.values() if "org.numaplaced1.Node" in o),
                       key=lambda n: n["Id"])
        procs = sorted((o["org.numaplaced1.Process"] for o in objs.values()
                        if "org.numaplaced1.Process" in o), key=lambda p: p["Pid"])
        # each process's Group object lists it; the status names groups of
        # more than a process by the group's Name
        group_name = {}
        for p in procs:
            g = objs.get(p["Group"], {}).get("org.numaplaced1.Group")
            if p["Group"] != "/":
                self.assertTrue(p["Group"].startswith("/org/numaplaced1/group/"), p["Group"])
                self.assertIsNotNone(g, f"{p['Pid']}: no object {p['Group']}")
                self.assertIn(p["Pid"], g["Members"])
            group_name[p["Pid"]] = g["Name"] if g and g["Kind"] != "process" else ""

        # JSON: every node and process, values equal to busctl's
        r = self.status("--json", user=65534)  # no root needed
        self.assertEqual(r.returncode, 0, r.stderr)
        js = json.loads(r.stdout)
        self.assertEqual([n["id"] for n in js["nodes"]], [n["Id"] for n in nodes])
        for jn, n in zip(js["nodes"], nodes):
            self.assertEqual(jn["memory_total_bytes"], n["MemoryTotalBytes"])
            self.assertEqual(jn["memory_free_bytes"], n["MemoryFreeBytes"])
            self.assertEqual(jn["cpus"], n["CPUs"])
            self.assertAlmostEqual(jn["cpu_capacity"], n["CPUCapacity"], places=4)
        self.assertEqual([p["pid"] for p in js["processes"]], [p["Pid"] for p in procs])
        for jp, p in zip(js["processes"], procs):
            self.assertEqual(jp["comm"], p["Comm"])
            self.assertEqual(jp["memory_bytes"], p["MemoryBytes"])
            self.assertEqual(jp["state"], p["State"])
            self.assertEqual(jp["group"], group_name[p["Pid"]])
            self.assertEqual(jp["target_nodes"], p["TargetNodes"])
            self.assertAlmostEqual(jp["locality"], p["Locality"], places=4)
            self.assertEqual(jp["memory_per_node"], {str(n): b for n, b in p["MemoryPerNode"]})

        # the table: a row per process (pid, comm, MiB per node,
        # state) and a row per node
        r = self.status()
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        for p in procs:
            row = [l for l in lines if l.split() and l.split()[0] == str(p["Pid"])]
            self.assertEqual(len(row), 1, r.stdout)
            self.assertIn(p["Comm"][:16], row[0])
            # the last two cells: State, then Group ("-" for none)
            self.assertEqual(row[0].split()[-2:], [p["State"], group_name[p["Pid"]] or "-"], row[0])
            per = dict((n, b) for n, b in p["MemoryPerNode"])
            cells = row[0][8 + 1 + 16:].split()
            for i, n in enumerate(nodes):
                self.assertAlmostEqual(float(cells[i]), per.get(n["Id"], 0) / 1048576, places=1)
            self.assertAlmostEqual(float(cells[len(nodes)]), p["MemoryBytes"] / 1048576, places=1)
        node_rows = lines[lines.index("Nodes") + 2:]
        self.assertEqual([int(l.split()[0]) for l in node_rows], [n["Id"] for n in nodes])
        self.assertTrue(lines[0].startswith("numaplaced "), lines[0])
        self.assertIn("backend %s" % self.bus.get("Backend"), lines[0])

    def test_no_daemon(self):
        r = self.status()
        self.assertEqual(r.returncode, 1)
        self.assertIn("no daemon is running", r.stderr)
        self.assertEqual(r.stdout, "")
        r = subprocess.run([DAEMON, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 2)


class Journal(nptest.BusTestCase):
    """The entries the daemon sends to the journal: a datagram socket of the
    test's, bind-mounted over /run/systemd/journal in a mount namespace of the
    daemon's own (the machine's /run/systemd/journal is not touched)."""

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix="np-journal-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(os.path.join(self.dir, "socket"))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.addCleanup(self.sock.close)
        self.entries = []
        if not os.path.isdir("/run/systemd/journal"):
            os.makedirs("/run/systemd/journal")
            self.addCleanup(os.rmdir, "/run/systemd/journal")
        with open(os.path.join(SRC, "systemd", "numaplaced.catalog")) as f:
            self.catalog = {l[3:].strip() for l in f if l.startswith("-- ")}

    def daemon(self, config="[Daemon]\nScanIntervalSec=1\n", **kw):
        prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                  'mount --bind "$0" /run/systemd/journal && exec "$@"', self.dir]
        return self.start(config, prefix=prefix, journal=True, **kw)

    def drain(self):
        self.sock.setblocking(False)
        while True:
            try:
                data = self.sock.recv(1 << 20)
            except BlockingIOError:
                break
            self.entries.append(parse_native(data))
        return self.entries

    def find(self, message_id, **fields):
        def match():
            for e in self.drain():
                if e.get("MESSAGE_ID") == message_id and all(e.get(k) == str(v) for k, v in fields.items()):
                    return e
            return None
        return wait_for(match, 30, "journal entry %s %r" % (message_id, fields))

    def test_fields(self):
        child = spawn_named(HOSTILE, 4)
        self.addCleanup(stop_child, child)
        d = self.daemon()
        # nothing went to stderr but what came before the journal was chosen
        self.assertTrue(any(e.get("MESSAGE", "").startswith("numaplaced") for e in self.drain()), self.entries)

        self.bus.call("Place", "uau", child.pid, 1, 0)
        placed = self.find("5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b01", PID=child.pid)
        self.assertEqual(placed["COMM"], HOSTILE)
        self.assertEqual(placed["TO"], "0")
        self.assertEqual(placed["FROM"], "0")
        self.assertEqual(placed["REASON"], "manual")
        self.assertEqual(placed["BYTES"], "0")  # one node: nothing to move
        int(placed["USEC"])
        self.assertEqual(placed["PRIORITY"], "6")

        self.bus.call("Forget", "u", child.pid)
        released = self.find("5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b04", PID=child.pid)
        self.assertEqual(released["COMM"], HOSTILE)
        self.assertEqual(released["FROM"], "0")

        with open(d.config, "a") as f:
            f.write("Bogus=1\n")
        self.bus.call("Reload", check=False)
        rejected = self.find("5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b03")
        self.assertEqual(rejected["CONFIG_FILE"], d.config)
        self.assertEqual(rejected["PRIORITY"], "3")

        # an unclean stop, then a new start recovers: one summary entry and
        # one entry per process put back
        with open(d.config, "w") as f:
            f.write("[Daemon]\nScanIntervalSec=1\n")
        self.bus.call("Reload")
        self.bus.call("Place", "uau", child.pid, 1, 0)
        self.find("5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b01", PID=child.pid)
        d.stop(sig=signal.SIGKILL)
        d2 = self.daemon(runtime=d.runtime)
        rec = self.find("5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b05")
        self.assertEqual(rec["PROCESSES"], "1")
        self.assertTrue(rec["STATE_FILE"].startswith(d.runtime), rec)
        self.find("5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b04", PID=child.pid, COMM=HOSTILE)
        d2.stop()

        # every MESSAGE_ID the daemon sent has a catalog entry
        ids = {e["MESSAGE_ID"] for e in self.entries if "MESSAGE_ID" in e}
        self.assertTrue(ids)
        self.assertEqual(ids - self.catalog, set())
        # and nothing was lost to stderr: the log file holds no message lines
        self.assertNotIn("Placed", d.stderr())


def parse_native(data):
    """One datagram of the journal's native protocol: KEY=value lines, or
    KEY, newline, a little-endian 64-bit length, the value and a newline."""
    e, i = {}, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            i = nl + 1
        else:
            k = line
            (n,) = struct.unpack_from("<Q", data, nl + 1)
            v = data[nl + 9:nl + 9 + n]
            i = nl + 9 + n + 1
        e[k.decode()] = v.decode("utf-8", "replace")
    return e


if __name__ == "__main__":
    nptest.main()
