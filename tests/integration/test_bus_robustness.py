#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The D-Bus surface under hostile and random calls (issue 10).

tests/tools/np-bus-torture sends every method with wrong signatures, empty
and huge (100 000 ids) node lists, node ids up to 2^32-1, PIDs 0, 1, 2 (a
kernel thread), 2^31-1, 2^31 and above, the daemon's own PID, PIDs that exit
during the call, Properties.Set on every read-only property, odd object
paths, and 10 000 random well-formed calls, once as root and once as uid
65534 (setpriv). It fails on any answer that is not a method return or a
named D-Bus error (org.freedesktop.DBus.Error.* or org.numaplaced1.Error.*),
on a timeout and on a lost connection.

Here: the daemon stays up and keeps scanning; its open descriptors are
exactly the same before and after; its RSS is the same within allocator
noise. How the noise is allowed for: a warm-up run (the same kinds of calls,
10 000 random ones, both users) comes first, so the heap has reached its
working size before the baseline is taken (after 1 000 it still grew by
150 to 180 kB in the first 10 000 calls, then stayed flat); the baseline and
the final figure are both taken after two more scans; the RSS may then grow
by at most RSS_SLACK_KB (the heap's top is given back or not depending on
the order of frees: after the warm-up, in 5 runs, it grew by 0 to 40 kB
on the fixture root and 80 to 196 kB on this machine's processes; a leak
of even 20 bytes per call would be 10 000 x 2 x 20 = 400 kB). Large
blocks, such as a message with a huge node list, do not count: the daemon
fixes glibc's mmap threshold so that they go back to the kernel when freed
(test_large_message; before, one CI run failed on +424 kB). Leaks too
small for that are LeakSanitizer's job:
run-tests.sh runs this test under ASan with leak checking at the daemon's
exit (where the RSS is not compared: ASan's quarantine keeps freed memory),
and test_valgrind runs the tool against a daemon under valgrind.

Two daemons: one on a fixture root (the system bus policy as shipped: uid
65534's calls to changing methods reach the daemon, whose authorization
refuses them, there being no polkit on the test bus) and one on this
machine's real cpusets (a permissive bus; Place() really confines the
tool's own children, which are released again)."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import nptest  # noqa: E402
from nptest import BusTestCase  # noqa: E402

TORTURE = os.path.join(nptest.BUILD, "tests", "tools", "np-bus-torture")
CPUSET = "/sys/fs/cgroup/cpuset"
RSS_SLACK_KB = 384
CONF = """[Daemon]
Mode=advise
Backend=cpuset
ScanIntervalSec=0.5
MaxScanIntervalSec=0.5
[Placement]
MinProcessMemory=1G
"""


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


class Torture:
    def run_torture(self, d, user, n, seed):
        cmd = [TORTURE, "--daemon-pid", str(d.proc.pid), "--random", str(n), "--seed", str(seed)]
        if user is not None:
            cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address)
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
        print("  as %s, %d random calls:" % ("root" if user is None else "uid %d" % user, n))
        print("    " + r.stdout.strip().replace("\n", "\n    "))
        self.assertEqual(r.returncode, 0, "np-bus-torture failed:\n%s\n%s" % (r.stdout, r.stderr[-4000:]))
        self.assertTrue(d.alive(), "the daemon died:\n" + d.stderr()[-4000:])
        calls = int(r.stdout.split("calls=")[1].split()[0])
        return calls

    def settle(self, d):
        """Two more scans, so both figures include a scan's allocations."""
        s0 = self.bus.get("Scans")
        deadline = time.monotonic() + 60
        while self.bus.get("Scans") < s0 + 2:
            self.assertLess(time.monotonic(), deadline, "the daemon stopped scanning")
            time.sleep(0.1)

    def objects(self):
        out = self.bus.busctl("tree", "--list", nptest.MGR[0]).stdout.split()
        return sorted(p for p in out if p.startswith("/org/numaplaced1/process/"))

    def torture(self, d, real):
        self.settle(d)
        for user in (None, 65534):  # warm-up
            self.run_torture(d, user, 10000, 1)
        self.settle(d)
        rss0, fds0, objs0 = rss_kb(d.proc.pid), nptest.daemon_fds(d.proc.pid), self.objects()
        calls = 0
        for user, seed in ((None, 2), (65534, 3)):
            calls += self.run_torture(d, user, 10000, seed)
        self.settle(d)
        self.settle(d)
        rss1, fds1, objs1 = rss_kb(d.proc.pid), nptest.daemon_fds(d.proc.pid), self.objects()
        print("  %d calls; daemon RSS %d kB -> %d kB (%+d kB), %d -> %d open descriptors, %d -> %d process objects"
              % (calls, rss0, rss1, rss1 - rss0, len(fds0), len(fds1), len(objs0), len(objs1)))
        if fds1 != fds0:  # a process that ended since the last scan: its descriptors go at the next
            self.settle(d)
            fds1 = nptest.daemon_fds(d.proc.pid)
        self.assertEqual(fds1, fds0, "open descriptors changed")
        if os.environ.get("NP_SANITIZE", "none") == "none":
            self.assertLessEqual(rss1 - rss0, RSS_SLACK_KB, "RSS grew by more than allocator noise")
        else:  # ASan keeps freed memory in quarantine: LeakSanitizer checks at exit instead
            print("  (sanitizer build %s: RSS not compared)" % os.environ["NP_SANITIZE"])
        if real:
            # other processes on this machine come and go: every object
            # left must name a live process (the tool's children are gone)
            for path in objs1:
                pid = int(path.rsplit("/", 1)[1])
                self.assertTrue(os.path.exists("/proc/%d" % pid), "%s left for a process that is gone" % path)
        else:
            self.assertEqual(objs1, objs0, "Process objects left behind")
        self.assertEqual(self.bus.get("ManagedProcesses"), [], "the tool's children are still held")
        self.assertFalse(self.bus.get("Paused"))
        return calls

class FixtureRoot(Torture, BusTestCase):
    def test_fixture_root(self):
        d = self.start(CONF, root=os.path.join(nptest.FIXTURES, "4node"))
        self.torture(d, real=False)
        self.assertEqual(d.stop(), 0, d.stderr()[-3000:])

    def test_large_message(self):
        """Large messages from an unprivileged caller leave no memory behind:
        PlanMigration() with node lists of 200 000 and 66 666 ids (800 and
        270 kB), three of each, as uid 65534. glibc's dynamic mmap threshold
        kept such a message in the heap (+788 kB for good, a CI run's
        test_fixture_root failed once on +424 kB); main() fixes it."""
        d = self.start(CONF, root=os.path.join(nptest.FIXTURES, "4node"))
        self.settle(d)
        rss0 = rss_kb(d.proc.pid)
        for n in (200000, 66666) * 3:
            r = self.bus.busctl("call", *nptest.MGR, "PlanMigration", "auau", str(n), *(["0"] * n), "1", "1",
                                user=65534)
            self.assertIn("a(uu)", r.stdout)
        self.settle(d)
        rss1 = rss_kb(d.proc.pid)
        print("  daemon RSS %d kB -> %d kB (%+d kB)" % (rss0, rss1, rss1 - rss0))
        if os.environ.get("NP_SANITIZE", "none") == "none":
            self.assertLessEqual(rss1 - rss0, RSS_SLACK_KB, "a large message stayed in the daemon's memory")
        self.assertEqual(d.stop(), 0, d.stderr()[-3000:])

    def test_fixture_pids_reused(self):
        """The tool's children whose PIDs on this machine are processes of
        the fixture tree: what its calls changed for them is forgotten at
        its end (a CI run failed once so: an Include(5151) stayed). The
        kernel hands out the PIDs after ns_last_pid: the tool forks 4
        children and an exited one, then 200 that exit during calls, the
        (6k+3)th of which it Includes; starting 40 (46, 52, 58) below the
        fixture's 5151 and 6000 makes that one 5151 or 6000 unless other
        processes fork meanwhile. No random calls: nothing else names it."""
        d = self.start(CONF, root=os.path.join(nptest.FIXTURES, "4node"))
        self.settle(d)
        objs0 = self.objects()
        for below in (40, 46, 52, 58):
            for pid in (5151, 6000):
                with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                    f.write(str(pid - below))
                self.run_torture(d, None, 0, 1)
        included = [pid for pid in (5151, 6000) if "PID %d included" % pid in d.stderr()]
        print("  included by the tool's children's PIDs: %s" % included)
        self.settle(d)
        self.assertEqual(self.objects(), objs0, "Process objects left behind")
        self.assertEqual(self.bus.get("ManagedProcesses"), [])
        self.assertEqual(d.stop(), 0, d.stderr()[-3000:])


class RealCpusets(Torture, BusTestCase):
    permissive = True  # uid 65534's calls reach the daemon's own authorization

    def test_real_cpusets(self):
        if not os.access(os.path.join(CPUSET, "tasks"), os.W_OK):
            self.fail("cgroup v1 cpuset hierarchy at %s is not writable" % CPUSET)
        ours = os.path.join(CPUSET, "numaplaced")
        self.assertFalse(os.path.exists(ours), "a stale %s exists before the test" % ours)
        d = self.start(CONF)
        self.torture(d, real=True)
        log = d.stderr()
        self.assertIn("Placed ", log, "no Place() succeeded on the real machine")
        self.assertEqual(d.stop(), 0, log[-3000:])
        self.assertFalse(os.path.exists(ours), "%s left after the stop" % ours)
        for word in ("CRITICAL", "assertion", "AddressSanitizer"):
            self.assertNotIn(word, d.stderr())


if __name__ == "__main__":
    nptest.main()
