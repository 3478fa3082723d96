#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Faults on this machine (issue 10): a damaged state file at start, a
read-only runtime directory, running out of descriptors, a memory-cgroup
limit, and losing the system bus. Each gives a clear log line or D-Bus
error, the daemon keeps running (or, where the kernel kills it, the next
start puts everything back), and the process it held is never left
confined. Real v1 cpusets, so the machine is locked (nptest.main)."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import nptest  # noqa: E402
from nptest import BusTestCase  # noqa: E402

CPUSET = "/sys/fs/cgroup/cpuset"
MEMORY = "/sys/fs/cgroup/memory"
OURS = os.path.join(CPUSET, "numaplaced")
TORTURE = os.path.join(nptest.BUILD, "tests", "tools", "np-bus-torture")
CONF = """[Daemon]
Mode=advise
Backend=cpuset
ScanIntervalSec=0.5
MaxScanIntervalSec=0.5
[Placement]
MinProcessMemory=1G
"""
CHILD = ("import threading, time\n"
         "for _ in range(3): threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n"
         "print('ready', flush=True)\n"
         "time.sleep(3600)\n")


def cpuset_of(path):
    with open(path) as f:
        for line in f:
            hid, ctrls, cg = line.rstrip("\n").split(":", 2)
            if "cpuset" in ctrls.split(","):
                return cg
    return None


def threads(pid):
    return sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def read(path):
    with open(path) as f:
        return f.read().strip()


def remove_stale_hierarchy():
    """After a failed test: tasks out of the daemon's cpusets, then the
    directories, deepest first (so the next test starts clean)."""
    if not os.path.exists(OURS):
        return
    for d, subdirs, _ in sorted(os.walk(OURS), key=lambda w: -w[0].count("/")):
        try:
            with open(os.path.join(d, "tasks")) as f:
                for t in f.read().split():
                    try:
                        write(os.path.join(CPUSET, "tasks"), t)
                    except OSError:
                        pass
            os.rmdir(d)
        except OSError:
            pass



class Faults(BusTestCase):
    def setUp(self):
        super().setUp()
        if not os.access(os.path.join(CPUSET, "tasks"), os.W_OK):
            self.fail("cgroup v1 cpuset hierarchy at %s is not writable" % CPUSET)
        self.assertFalse(os.path.exists(OURS), "a stale %s exists before the test" % OURS)
        self.addCleanup(remove_stale_hierarchy)
        # the child starts in a cpuset of its own, so "back where it was"
        # differs from "moved out to the root"
        self.orig = "/np-fault-orig-%d" % os.getpid()
        self.orig_dir = CPUSET + self.orig
        os.mkdir(self.orig_dir)
        self.addCleanup(self.remove_orig)
        for f in ("cpuset.cpus", "cpuset.mems"):
            write(os.path.join(self.orig_dir, f), read(os.path.join(CPUSET, f)))
        self.child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.kill_child)
        self.assertEqual(self.child.stdout.readline().strip(), "ready")
        self.pid = self.child.pid
        for t in threads(self.pid):
            write(os.path.join(self.orig_dir, "tasks"), t)
        self.assert_where(self.orig)

    def kill_child(self):
        if self.child.poll() is None:
            self.child.kill()
            self.child.wait()
        self.child.stdout.close()

    def remove_orig(self):
        self.kill_child()
        for _ in range(50):
            try:
                os.rmdir(self.orig_dir)
                return
            except OSError:
                time.sleep(0.1)

    def assert_where(self, cgroup):
        for t in threads(self.pid):
            self.assertEqual(cpuset_of("/proc/%d/task/%d/cgroup" % (self.pid, t)), cgroup, "thread %d" % t)

    def place(self, expect_ok=True):
        r = self.bus.call("Place", "uau", self.pid, 1, 0, check=False)
        if expect_ok:
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assert_where("/numaplaced/nodes-0")
        return r

    def wait_scans(self, n=2):
        s0 = self.bus.get("Scans")
        deadline = time.monotonic() + 30
        while self.bus.get("Scans") < s0 + n:
            self.assertLess(time.monotonic(), deadline, "the daemon stopped scanning")
            time.sleep(0.1)

    def torture(self, d, n=500):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address)
        r = subprocess.run([TORTURE, "--daemon-pid", str(d.proc.pid), "--random", str(n), "--seed", "7"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr[-3000:])
        return r.stdout

    # ---- a damaged state file at start ----

    def crash_with_state(self, damage):
        """Place, SIGKILL, damage the state file, start again: returns the
        new daemon and its log."""
        d = self.start(CONF)
        self.place()
        d.stop(signal.SIGKILL)
        state = os.path.join(d.runtime, "state")
        with open(state, "rb") as f:
            text = f.read()
        with open(state, "wb") as f:
            f.write(damage(text))
        # an interrupted write's temporary file next to it
        write(state + ".Xy12Zq", "[numaplaced]\nVers")
        d2 = self.start(config_file=d.config, runtime=d.runtime)
        self.assertTrue(d2.alive())
        self.assertFalse(os.path.exists(state), "the state file was not removed")
        self.assertFalse(os.path.exists(state + ".Xy12Zq"), "the temporary file was not removed")
        self.assertFalse(os.path.exists(os.path.join(OURS, "nodes-0")), "the daemon's cpuset was left")
        self.assertIn("Removed 1 temporary state file(s)", d2.stderr())
        return d2, d2.stderr()

    def test_state_truncated(self):
        def cut(text):  # in the middle of the first per-thread line
            return text[:text.index(b"Thread.") + 9]
        d, log = self.crash_with_state(cut)
        self.assertRegex(log, r"State file \S+ is damaged \(truncated \(no newline at the end\), 1 unreadable line "
                              r"dropped\): releasing the 1 process\(es\)")
        self.assert_where(self.orig)
        self.assertEqual(d.stop(), 0)

    def test_state_wrong_version(self):
        d, log = self.crash_with_state(lambda t: t.replace(b"Version=1", b"Version=99"))
        self.assertIn("Version=99 (this numaplaced writes 1; read as version 1)", log)
        self.assert_where(self.orig)
        self.assertEqual(d.stop(), 0)

    def test_state_garbage_inside(self):
        def spoil(text):
            return b"\x00\xff binary junk\n" + text.replace(b"\nNodes=", b"\n%%% garbage %%%\nNodes=") + b"[broken\n"
        d, log = self.crash_with_state(spoil)
        self.assertRegex(log, r"State file \S+ is damaged \(3 unreadable lines dropped\)")
        self.assert_where(self.orig)
        self.assertEqual(d.stop(), 0)

    def test_state_all_garbage(self):
        # nothing readable: the record is lost, but the daemon's whole
        # hierarchy is removed, so the process is moved out to its root
        d, log = self.crash_with_state(lambda t: bytes(range(256)) * 8)
        self.assertRegex(log, r"State file \S+ is damaged \(.*no readable Version")
        self.assertIn("is still in the daemon's cgroup", log)
        self.assert_where("/")
        self.assertEqual(d.stop(), 0)

    def test_state_empty(self):
        d, log = self.crash_with_state(lambda t: b"")
        self.assertRegex(log, r"State file \S+ is damaged \(no readable Version")
        self.assert_where("/")
        self.assertEqual(d.stop(), 0)

    # ---- a read-only runtime directory ----

    def test_read_only_runtime_directory(self):
        rt = os.path.join(self.bus.dir, "ro-run")
        os.mkdir(rt)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", rt], check=True)
        self.addCleanup(subprocess.run, ["umount", rt])
        d = self.start(CONF, runtime=rt)
        self.assertIn("Cannot write the state file %s/state (Read-only file system): every placement is refused"
                      % rt, d.stderr())
        r = self.place(expect_ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Read-only file system", r.stderr)
        self.assert_where(self.orig)
        self.wait_scans()
        self.assertTrue(d.alive())
        self.bus.call("Dump")
        self.assertEqual(d.stop(), 0)
        self.assert_where(self.orig)

    # ---- out of descriptors ----

    def test_out_of_descriptors(self):
        d = self.start(CONF)
        self.wait_scans()
        at_rest = len(os.listdir("/proc/%d/fd" % d.proc.pid))
        own_at_rest = nptest.daemon_fds(d.proc.pid)
        # the limit bounds descriptor numbers, and the statm descriptors the
        # cheap tier keeps leave gaps as processes exit: limit at the lowest
        # free number, so that no open can succeed
        def fds():
            return {int(fd) for fd in os.listdir("/proc/%d/fd" % d.proc.pid)}

        def lowest_free():
            used = fds()
            return min(n for n in range(len(used) + 1) if n not in used)
        used = fds()

        def limit(n):
            # the soft limit only: raising a hard one again needs CAP_SYS_RESOURCE
            subprocess.run(["prlimit", "--pid", str(d.proc.pid), "--nofile=%d:" % n], check=True)
        # no descriptor to spare: every file it opens fails. The statm
        # descriptor of a process that exits (this test's own busctl calls)
        # is closed at the next scan and leaves a gap below the limit: when
        # a call that needs a descriptor got one all the same, lower the
        # limit to the gap and call again (the limit only goes down).
        def refused(call, wait):
            for attempt in range(10):
                limit(lowest_free())
                if wait:
                    # scans need no new descriptor (the cheap tier keeps its
                    # statm and node files open): they go on
                    self.wait_scans()
                    self.assertTrue(d.alive())
                r = call()
                if r.returncode != 0:
                    return r, attempt
                print("  a descriptor was freed below the limit; again")
            return r, attempt
        r, tries = refused(lambda: self.place(expect_ok=False), True)
        self.assertIn("Too many open files", r.stderr)  # not "No process with PID"
        # an attempt that got a descriptor placed it
        self.assert_where("/numaplaced/nodes-0" if tries else self.orig)
        r, _ = refused(lambda: self.bus.call("Reload", check=False), False)
        self.assertIn("Too many open files", r.stderr)
        out = self.torture(d)
        self.assertTrue(d.alive())
        self.wait_scans()  # still on the bus, still scanning
        print("  at %d descriptors: %s" % (at_rest, out.splitlines()[0]))
        # no descriptor leaked (those of the machine's processes come and
        # go with them)
        self.assertEqual(nptest.daemon_fds(d.proc.pid), own_at_rest)
        # two to spare are enough to place and release
        limit(max(used) + 3)
        self.place()
        self.bus.call("Forget", "u", self.pid)
        self.assert_where(self.orig)
        self.assertEqual(d.stop(), 0)

    def test_too_few_descriptors_at_start(self):
        # fewer than it needs to start: a clear error and exit status 1
        d = self.start(CONF, wait=False, prefix=["prlimit", "--nofile=6:6", "--"])
        d.proc.wait(30)
        self.assertEqual(d.proc.returncode, 1)
        self.assertIn("Too many open files", d.stderr())

    # ---- a memory-cgroup limit ----

    def memcg(self):
        path = os.path.join(MEMORY, "numaplaced-test-%d" % os.getpid())
        os.mkdir(path)

        def remove():
            for _ in range(50):
                try:
                    os.rmdir(path)
                    return
                except OSError:
                    time.sleep(0.1)
        self.addCleanup(remove)
        return path

    def test_memory_cgroup_limit(self):
        if not os.path.exists(os.path.join(MEMORY, "memory.limit_in_bytes")):
            self.fail("no cgroup v1 memory controller at %s" % MEMORY)
        cg = self.memcg()
        enter = ["sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$@"' % cg, "sh"]
        # 1. its peak under the torture, then a limit 2 MB above that: it
        #    runs the torture again, places and releases, and is not killed
        d = self.start(CONF, prefix=enter)
        self.torture(d)
        peak = int(read(os.path.join(cg, "memory.max_usage_in_bytes")))
        # ASan's quarantine keeps freed memory for a while: more headroom
        limit = peak + ((2 << 20) if os.environ.get("NP_SANITIZE", "none") == "none" else (256 << 20))
        write(os.path.join(cg, "memory.limit_in_bytes"), limit)
        self.torture(d)
        self.place()
        self.bus.call("Forget", "u", self.pid)
        self.assert_where(self.orig)
        oom = dict(line.split() for line in read(os.path.join(cg, "memory.oom_control")).splitlines())
        print("  memory cgroup: peak %d kB, limit %d kB, failcnt %s, oom_kill %s"
              % (peak >> 10, limit >> 10, read(os.path.join(cg, "memory.failcnt")), oom.get("oom_kill")))
        self.assertEqual(oom.get("oom_kill", "0"), "0")
        self.assertTrue(d.alive())
        self.assertEqual(d.stop(), 0)
        # 2. a limit below what it needs: the kernel kills it (SIGKILL, no
        #    user-space error is possible); the next start puts back the
        #    process it held
        write(os.path.join(cg, "memory.max_usage_in_bytes"), 0)
        write(os.path.join(cg, "memory.limit_in_bytes"), -1)
        d = self.start(CONF, prefix=enter)
        self.place()
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address)
        # the limit 256 kB above what the cgroup holds, then the torture;
        # the kernel reclaims the file pages charged to it (the daemon's
        # binary and libraries) before it kills, and once in 9 runs here
        # that was room enough for the whole torture: the limit comes down
        # to what it holds then, a round at a time, until the kill
        limits = []
        for _ in range(6):
            usage = int(read(os.path.join(cg, "memory.usage_in_bytes")))
            limits.append(usage + (256 << 10))
            try:
                write(os.path.join(cg, "memory.limit_in_bytes"), limits[-1])
            except OSError:
                pass  # (EBUSY: it holds more than that and cannot reclaim it)
            subprocess.run([TORTURE, "--daemon-pid", str(d.proc.pid), "--random", "2000"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
            try:
                d.proc.wait(10)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            d.proc.wait(30)
        print("  OOM kill after %d limit(s): %s kB" % (len(limits), ", ".join(str(x >> 10) for x in limits)))
        self.assertEqual(d.proc.returncode, -signal.SIGKILL,
                         "expected an OOM kill at %s kB" % ", ".join(str(x >> 10) for x in limits))
        oom = dict(line.split() for line in read(os.path.join(cg, "memory.oom_control")).splitlines())
        self.assertEqual(oom.get("oom_kill"), "1")
        self.assert_where("/numaplaced/nodes-0")  # the kill left it confined...
        d2 = self.start(config_file=d.config, runtime=d.runtime)
        self.assert_where(self.orig)  # ...and the next start put it back
        self.assertIn("Found state file", d2.stderr())
        self.assertEqual(d2.stop(), 0)

    # ---- losing the system bus ----

    def test_bus_lost(self):
        d = self.start(CONF)
        self.place()
        self.bus.proc.kill()
        d.proc.wait(30)
        self.assertEqual(d.proc.returncode, 1, d.stderr()[-2000:])
        self.assertIn("Lost the connection to the system bus: stopping", d.stderr())
        self.assert_where(self.orig)  # released on the way out
        self.assertFalse(os.path.exists(OURS))


if __name__ == "__main__":
    nptest.main()
