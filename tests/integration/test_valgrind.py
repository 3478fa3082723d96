#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One full daemon run under valgrind (issue 10): start on this machine's
real cpusets, scan, Place() a child with threads, Reload(), a short run of
np-bus-torture (every method, wrong signatures, huge arrays, 300 random
calls), Forget(), Place() again, SIGTERM with the process still held (so
the release at stop runs too). valgrind --leak-check=full must report no
error (invalid accesses, uninitialised values, definitely or possibly lost
memory) and the daemon must exit 0. Not registered in sanitizer builds
(valgrind cannot run an ASan binary)."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import nptest  # noqa: E402
from nptest import BusTestCase  # noqa: E402

TORTURE = os.path.join(nptest.BUILD, "tests", "tools", "np-bus-torture")
SUPP = os.path.join(nptest.SRC, "tests", "valgrind.supp")
CPUSET = "/sys/fs/cgroup/cpuset"
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
VALGRIND = ["valgrind", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite,possible",
            "--show-leak-kinds=definite,possible", "--num-callers=30", "--suppressions=" + SUPP]


class Valgrind(BusTestCase):
    def test_full_run(self):
        if not os.access(os.path.join(CPUSET, "tasks"), os.W_OK):
            self.fail("cgroup v1 cpuset hierarchy at %s is not writable" % CPUSET)
        self.assertFalse(os.path.exists(os.path.join(CPUSET, "numaplaced")))
        child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
        self.addCleanup(child.stdout.close)
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        self.assertEqual(child.stdout.readline().strip(), "ready")

        d = self.start(CONF, prefix=VALGRIND)
        s0 = self.bus.get("Scans")
        deadline = time.monotonic() + 120
        while self.bus.get("Scans") < s0 + 2:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.2)
        r = self.bus.call("Place", "uau", child.pid, 1, 0, timeout=120)
        self.assertTrue(r.stdout.startswith("t "), r.stdout)
        self.bus.call("Reload")
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address)
        t = subprocess.run([TORTURE, "--daemon-pid", str(d.proc.pid), "--random", "300", "--children", "2"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1200)
        self.assertEqual(t.returncode, 0, t.stdout + t.stderr[-3000:])
        print("  " + t.stdout.splitlines()[0])
        self.bus.call("Forget", "u", child.pid)
        self.bus.call("Place", "uau", child.pid, 1, 0, timeout=120)
        rc = d.stop(timeout=120)
        log = d.stderr()
        summary = re.findall(r"==\d+== ERROR SUMMARY: .*", log)
        print("  " + (summary[-1] if summary else "no valgrind summary"))
        self.assertEqual(rc, 0, "valgrind found errors (or the daemon failed):\n" + log[-6000:])
        self.assertTrue(summary and " 0 errors" in summary[-1], log[-6000:])
        self.assertIn("Released every managed process", log)
        self.assertFalse(os.path.exists(os.path.join(CPUSET, "numaplaced")))


if __name__ == "__main__":
    nptest.main()
