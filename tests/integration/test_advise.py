#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Advice for jobs not started yet (issue 8): Advise() on the bus,
`numaplaced --advise CPUS:MB`, and the `numad -w` compatibility command,
checked the way libvirt reads numad: it runs `numad -w VCPUS:MB`, fails the
guest's start on a non-zero exit, and parses standard output as one node
list (virBitmapParse: "2-3,6", a trailing newline allowed)."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import nptest  # noqa: E402
from nptest import BusTestCase  # noqa: E402

CONF = """[Daemon]
Mode=advise
ScanIntervalSec=3600
MaxScanIntervalSec=3600
"""

NODELIST = re.compile(r"^(\d+(-\d+)?)(,\d+(-\d+)?)*\n$")


def parse_nodelist(s):
    """virBitmapParse's reading of numad's output."""
    out = set()
    for part in s.strip().split(","):
        a, _, b = part.partition("-")
        out |= set(range(int(a), int(b or a) + 1))
    return out


MIB = 1 << 20


def four_roomy_nodes():
    """A copy of the 4-node fixture whose every node has room for a few
    small guests (node 3 of the original is full at TargetUtilization)."""
    d = tempfile.mkdtemp(prefix="np-4node-")
    root = os.path.join(d, "root")
    shutil.copytree(os.path.join(nptest.FIXTURES, "4node"), root, symlinks=True)
    meminfo = os.path.join(root, "sys/devices/system/node/node3/meminfo")
    with open(meminfo) as f:
        text = f.read()
    text = re.sub(r"(Node 3 MemFree: +)\d+", r"\g<1>4194304", text)
    with open(meminfo, "w") as f:
        f.write(text)
    return d, root


def reservations(bus):
    """The Manager's Reservations: [(nodes, milli-CPUs, bytes, expiry µs)]."""
    r = bus.busctl("--json=short", "get-property", *nptest.MGR, "Reservations")
    v = json.loads(r.stdout)
    assert v["type"] == "a(auttt)", v
    return [(set(n), c, b, e) for n, c, b, e in v["data"]]


def advise_nodes(out):
    sig, *vals = out.split()
    assert sig == "au", out
    return {int(v) for v in vals[1:]}


class CliCase(BusTestCase):
    def run_cli(self, *args, env_extra=None, argv0=None):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address)
        env.pop("JOURNAL_STREAM", None)
        env.update(env_extra or {})
        cmd = [argv0 or nptest.DAEMON] + list(args)
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=60)

    def numad_link(self):
        d = tempfile.mkdtemp(prefix="np-numad-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", d]))
        link = os.path.join(d, "numad")
        os.symlink(nptest.DAEMON, link)
        return link


class Advise(CliCase):
    def test_daemon_and_cli_agree(self):
        root = os.path.join(nptest.FIXTURES, "8node")
        # nothing held: the command line gets the answer the call got
        d = self.start(CONF + "[Placement]\nAdviceHoldSec=0\n", root=root)
        r = self.bus.call("Advise", "dt", 2, 1 << 30)
        sig, *vals = r.stdout.split()
        self.assertEqual(sig, "au")
        nodes = {int(v) for v in vals[1:]}
        self.assertTrue(nodes)
        # unprivileged callers may ask too
        self.bus.call("Advise", "dt", 1, 0, user=65534)
        # the command line asks the running daemon
        c = self.run_cli("--advise", "2:1024")
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertRegex(c.stdout, NODELIST)
        self.assertEqual(parse_nodelist(c.stdout), nodes)
        # numad -w through the compatibility link: the same line
        n = self.run_cli("-w", "2:1024", argv0=self.numad_link())
        self.assertEqual(n.returncode, 0, n.stderr)
        self.assertEqual(n.stdout, c.stdout)
        # more than the machine has: still a node list, exit 0 (libvirt
        # starts the guest anyway, as with numad)
        big = self.run_cli("--advise", "100000:100000000")
        self.assertEqual(big.returncode, 0, big.stderr)
        self.assertRegex(big.stdout, NODELIST)
        # ... every node with memory, and the daemon says why, in terms an
        # operator can act on
        self.assertEqual(parse_nodelist(big.stdout), set(range(8)))
        self.assertIn("asks more than the whole machine has at TargetUtilization=85%", d.stderr())
        self.assertIn("(make it smaller or raise TargetUtilization=)", d.stderr())

    def test_memory_only_and_cpu_only_nodes(self):
        # memonly: nodes 0-1 with CPUs, node 2 memory only (16 GiB, the
        # most free); cpuonly: node 1 CPUs only. An answer always holds a
        # node with CPUs and never a node without memory.
        cases = (("memonly", "1:512", lambda n: n & {0, 1} and len(n) == 1),
                 ("memonly", "2:12288", lambda n: 2 in n and n & {0, 1}),
                 ("cpuonly", "2:512", lambda n: n == {0}),
                 ("cpuonly", "6:512", lambda n: n == {0}))
        for fixture, arg, ok in cases:
            with self.subTest(fixture=fixture, arg=arg):
                root = os.path.join(nptest.FIXTURES, fixture)
                c = self.run_cli("--advise", arg, "--root", root, "--config", "/nonexistent/numaplaced.conf")
                self.assertEqual(c.returncode, 0, c.stderr)
                self.assertTrue(ok(parse_nodelist(c.stdout)), c.stdout)
                d = self.start(CONF, root=root)
                r = self.bus.call("Advise", "dt", float(arg.split(":")[0]), int(arg.split(":")[1]) * MIB)
                self.assertTrue(ok(advise_nodes(r.stdout)), r.stdout)
                d.cleanup()

    def test_no_daemon_samples_the_machine(self):
        # a bus without numaplaced: the command samples the fixture itself
        root = os.path.join(nptest.FIXTURES, "4node")
        c = self.run_cli("--advise", "1:512", "--root", root, "--config", "/nonexistent/numaplaced.conf")
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertRegex(c.stdout, NODELIST)
        online = set(range(4))
        self.assertTrue(parse_nodelist(c.stdout) <= online)
        self.assertEqual(c.stderr, "")
        # CPUs alone, no MB (numad -w CPUS)
        c2 = self.run_cli("--advise", "1", "--root", root, "--config", "/nonexistent/numaplaced.conf")
        self.assertEqual(c2.returncode, 0, c2.stderr)
        self.assertRegex(c2.stdout, NODELIST)

    def test_errors_and_exit_codes(self):
        for bad in ("", "x", "2:", ":5", "-1:5", "2:5:6", "2:-5", "nan:1", "inf"):
            c = self.run_cli("--advise", bad)
            self.assertEqual(c.returncode, 2, (bad, c.stdout, c.stderr))
            self.assertEqual(c.stdout, "", bad)
            self.assertIn("expected CPUS[:MB]", c.stderr)
        numad = self.numad_link()
        for args in (["-i", "5"], ["-p", "1"], [], ["-w"], ["-w", "1:5", "extra"]):
            c = self.run_cli(*args, argv0=numad)
            self.assertNotEqual(c.returncode, 0, (args, c.stdout))
            self.assertEqual(c.stdout, "", args)
            self.assertIn("numaplaced", c.stderr)
        c = self.run_cli("-w", "x", argv0=numad)
        self.assertEqual(c.returncode, 2)
        h = self.run_cli("-h", argv0=numad)
        self.assertEqual(h.returncode, 0)
        self.assertIn("numad -w CPUS[:MB]", h.stdout)



class Reservations(CliCase):
    """Answers hold their room (AdviceHoldSec=): concurrent calls get
    different nodes; the bus, Dump() and the expiry show it; unprivileged
    callers are bounded; a daemon that does not answer fails --advise."""

    def roomy(self):
        d, root = four_roomy_nodes()
        self.addCleanup(lambda: shutil.rmtree(d, ignore_errors=True))
        return root

    def concurrent(self, n, cpus, bytes_, user=None):
        cmd = ["busctl", "--address=" + self.bus.address, "--timeout=30", "call", *nptest.MGR, "Advise", "dt",
               str(cpus), str(bytes_)]
        if user is not None:
            cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(n)]
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
            outs.append(advise_nodes(out))
        return outs

    def test_concurrent_calls_get_different_nodes(self):
        self.start(CONF + "[Placement]\nAdviceHoldSec=3\n", root=self.roomy())
        # every change of Reservations is signalled
        log = tempfile.NamedTemporaryFile(prefix="np-monitor-", mode="w+")
        self.addCleanup(log.close)
        mon = subprocess.Popen(["busctl", "--address=" + self.bus.address, "monitor", "--json=short",
                                "--match=type='signal',member='PropertiesChanged',path='/org/numaplaced1'"],
                               stdout=log, stderr=subprocess.DEVNULL)
        self.addCleanup(mon.wait)
        self.addCleanup(mon.terminate)
        time.sleep(0.5)
        answers = self.concurrent(4, 2, 300 * MIB)
        for a in answers:
            self.assertEqual(len(a), 1, answers)
        self.assertEqual(set().union(*answers), {0, 1, 2, 3}, answers)
        # the bus shows the four, as answered
        now = int(time.monotonic() * 1e6)
        res = reservations(self.bus)
        self.assertEqual(sorted(min(r[0]) for r in res), [0, 1, 2, 3])
        for nodes, mcpu, b, expiry in res:
            self.assertEqual((mcpu, b), (2000, 300 * MIB))
            self.assertTrue(now < expiry <= now + 3 * 1000000, (now, expiry))
        dump = self.bus.call("Dump").stdout
        self.assertIn("Reservations: 4 (AdviceHoldSec=3)", dump)
        # a fifth finds no node with two CPUs left alone
        fifth = advise_nodes(self.bus.call("Advise", "dt", 2, 300 * MIB).stdout)
        self.assertGreater(len(fifth), 1)
        # they expire (no scan runs: ScanIntervalSec=3600), and an answer
        # is one node again
        deadline = time.monotonic() + 20
        while reservations(self.bus) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual(reservations(self.bus), [])
        self.assertIn("Reservations: 0", self.bus.call("Dump").stdout)
        time.sleep(0.3)
        mon.terminate()
        mon.wait()
        log.seek(0)
        changed = [line for line in log if '"Reservations"' in line]
        self.assertGreaterEqual(len(changed), 2, "no PropertiesChanged for Reservations")
        self.assertEqual(len(advise_nodes(self.bus.call("Advise", "dt", 2, 300 * MIB).stdout)), 1)

    def test_hold_off(self):
        self.start(CONF + "[Placement]\nAdviceHoldSec=0\n", root=self.roomy())
        answers = self.concurrent(3, 2, 300 * MIB)
        self.assertEqual(answers[0], answers[1])  # numad's way: nothing held
        self.assertEqual(reservations(self.bus), [])

    def test_numad_w_takes_a_reservation(self):
        self.start(CONF, root=self.roomy())
        n = self.run_cli("-w", "2:300", argv0=self.numad_link())
        self.assertEqual(n.returncode, 0, n.stderr)
        self.assertRegex(n.stdout, NODELIST)
        res = reservations(self.bus)
        self.assertEqual(len(res), 1)
        self.assertEqual(res[0][0], parse_nodelist(n.stdout))
        self.assertEqual(res[0][1:3], (2000, 300 * MIB))
        # --status shows it too, to anyone
        st = self.run_cli("--status", "--json")
        self.assertEqual(st.returncode, 0, st.stderr)
        js = json.loads(st.stdout)["reservations"]
        self.assertEqual([(set(r["nodes"]), r["cpus"], r["bytes"], r["expires_usec"]) for r in js],
                         [(res[0][0], 2.0, 300 * MIB, res[0][3])])
        table = self.run_cli("--status").stdout
        self.assertIn("Reservations held by answers of Advise()", table)
        self.assertRegex(table, r"\n%s +2\.00 +300\.0 " % re.escape(n.stdout.strip()))

    def test_unprivileged_bounded(self):
        d = self.start(CONF, root=self.roomy())
        # anyone may ask, and gets an answer; at most 4 of their answers are
        # held at once, all callers together ...
        answers = [advise_nodes(self.bus.call("Advise", "dt", 0.5, 64 * MIB, user=(65534, 1)[i % 2]).stdout)
                   for i in range(6)]
        for a in answers:
            self.assertTrue(a)
        self.assertEqual(len(reservations(self.bus)), 4)
        # ... and within a quarter of the machine (16 CPUs here)
        big = advise_nodes(self.bus.call("Advise", "dt", 5, 64 * MIB, user=65534).stdout)
        self.assertTrue(big)
        self.assertEqual(len(reservations(self.bus)), 4)
        self.assertIn("not held: unprivileged callers", d.stderr())
        # root's answers are held beyond them
        self.bus.call("Advise", "dt", 5, 64 * MIB)
        res = reservations(self.bus)
        self.assertEqual(len(res), 5)
        self.assertEqual(res[-1][1], 5000)

    def test_stopped_daemon_fails_within_the_limit(self):
        d = self.start(CONF, root=self.roomy())
        d.proc.send_signal(signal.SIGSTOP)
        self.addCleanup(lambda: d.proc.send_signal(signal.SIGCONT))
        for argv0, args in ((None, ["--advise", "2:300"]), (self.numad_link(), ["-w", "2:300"])):
            c = self.run_cli(*args, argv0=argv0)
            self.assertEqual(c.returncode, 1, (c.stdout, c.stderr))
            self.assertEqual(c.stdout, "")
            self.assertIn("did not answer Advise() within 2 s", c.stderr)


class Limits(CliCase):
    """Whatever blocks, --advise ends with status 1 and a message: libvirt
    waits for numad without a timeout."""

    def test_stopped_bus(self):
        stuck = nptest.Bus()
        self.addCleanup(stuck.stop)
        stuck.proc.send_signal(signal.SIGSTOP)
        self.addCleanup(lambda: stuck.proc.send_signal(signal.SIGCONT))
        c = self.run_cli("--advise", "2:300", env_extra={"DBUS_SYSTEM_BUS_ADDRESS": stuck.address})
        self.assertEqual(c.returncode, 1, (c.stdout, c.stderr))
        self.assertEqual(c.stdout, "")
        self.assertIn("the system bus did not accept the connection within 2 s", c.stderr)

    def test_blocked_read_hits_the_hard_limit(self):
        # no daemon: the command samples a fixture whose /proc/stat is a
        # FIFO nobody writes, so its first read never returns
        d = tempfile.mkdtemp(prefix="np-fifo-")
        self.addCleanup(lambda: shutil.rmtree(d, ignore_errors=True))
        root = os.path.join(d, "root")
        shutil.copytree(os.path.join(nptest.FIXTURES, "4node"), root, symlinks=True)
        os.unlink(os.path.join(root, "proc", "stat"))
        os.mkfifo(os.path.join(root, "proc", "stat"))
        c = self.run_cli("--advise", "2:300", "--root", root, "--config", "/nonexistent/numaplaced.conf")
        self.assertEqual(c.returncode, 1, (c.stdout, c.stderr))
        self.assertEqual(c.stdout, "")
        self.assertIn("no advice within 5 s, the limit of --advise and numad -w", c.stderr)


if __name__ == "__main__":
    nptest.main()
