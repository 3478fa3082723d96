#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The service unit as built and installed (issue 12): its exposure score and
`systemd-analyze verify` on the installed unit, `meson install --destdir` of
the build under test (every file in its place, an edited numaplaced.conf
kept), the unit's own ExecReload command line against the real daemon on a
private bus (a good edit applies, a broken line fails the reload naming
file:line and the old config stays), and the daemon run with nothing but the
unit's CapabilityBoundingSet= placing another user's process."""
import filecmp
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import nptest  # noqa: E402
from nptest import SRC, BusTestCase  # noqa: E402

BUILD_DIR = os.environ.get("NP_BUILD_DIR", nptest.BUILD)
UNIT = os.path.join(BUILD_DIR, "systemd", "numaplaced.service")
MAX_EXPOSURE = 2.0
# capability(7) numbers of those the unit may keep
CAP_NUMBERS = {"CAP_DAC_OVERRIDE": 1, "CAP_SYS_PTRACE": 19, "CAP_SYS_NICE": 23}

CONF = """[Daemon]
Mode=enforce
Backend=cpuset
ScanIntervalSec=2
[Placement]
MinProcessMemory=1G
"""
ADVISE = CONF.replace("Mode=enforce", "Mode=advise")


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300, **kw)


def read_file(path):
    with open(path) as f:
        return f.read()


def unit_settings(path):
    """{key: [values]} of a unit file (every assignment, in order)."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;[":
                continue
            k, _, v = line.partition("=")
            out.setdefault(k, []).append(v)
    return out


def build_options():
    r = run(["meson", "introspect", BUILD_DIR, "--buildoptions"])
    if r.returncode != 0:
        raise AssertionError("meson introspect failed: " + r.stderr)
    return {o["name"]: o["value"] for o in json.loads(r.stdout)}


def pkgconfig_var(var, default):
    r = run(["pkg-config", "--variable=" + var, "systemd"])
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else default


def meson_install(destdir):
    r = run(["meson", "install", "-C", BUILD_DIR, "--no-rebuild", "--destdir", destdir])
    if r.returncode != 0:
        raise AssertionError("meson install failed (%d):\n%s\n%s" % (r.returncode, r.stdout, r.stderr))
    return r.stdout


class Installed(unittest.TestCase):
    """meson install --destdir of the build under test."""

    def setUp(self):
        self.dest = tempfile.mkdtemp(prefix="np-destdir-")
        self.addCleanup(shutil.rmtree, self.dest, True)
        opts = build_options()
        prefix = opts["prefix"]

        def under(d):
            return d if d.startswith("/") else os.path.join(prefix, d)

        self.sbindir = under(opts["sbindir"])
        self.sysconfdir = under(opts["sysconfdir"])
        self.datadir = under(opts["datadir"])
        self.mandir = under(opts["mandir"])
        self.unitdir = opts["systemdsystemunitdir"] or pkgconfig_var("systemdsystemunitdir",
                                                                     prefix + "/lib/systemd/system")
        self.catalogdir = pkgconfig_var("catalogdir", prefix + "/lib/systemd/catalog")
        self.policydir = opts["dbuspolicydir"] or os.path.join(self.datadir, "dbus-1/system.d")
        meson_install(self.dest)

    def d(self, path):
        return os.path.join(self.dest, path.lstrip("/"))

    def assert_same(self, installed, source):
        self.assertTrue(os.path.isfile(self.d(installed)), "%s not installed" % installed)
        self.assertTrue(filecmp.cmp(self.d(installed), source, shallow=False), "%s differs from %s" % (installed, source))

    def test_every_file_in_its_place(self):
        exe = self.d(os.path.join(self.sbindir, "numaplaced"))
        self.assertTrue(os.access(exe, os.X_OK), "%s not installed executable" % exe)
        r = run([exe, "--version"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_same(os.path.join(self.unitdir, "numaplaced.service"), UNIT)
        self.assert_same(os.path.join(self.policydir, "org.numaplaced1.conf"),
                         os.path.join(SRC, "systemd", "org.numaplaced1.conf"))
        self.assert_same(os.path.join(self.datadir, "dbus-1/interfaces/org.numaplaced1.xml"),
                         os.path.join(SRC, "systemd", "org.numaplaced1.xml"))
        self.assert_same(os.path.join(self.catalogdir, "numaplaced.catalog"),
                         os.path.join(SRC, "systemd", "numaplaced.catalog"))
        self.assert_same(os.path.join(self.sysconfdir, "numaplaced.conf"), os.path.join(SRC, "config", "numaplaced.conf"))
        for page in ("man8/numaplaced.8", "man5/numaplaced.conf.5", "man5/org.numaplaced1.5"):
            self.assert_same(os.path.join(self.mandir, page), os.path.join(SRC, "man", os.path.basename(page)))
        # the unit starts the installed daemon
        with open(self.d(os.path.join(self.unitdir, "numaplaced.service"))) as f:
            self.assertIn("ExecStart=%s/numaplaced\n" % self.sbindir, f.read())

    def test_reinstall_keeps_edited_config(self):
        conf = self.d(os.path.join(self.sysconfdir, "numaplaced.conf"))
        with open(conf, "a") as f:
            f.write("# edited by the operator\n[Daemon]\nScanIntervalSec=7\n")
        with open(conf) as f:
            edited = f.read()
        meson_install(self.dest)
        with open(conf) as f:
            self.assertEqual(f.read(), edited)
        # everything else is still (re)installed, and a removed config comes back
        os.unlink(conf)
        meson_install(self.dest)
        self.assertTrue(filecmp.cmp(conf, os.path.join(SRC, "config", "numaplaced.conf"), shallow=False))

    def test_verify_installed_unit(self):
        """systemd-analyze verify on the installed unit. It checks that
        ExecStart= is executable and that every Documentation= man page is
        found: the copy verified differs from the installed unit only in
        ExecStart= pointing into the DESTDIR tree, and MANPATH names the
        DESTDIR's man directory (nothing else is searched for man pages)."""
        installed = self.d(os.path.join(self.unitdir, "numaplaced.service"))
        vdir = tempfile.mkdtemp(prefix="np-verify-")
        self.addCleanup(shutil.rmtree, vdir, True)
        with open(installed) as f:
            text = f.read()
        copy = text.replace("ExecStart=/", "ExecStart=%s/" % self.dest.rstrip("/"))
        self.assertEqual(copy.count("ExecStart=" + self.dest), 1)
        path = os.path.join(vdir, "numaplaced.service")
        with open(path, "w") as f:
            f.write(copy)
        env = dict(os.environ, MANPATH=self.d(self.mandir), SYSTEMD_LOG_LEVEL="notice")
        r = run(["systemd-analyze", "verify", path], cwd=vdir, env=env)
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))


class Security(unittest.TestCase):
    def test_exposure(self):
        r = run(["systemd-analyze", "security", "--offline=yes", "--no-pager", UNIT])
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r"Overall exposure level for numaplaced\.service: (\d+\.\d+)", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        self.assertLessEqual(float(m.group(1)), MAX_EXPOSURE, r.stdout)

    def test_capabilities_and_syscalls_it_needs(self):
        s = unit_settings(UNIT)
        self.assertEqual(s["CapabilityBoundingSet"], ["CAP_SYS_NICE CAP_SYS_PTRACE CAP_DAC_OVERRIDE"])
        self.assertNotIn("AllowedMemoryNodes", s)
        self.assertNotIn("PrivateUsers", s)
        self.assertEqual(s["ProtectControlGroups"], ["no"])
        self.assertNotEqual(s.get("ProtectProc"), ["invisible"])
        # the unit's filter allows what the daemon calls, says systemd-analyze
        allowed = set()
        for v in s["SystemCallFilter"]:
            if not v.startswith("~"):
                allowed.update(v.split())
        for call in ("migrate_pages", "sched_setaffinity", "set_mempolicy", "setrlimit", "capset"):
            self.assertIn(call, allowed)
        # of @privileged only capset is back (the mover's thread drops
        # CAP_SYS_NICE with it; it can only lower its own capabilities)
        r = run(["systemd-analyze", "syscall-filter", "--no-pager", "@privileged"])
        privileged = {w.strip() for w in r.stdout.splitlines()[1:] if w.strip() and not w.strip().startswith("#")}
        self.assertIn("capset", privileged)
        self.assertEqual(allowed & privileged, {"capset"})
        r = run(["systemd-analyze", "security", "--offline=yes", "--no-pager", UNIT])
        self.assertNotRegex(r.stdout, r"@privileged is included \(e\.g\. (?!capset )")


class Reload(BusTestCase):
    """The unit's ExecReload= line, as systemd would run it, against the
    daemon on a private system bus (only the bus address differs)."""

    def setUp(self):
        super().setUp()
        lines = unit_settings(UNIT)["ExecReload"]
        self.assertEqual(len(lines), 1)
        self.cmd = shlex.split(lines[0])
        # systemd looks a bare name up in its fixed PATH, as here
        self.assertTrue(shutil.which(self.cmd[0]), self.cmd[0])

    def exec_reload(self):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address)
        return run(self.cmd, env=env)

    def mode(self):
        return self.bus.get("Mode")

    def test_good_edit_applies(self):
        d = self.start(CONF)
        self.assertEqual(self.mode(), "enforce")
        with open(d.config, "w") as f:
            f.write(ADVISE)
        r = self.exec_reload()
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(self.mode(), "advise")
        self.assertTrue(d.alive())

    def test_broken_line_fails_and_keeps_old(self):
        d = self.start(CONF)
        broken = ADVISE + "[Daemon]\nScanIntervalSec=banana\n"
        line = broken.splitlines().index("ScanIntervalSec=banana") + 1
        with open(d.config, "w") as f:
            f.write(broken)
        r = self.exec_reload()
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("%s:%d" % (d.config, line), r.stderr)
        self.assertTrue(d.alive())
        self.assertEqual(self.mode(), "enforce")
        # what the journal gets: the daemon's own log line names it too
        self.assertIn("%s:%d" % (d.config, line), d.stderr())
        # fixed again: the next reload applies
        with open(d.config, "w") as f:
            f.write(ADVISE)
        r = self.exec_reload()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.mode(), "advise")


class Capabilities(BusTestCase):
    """The daemon with only the unit's CapabilityBoundingSet= (setpriv drops
    the rest before exec, as systemd does) places a process of another user
    through real cgroupfs, keeps its state file, and releases it on stop.
    The sandbox's mount options are not applied here: the VM test runs the
    daemon under the real unit."""

    CPUSET = "/sys/fs/cgroup/cpuset"

    def test_place_other_users_process(self):
        caps = unit_settings(UNIT)["CapabilityBoundingSet"][0].split()
        bset = "-all," + ",".join("+" + c.lower()[len("cap_"):] for c in caps)
        child = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "3600"])
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        orig = read_file("/proc/%d/cgroup" % child.pid)
        d = self.start(CONF, prefix=["setpriv", "--bounding-set=" + bset, "--inh-caps=-all"])
        with open("/proc/%d/status" % d.proc.pid) as f:
            eff = [line.split()[1] for line in f if line.startswith("CapEff:")][0]
        want = sum(1 << CAP_NUMBERS[c] for c in caps)
        self.assertEqual(int(eff, 16), want, "CapEff %s is not exactly %s" % (eff, caps))
        r = self.bus.call("Place", "uau", child.pid, 1, 0)
        self.assertEqual(r.stdout.split()[0], "t")
        path = "/org/numaplaced1/process/%d" % child.pid
        self.assertEqual(self.bus.get("State", path, "org.numaplaced1.Process"), "pinned")
        self.assertIn("/numaplaced/nodes-0", read_file("/proc/%d/cgroup" % child.pid))
        # numa_maps of the other user's process was read: its memory is known
        self.assertGreater(self.bus.get("MemoryBytes", path, "org.numaplaced1.Process"), 0)
        with open(os.path.join(d.runtime, "state")) as f:
            self.assertIn(str(child.pid), f.read())
        self.assertEqual(d.stop(), 0, d.stderr())
        self.assertEqual(read_file("/proc/%d/cgroup" % child.pid), orig)
        self.assertFalse(os.path.exists(os.path.join(self.CPUSET, "numaplaced")))


if __name__ == "__main__":
    nptest.main()
