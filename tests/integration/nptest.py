# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for integration tests: a private system bus (dbus-daemon with a
system-bus style policy that includes the project's own policy file), the
real daemon on it, and real busctl to talk to it."""
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

SRC = os.environ.get("NP_SOURCE_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("NP_BUILD_ROOT", os.path.join(SRC, "build"))
DAEMON = os.environ.get("NP_DAEMON", os.path.join(BUILD, "daemon", "numaplaced"))
FIXTURES = os.environ.get("NP_FIXTURES", os.path.join(SRC, "tests", "fixtures"))
POLICY = os.path.join(SRC, "systemd", "org.numaplaced1.conf")

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <policy user="root">
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  {extra}
</busconfig>
"""

PERMISSIVE = """<policy context="default"><allow user="*"/><allow own="*"/><allow send_type="method_call"/></policy>"""

MGR = ("org.numaplaced1", "/org/numaplaced1", "org.numaplaced1.Manager")


class Bus:
    """A private dbus-daemon. permissive=True allows every call, to test the
    daemon's own uid check behind the policy file. extra_config: more
    busconfig elements (an <include> of another service's policy)."""

    def __init__(self, permissive=False, extra_config=""):
        self.dir = tempfile.mkdtemp(prefix="np-bus-")
        os.chmod(self.dir, 0o755)
        self.socket = os.path.join(self.dir, "system_bus_socket")
        self.address = "unix:path=" + self.socket
        extra = (PERMISSIVE if permissive else "<include>%s</include>" % POLICY) + extra_config
        conf = os.path.join(self.dir, "bus.conf")
        with open(conf, "w") as f:
            f.write(BUS_CONFIG.format(socket=self.socket, extra=extra))
        # dbus-daemon logs every call its policy refuses: to a file, since a
        # pipe nobody reads fills up and blocks the bus after a few hundred
        self.log = os.path.join(self.dir, "dbus-daemon.log")
        self.log_file = open(self.log, "w")
        self.proc = subprocess.Popen(["dbus-daemon", "--config-file=" + conf, "--nofork", "--nopidfile"],
                                     stdout=subprocess.DEVNULL, stderr=self.log_file)
        # ready once it accepts a connection: the socket file exists from
        # its bind(), and a connect() before its listen() is refused (seen
        # on a loaded machine: the daemon under test exited with
        # "Connection refused")
        deadline = time.monotonic() + 10
        while not self._accepts():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                with open(self.log) as f:
                    raise RuntimeError("dbus-daemon did not start: %s" % f.read())
            time.sleep(0.02)
        os.chmod(self.socket, 0o777)

    def _accepts(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.socket)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log_file.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def busctl(self, *args, user=None, check=True, timeout=60):
        cmd = ["busctl", "--address=" + self.address, "--timeout=%d" % timeout] + list(args)
        if user is not None:
            cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout + 10)
        if check and r.returncode != 0:
            raise AssertionError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr))
        return r

    def get(self, prop, path=MGR[1], iface=MGR[2], **kw):
        """Property value parsed from busctl's text form."""
        out = self.busctl("get-property", MGR[0], path, iface, prop, **kw).stdout.strip()
        return parse_busctl(out)

    def call(self, method, sig="", *args, path=MGR[1], iface=MGR[2], **kw):
        cmd = ["call", MGR[0], path, iface, method]
        if sig:
            cmd += [sig] + [str(a) for a in args]
        return self.busctl(*cmd, **kw)


def daemon_fds(pid):
    """The daemon's open descriptors, without those it keeps for the
    processes of the machine: the cheap tier's statm descriptors (a process
    that exits keeps one until the next scan), and the stat, status and
    cgroup descriptors of the significant ones (they come and go with the
    processes, and on a machine running VMs beside the tests a big QEMU
    becomes significant when it likes). Those of the significant must name
    live processes: one kept for a process that is gone is listed, marked."""
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except FileNotFoundError:
            continue
        m = re.fullmatch(r"/proc/(\d+)/(statm|stat|status|cgroup)", target)
        if not m:
            out.append(target)
        elif m.group(2) != "statm" and not os.path.exists("/proc/%s" % m.group(1)):
            out.append(target + " (its process is gone)")
    return sorted(out)


def parse_busctl(out):
    """Parse busctl's one-line value form: 's "x"', 'au 3 0 1 2', 't 5', 'b true',
    'a(uu) 2 0 10 1 20' (returned as a flat list), 'as 1 "f"'."""
    sig, _, rest = out.partition(" ")
    toks = []
    i = 0
    while i < len(rest):
        if rest[i] == " ":
            i += 1
        elif rest[i] == '"':
            j = i + 1
            s = ""
            while rest[j] != '"':
                if rest[j] == "\\":
                    j += 1
                s += rest[j]
                j += 1
            toks.append(s)
            i = j + 1
        else:
            j = rest.find(" ", i)
            j = len(rest) if j < 0 else j
            toks.append(rest[i:j])
            i = j

    def conv(t, c):
        if c in "uyqtnixh":
            return int(t)
        if c == "d":
            return float(t)
        if c == "b":
            return t == "true"
        return t

    if sig.startswith("a"):
        elem = sig[1:].strip("()")
        n = int(toks[0])
        vals = toks[1:]
        flat = [conv(t, elem[k % len(elem)]) for k, t in enumerate(vals)]
        if len(elem) > 1:
            return [tuple(flat[k:k + len(elem)]) for k in range(0, len(flat), len(elem))]
        assert len(flat) == n
        return flat
    return conv(toks[0], sig)


class Notify:
    """A fake NOTIFY_SOCKET collecting sd_notify messages. A thread drains it
    all the time, as systemd does: a full socket would block the daemon's
    sd_notify()."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages = []
        self.cond = threading.Condition()
        self.closed = False
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self):
        while not self.closed:
            try:
                msg = self.sock.recv(4096).decode()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.cond:
                self.messages.append(msg)
                self.cond.notify_all()

    def wait_for(self, text, timeout=20):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not any(text in m for m in self.messages):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def close(self):
        self.closed = True
        self.thread.join()
        self.sock.close()


class Daemon:
    """The real numaplaced on a private bus."""

    def __init__(self, bus, config_text=None, root=None, args=(), wait=True, config_file=None, runtime=None,
                 prefix=(), env=None, journal=False):
        self.bus = bus
        self.dir = tempfile.mkdtemp(prefix="np-daemon-")
        self.runtime = runtime or os.path.join(self.dir, "run")
        os.makedirs(self.runtime, exist_ok=True)
        self.config = config_file or os.path.join(self.dir, "numaplaced.conf")
        if config_text is not None:
            with open(self.config, "w") as f:
                f.write(config_text)
        self.notify = Notify(self.dir)
        env_extra = env
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address, RUNTIME_DIRECTORY=self.runtime,
                   NOTIFY_SOCKET=self.notify.path)
        env.pop("JOURNAL_STREAM", None)
        env.update(env_extra or {})
        self.log = os.path.join(self.dir, "stderr")
        # prefix: a command that runs the daemon (prlimit, cgexec, valgrind...)
        cmd = list(prefix) + [DAEMON, "--config", self.config]
        if root:
            cmd += ["--root", root]
        cmd += list(args)
        self.log_file = open(self.log, "w")
        if journal:
            # what systemd tells a service whose stderr is the journal: the
            # daemon then logs through sd_journal_send()
            st = os.fstat(self.log_file.fileno())
            env["JOURNAL_STREAM"] = "%d:%d" % (st.st_dev, st.st_ino)
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=self.log_file)
        if wait and not self.notify.wait_for("READY=1"):
            self.stop()
            raise AssertionError("numaplaced did not become ready:\n" + self.stderr())

    def stderr(self):
        with open(self.log) as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.notify.close()
        self.log_file.close()
        return self.proc.returncode

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class BusTestCase(unittest.TestCase):
    permissive = False
    bus_extra_config = ""

    def setUp(self):
        if os.geteuid() != 0:
            self.fail("integration tests must run as root (real cgroups, setpriv)")
        self.bus = Bus(permissive=self.permissive, extra_config=self.bus_extra_config)
        self.addCleanup(self.bus.stop)

    def start(self, *a, **kw):
        d = Daemon(self.bus, *a, **kw)
        self.addCleanup(d.cleanup)
        return d


# Integration tests use the real cgroup name "numaplaced" and the machine's
# real cpusets: two suites running at once (two build trees, two checkouts)
# would see each other's cgroups. One lock file serialises them.
LOCK_FILE = "/tmp/numaplaced-integration.lock"


def lock_machine():
    fd = os.open(LOCK_FILE, os.O_CREAT | os.O_RDWR, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def main():
    import sys
    lock_machine()
    r = unittest.main(verbosity=2, exit=False)
    res = r.result
    # the plain closing line CI reads
    print("%d passed, %d failed, %d skipped" % (res.testsRun - len(res.failures) - len(res.errors) - len(res.skipped),
                                                  len(res.failures) + len(res.errors), len(res.skipped)))
    # an unexpected skip is a failure here: every tier must really run
    sys.exit(0 if res.wasSuccessful() and not res.skipped else 1)
