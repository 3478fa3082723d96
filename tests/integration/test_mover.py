#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The mover (issue 4) on this machine: real cpuset cgroups (v1), a real
child process with threads, the real daemon on a private system bus."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import nptest  # noqa: E402
from nptest import BusTestCase  # noqa: E402

CPUSET = "/sys/fs/cgroup/cpuset"
OURS = os.path.join(CPUSET, "numaplaced")
CONF = """[Daemon]
Mode=enforce
Backend=cpuset
ScanIntervalSec=1
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


def status_field(pid, name):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()


def threads(pid):
    return sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))


class Mover(BusTestCase):
    def setUp(self):
        super().setUp()
        if not os.access(os.path.join(CPUSET, "tasks"), os.W_OK):
            self.fail("cgroup v1 cpuset hierarchy at %s is not writable" % CPUSET)
        self.assertFalse(os.path.exists(OURS), "a stale %s exists before the test" % OURS)
        self.child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.kill_child)
        self.assertEqual(self.child.stdout.readline().strip(), "ready")
        self.pid = self.child.pid
        self.orig = cpuset_of("/proc/%d/cgroup" % self.pid)
        self.assertEqual(len(threads(self.pid)), 4)

    def kill_child(self):
        if self.child.poll() is None:
            self.child.kill()
            self.child.wait()
        self.child.stdout.close()

    def place(self, nodes=(0,)):
        r = self.bus.call("Place", "uau", self.pid, len(nodes), *nodes)
        sig, val = r.stdout.split()
        self.assertEqual(sig, "t")
        return int(val)

    def assert_placed(self):
        for t in threads(self.pid):
            self.assertEqual(cpuset_of("/proc/%d/task/%d/cgroup" % (self.pid, t)), "/numaplaced/nodes-0",
                             "thread %d" % t)
        with open(os.path.join(OURS, "nodes-0", "cpuset.mems")) as f:
            self.assertEqual(f.read().strip(), "0")
        with open(os.path.join(OURS, "nodes-0", "cpuset.memory_migrate")) as f:
            self.assertEqual(f.read().strip(), "0")
        self.assertEqual(status_field(self.pid, "Mems_allowed_list"), "0")
        with open(os.path.join(CPUSET, "cpuset.cpus")) as f:
            self.assertEqual(status_field(self.pid, "Cpus_allowed_list"), f.read().strip())

    def assert_released(self, running=False):
        for t in threads(self.pid):
            self.assertEqual(cpuset_of("/proc/%d/task/%d/cgroup" % (self.pid, t)), self.orig, "thread %d" % t)
        # while the daemon runs its (empty) parent may stay; after a stop nothing may
        leftover = os.path.join(OURS, "nodes-0") if running else OURS
        self.assertFalse(os.path.exists(leftover), "%s left behind" % leftover)

    def test_place_then_stop_releases(self):
        d = self.start(CONF)
        self.assertEqual(self.bus.get("Backend"), "cpuset")
        self.place()
        self.assert_placed()
        path = "/org/numaplaced1/process/%d" % self.pid
        self.assertEqual(self.bus.get("State", path, "org.numaplaced1.Process"), "pinned")
        self.assertEqual(self.bus.get("TargetNodes", path, "org.numaplaced1.Process"), [0])
        self.assertEqual(self.bus.get("ManagedProcesses"), [self.pid])
        self.assertEqual(self.bus.get("ManagedProcesses", "/org/numaplaced1/node/0", "org.numaplaced1.Node"),
                         [self.pid])
        with open(os.path.join(d.runtime, "state")) as f:
            self.assertIn(str(self.pid), f.read())
        self.assertEqual(d.stop(), 0)
        self.assert_released()

    def test_forget_releases(self):
        self.start(CONF)
        self.place()
        self.assert_placed()
        self.bus.call("Forget", "u", self.pid)
        self.assert_released(running=True)
        self.assertEqual(self.bus.get("ManagedProcesses"), [])

    def test_sigkill_then_restart_cleans_up(self):
        d = self.start(CONF)
        self.place()
        self.assert_placed()
        d.stop(signal.SIGKILL)
        self.assertTrue(os.path.exists(OURS))  # the crash left it behind
        # the next start on the same runtime directory finds the state file
        d2 = self.start(config_file=d.config, runtime=d.runtime)
        self.assert_released(running=True)
        self.assertTrue(d2.alive())
        d2.stop()
        self.assert_released()

    def test_place_errors_are_clear(self):
        d = self.start(CONF)
        cases = [((999999, 1, 0), "No process with PID 999999"), ((self.pid, 0), "empty"),
                 ((self.pid, 1, 7), "Node 7 is not an online NUMA node"),
                 ((2, 1, 0), "kernel thread"), ((d.proc.pid, 1, 0), "numaplaced itself")]
        for args, text in cases:
            r = self.bus.call("Place", "uau", *args, check=False)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn(text, r.stderr, args)
        self.assertTrue(d.alive())
        self.assertFalse(os.path.exists(os.path.join(OURS, "nodes-0")))

    def test_process_exits_while_held(self):
        d = self.start(CONF)
        self.place()
        self.kill_child()
        deadline = time.monotonic() + 15
        while self.bus.get("ManagedProcesses") and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.bus.get("ManagedProcesses"), [])
        self.assertFalse(os.path.exists(os.path.join(OURS, "nodes-0")), "empty cpuset left behind")
        self.assertTrue(d.alive())


class Planner(BusTestCase):
    SEED = {  # seed 003: 0-7 -> target, with the rule
        (3, 4): [(7, 4), (6, 3), (5, 4), (2, 3), (1, 4), (0, 3)],
        (5, 7): [(6, 5), (4, 5), (3, 7), (2, 5), (1, 7), (0, 5)],
        (1, 3, 5): [(7, 3), (6, 1), (4, 3), (2, 5), (0, 1)],
        (1, 3, 5, 7): [(6, 5), (4, 1), (2, 5), (0, 1)],
    }

    def test_plan_migration_method(self):
        self.start("[Daemon]\nMode=advise\n", root=os.path.join(nptest.FIXTURES, "8node"))
        for to, pairs in self.SEED.items():
            r = self.bus.call("PlanMigration", "auau", 8, *range(8), len(to), *to, user=65534)
            got = nptest.parse_busctl(r.stdout.strip())
            self.assertEqual(got, pairs, to)
        r = self.bus.call("PlanMigration", "auau", 3, 2, 3, 4, 3, 3, 4, 5)
        self.assertEqual(nptest.parse_busctl(r.stdout.strip()), [(4, 5), (3, 4), (2, 3)])

    def test_plan_command_line(self):
        conf = os.path.join(self.bus.dir, "plan.conf")
        for rule, to, expect in (("yes", "3,4", "7 -> 4\n6 -> 3\n5 -> 4\n2 -> 3\n1 -> 4\n0 -> 3\n"),
                                 ("no", "3,4", "7 -> 4\n6 -> 3\n5 -> 4\n4 -> 3\n1 -> 4\n3 -> 4\n0 -> 3\n2 -> 3\n")):
            with open(conf, "w") as f:
                f.write("[Migration]\nSkipOverlappingNodes=%s\n" % rule)
            r = subprocess.run([nptest.DAEMON, "--config", conf, "--plan", "0-7", to], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, expect)
        r = subprocess.run([nptest.DAEMON, "--config", conf, "--plan", "0-7"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        r = subprocess.run([nptest.DAEMON, "--config", conf, "--plan", "0-7", "x"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a node list", r.stderr)


if __name__ == "__main__":
    nptest.main()
