#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Who may call the changing methods: root, or whom polkit allows the action
org.numaplaced1.manage (issue 12).

The real polkitd (/usr/lib/polkit-1/polkitd, as user polkitd, as its unit
runs it) on the test's private system bus. It runs in a private mount
namespace (unshare -m) where our action file and the test's rules are bind
mounted over /usr/share/polkit-1/actions, /usr/share/polkit-1/rules.d and
/etc/polkit-1/rules.d: the host's /etc and /usr are not written, and the
host's own rules (e.g. 50-default.rules) do not take part.

The bus runs with the shipped policy (systemd/org.numaplaced1.conf) plus
polkit's own (/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf),
without service activation: no polkitd started means no polkit at all."""
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import nptest  # noqa: E402
from nptest import BusTestCase  # noqa: E402

POLKITD = "/usr/lib/polkit-1/polkitd"
POLKIT_BUS_POLICY = "/usr/share/dbus-1/system.d/org.freedesktop.PolicyKit1.conf"
ACTION_FILE = os.path.join(nptest.SRC, "systemd", "org.numaplaced1.policy")
ACTION = "org.numaplaced1.manage"
NOBODY = 65534
OTHER = 1  # daemon: another unprivileged user, given nothing
CONF = """[Daemon]
Mode=advise
ScanIntervalSec=1
MaxScanIntervalSec=1
[Placement]
MinProcessMemory=100M
MinProcessCPU=0
"""
ROOT_2NODE = os.path.join(nptest.FIXTURES, "2node")
RULE = """// test_polkit.py: uid 65534 may manage numaplaced
polkit.addRule(function(action, subject) {
    if (action.id == "%s" && subject.user == "%s")
        return polkit.Result.YES;
});
""" % (ACTION, pwd.getpwuid(NOBODY).pw_name)


class Polkitd:
    """The real polkitd on `bus`, in its own mount namespace with our action
    file and `rules` (file name -> JavaScript) only. Started as root, it
    changes to the user polkitd itself, as under its unit."""

    def __init__(self, bus, rules=None):
        self.bus = bus
        self.dir = tempfile.mkdtemp(prefix="np-polkit-")
        os.chmod(self.dir, 0o755)
        self.actions = os.path.join(self.dir, "actions")
        self.rules = os.path.join(self.dir, "rules.d")
        self.empty = os.path.join(self.dir, "empty")
        for d in (self.actions, self.rules, self.empty):
            os.mkdir(d)
            os.chmod(d, 0o755)
        shutil.copy(ACTION_FILE, self.actions)
        for name, text in (rules or {}).items():
            with open(os.path.join(self.rules, name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(self.rules, name), 0o644)
        self.log_path = os.path.join(self.dir, "polkitd.log")
        self.log = open(self.log_path, "w")
        script = ("set -e; mount --bind {a} /usr/share/polkit-1/actions; "
                  "mount --bind {e} /usr/share/polkit-1/rules.d; "
                  "mount --bind {r} /etc/polkit-1/rules.d; "
                  "exec {p} --no-debug"
                  ).format(a=self.actions, e=self.empty, r=self.rules, p=POLKITD)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address)
        self.proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                                     env=env, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while not self.on_bus():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out = self.output()
                self.stop()
                raise AssertionError("polkitd did not come onto the bus:\n" + out)
            time.sleep(0.05)

    def on_bus(self):
        r = self.bus.busctl("status", "org.freedesktop.PolicyKit1", check=False, timeout=5)
        return r.returncode == 0

    def output(self):
        with open(self.log_path) as f:
            return f.read()

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def send_cmd(bus, method, user):
    """dbus-send, unlike busctl, prints the error's message."""
    return ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups", "dbus-send",
            "--bus=" + bus.address, "--print-reply", "--reply-timeout=60000", "--dest=" + nptest.MGR[0],
            nptest.MGR[1], "%s.%s" % (nptest.MGR[2], method)]


def send(bus, method, user):
    return subprocess.run(send_cmd(bus, method, user), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=90)


def refused(test, r, why):
    """r: a refused dbus-send (error name and message) or busctl ("Access denied")."""
    test.assertNotEqual(r.returncode, 0, "the call was not refused")
    if "Error org.freedesktop" in r.stderr:
        test.assertIn("Error org.freedesktop.DBus.Error.AccessDenied: ", r.stderr)
        test.assertIn(ACTION, r.stderr)
        test.assertIn(why, r.stderr)
    else:
        test.assertIn("Access denied", r.stderr)


class PolkitTestCase(BusTestCase):
    bus_extra_config = "<include>%s</include>" % POLKIT_BUS_POLICY

    def setUp(self):
        super().setUp()
        for f in (POLKITD, POLKIT_BUS_POLICY):
            if not os.path.exists(f):
                self.fail("%s is missing: install the package polkitd" % f)

    def polkitd(self, rules=None):
        p = Polkitd(self.bus, rules)
        self.addCleanup(p.stop)
        return p

    def wait_log(self, d, text, count=1, timeout=30):
        deadline = time.monotonic() + timeout
        while d.stderr().count(text) < count:
            self.assertTrue(d.alive(), d.stderr()[-3000:])
            self.assertLess(time.monotonic(), deadline, "%d x %r not logged:\n%s" % (count, text, d.stderr()[-3000:]))
            time.sleep(0.05)


class NoPolkit(PolkitTestCase):
    def test_root_only_without_polkit(self):
        d = self.start(CONF, root=ROOT_2NODE)
        self.bus.call("Pause")
        self.assertTrue(self.bus.get("Paused"))
        r = send(self.bus, "Resume", NOBODY)
        refused(self, r, "polkit is not available")
        self.assertTrue(self.bus.get("Paused"))
        self.assertIn("Refused Resume() from uid 65534: polkit is not available", d.stderr())
        # reading stays open
        self.assertEqual(self.bus.get("NodeIds", user=NOBODY), [0, 1])
        self.bus.call("Resume")
        self.assertFalse(self.bus.get("Paused"))
        self.assertTrue(d.alive())


class WithPolkit(PolkitTestCase):
    def test_no_rule_refuses_unprivileged(self):
        self.polkitd()
        d = self.start(CONF, root=ROOT_2NODE)
        # auth_admin_keep, and no agent: no
        r = send(self.bus, "Pause", NOBODY)
        refused(self, r, "polkit requires authentication")
        self.assertFalse(self.bus.get("Paused"))
        self.assertIn("Refused Pause() from uid 65534: polkit requires authentication", d.stderr())
        for m, sig, args in (("Reload", "", ()), ("Place", "uau", (1, 1, 0)), ("Include", "u", (1,)),
                             ("Exclude", "u", (1,)), ("Forget", "u", (1,))):
            refused(self, self.bus.call(m, sig, *args, user=NOBODY, check=False), ACTION)
        self.bus.call("Pause")  # root does not ask
        self.assertTrue(self.bus.get("Paused"))

    def test_rule_grants_one_user(self):
        self.polkitd({"50-numaplaced-test.rules": RULE})
        d = self.start(CONF, root=ROOT_2NODE)
        self.bus.call("Pause", user=NOBODY)
        self.assertTrue(self.bus.get("Paused"))
        self.assertIn("Allowed Pause() from uid 65534: authorized by polkit", d.stderr())
        # the arguments are read after the second dispatch
        r = self.bus.call("Forget", "u", 999999, user=NOBODY, check=False)
        self.assertNotIn("Access denied", r.stderr)
        r = send(self.bus, "Resume", OTHER)
        refused(self, r, "polkit requires authentication")
        self.assertTrue(self.bus.get("Paused"))
        self.assertIn("Refused Resume() from uid %d" % OTHER, d.stderr())
        self.bus.call("Resume", user=NOBODY)
        self.assertFalse(self.bus.get("Paused"))
        self.bus.call("Pause")  # root
        self.assertTrue(self.bus.get("Paused"))
        self.assertEqual(d.stop(), 0, d.stderr()[-3000:])  # no leak (ASan), no crash

    def test_many_callers_at_once(self):
        p = self.polkitd({"50-numaplaced-test.rules": RULE})
        d = self.start(CONF, root=ROOT_2NODE, args=("--log-level", "debug"))
        n = 30
        p.signal(signal.SIGSTOP)  # the questions pile up in the daemon
        procs = []
        for i in range(n):
            uid = NOBODY if i % 2 == 0 else OTHER
            procs.append((uid, subprocess.Popen(send_cmd(self.bus, "Pause", uid), stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, text=True)))
        self.wait_log(d, "Asked polkit whether", n)
        self.bus.call("Resume")  # the main loop does not wait for polkit
        p.signal(signal.SIGCONT)
        for uid, proc in procs:
            out, err = proc.communicate(timeout=90)
            if uid == NOBODY:
                self.assertEqual(proc.returncode, 0, err)
            else:
                self.assertNotEqual(proc.returncode, 0)
                self.assertIn("AccessDenied", err)
        self.assertEqual(d.stderr().count("Allowed Pause() from uid 65534"), n // 2)
        self.assertEqual(d.stderr().count("Refused Pause() from uid %d" % OTHER), n // 2)
        self.assertEqual(d.stop(), 0, d.stderr()[-3000:])

    def test_caller_gone_before_the_answer(self):
        p = self.polkitd({"50-numaplaced-test.rules": RULE})
        d = self.start(CONF, root=ROOT_2NODE, args=("--log-level", "debug"))
        p.signal(signal.SIGSTOP)
        caller = subprocess.Popen(send_cmd(self.bus, "Pause", NOBODY), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        self.wait_log(d, "Asked polkit whether")
        caller.kill()
        caller.wait()
        p.signal(signal.SIGCONT)
        # the verdict (whatever polkit says of a name that is gone) is logged
        # and the daemon goes on answering
        self.wait_log(d, "Pause() from uid 65534")
        self.assertTrue(d.alive())
        self.bus.call("Resume", user=NOBODY)
        self.assertEqual(self.bus.get("Paused", user=NOBODY), False)
        self.assertEqual(d.stop(), 0, d.stderr()[-3000:])

    def test_stop_with_questions_pending(self):
        p = self.polkitd({"50-numaplaced-test.rules": RULE})
        d = self.start(CONF, root=ROOT_2NODE, args=("--log-level", "debug"))
        p.signal(signal.SIGSTOP)
        callers = [subprocess.Popen(send_cmd(self.bus, "Pause", NOBODY), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for _ in range(5)]
        self.wait_log(d, "Asked polkit whether", 5)
        self.assertEqual(d.stop(), 0, d.stderr()[-3000:])  # no leak, no crash (ASan, valgrind)
        for c in callers:
            out, err = c.communicate(timeout=30)
            self.assertNotEqual(c.returncode, 0)
        p.signal(signal.SIGCONT)

    def test_polkitd_killed(self):
        p = self.polkitd({"50-numaplaced-test.rules": RULE})
        d = self.start(CONF, root=ROOT_2NODE, args=("--log-level", "debug"))
        self.bus.call("Pause", user=NOBODY)
        self.assertTrue(self.bus.get("Paused"))
        # killed while a question is with it
        p.signal(signal.SIGSTOP)
        caller = subprocess.Popen(send_cmd(self.bus, "Resume", NOBODY), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.wait_log(d, "Asked polkit whether", 2)
        p.signal(signal.SIGKILL)
        out, err = caller.communicate(timeout=60)
        self.assertNotEqual(caller.returncode, 0)
        self.assertIn("polkit is not available", err)
        # and after it: root only
        r = send(self.bus, "Resume", NOBODY)
        refused(self, r, "polkit is not available")
        self.assertTrue(self.bus.get("Paused"))
        self.bus.call("Resume")
        self.assertFalse(self.bus.get("Paused"))
        self.assertEqual(d.stop(), 0, d.stderr()[-3000:])


class UnderValgrind(PolkitTestCase):
    """The asynchronous path under valgrind: a granted, a refused and, at
    the stop, pending questions (sanitizer builds check the same with
    ASan/LeakSanitizer through the tests above, as valgrind cannot run an
    ASan binary)."""

    def test_valgrind(self):
        from test_valgrind import VALGRIND
        p = self.polkitd({"50-numaplaced-test.rules": RULE})
        d = self.start(CONF, root=ROOT_2NODE, prefix=VALGRIND, args=("--log-level", "debug"))
        self.assertEqual(send(self.bus, "Pause", NOBODY).returncode, 0)
        refused(self, send(self.bus, "Resume", OTHER), "polkit requires authentication")
        p.signal(signal.SIGSTOP)
        callers = [subprocess.Popen(send_cmd(self.bus, "Resume", NOBODY), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for _ in range(3)]
        self.wait_log(d, "Asked polkit whether", 5, timeout=120)
        rc = d.stop(timeout=120)
        log = d.stderr()
        self.assertEqual(rc, 0, "valgrind found errors (or the daemon failed):\n" + log[-6000:])
        self.assertIn("ERROR SUMMARY: 0 errors", log)
        for c in callers:
            c.communicate(timeout=30)
            self.assertNotEqual(c.returncode, 0)
        p.signal(signal.SIGCONT)


if os.environ.get("NP_SANITIZE", "none") != "none":
    del UnderValgrind


class ActionFile(PolkitTestCase):
    def test_action_file_is_valid(self):
        dtd = "/usr/share/polkit-1/policyconfig-1.dtd"
        r = subprocess.run(["xmllint", "--noout", "--dtdvalid", dtd, ACTION_FILE], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        self.assertEqual(r.returncode, 0, r.stdout)
        import xml.etree.ElementTree as ET
        action = ET.parse(ACTION_FILE).getroot().find("action")
        self.assertEqual(action.get("id"), ACTION)
        defaults = {e.tag: e.text for e in action.find("defaults")}
        self.assertEqual(defaults, {"allow_any": "auth_admin", "allow_inactive": "auth_admin",
                                    "allow_active": "auth_admin_keep"})
        # polkit's own tool sees the action, as polkitd loaded it
        self.polkitd()
        r = subprocess.run(["pkaction", "--action-id", ACTION, "--verbose"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("implicit active:   auth_admin_keep", r.stdout)


if __name__ == "__main__":
    nptest.main()
