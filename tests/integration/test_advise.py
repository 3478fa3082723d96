#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Advice for jobs not started yet (issue 8): Advise() on the bus,
`numaplaced --advise CPUS:MB`, and the `numad -w` compatibility command,
checked the way libvirt reads numad: it runs `numad -w VCPUS:MB`, fails the
guest's start on a non-zero exit, and parses standard output as one node
list (virBitmapParse: "2-3,6", a trailing newline allowed)."""
import os
import re
import subprocess
import sys
import tempfile

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


class Advise(BusTestCase):
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

    def test_daemon_and_cli_agree(self):
        root = os.path.join(nptest.FIXTURES, "8node")
        self.start(CONF, root=root)
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


if __name__ == "__main__":
    nptest.main()
