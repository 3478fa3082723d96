#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The real libvirt asks numaplaced where to start a guest (issue 24).

libvirt places a guest with <vcpu placement='auto'> or <numatune placement=
'auto'> by running `numad -w VCPUS:MiB`, the path fixed when libvirt is built
(/usr/bin/numad on Debian 12, libvirt 9.0): a non-zero exit fails the guest's
start ("Failed to query numad for the advisory nodeset"), standard output is
parsed as one node list, and there is no timeout. Installed with
-Dnumad_compat=true, /usr/bin/numad is a link to numaplaced, which answers
`numad -w` when called by that name.

Here the real libvirtd from Debian (libvirt-daemon, libvirt-daemon-driver-qemu,
libvirt-clients; run-tests.sh installs them) runs in a private mount namespace
(unshare -m) where the numaplaced binary of this build is bind-mounted over
/usr/bin/numad (called by that path it answers as numad) and temporary
directories over /run/libvirt, /var/lib/libvirt, /var/log/libvirt,
/var/cache/libvirt and /etc/libvirt: the host's numad package and its
directories stay untouched, and every process is stopped at the end. libvirtd
inherits DBUS_SYSTEM_BUS_ADDRESS of the private bus, and so does the numad
command it runs, which asks the numaplaced running there.

Guests are TCG (domain type='qemu': no KVM) with 128 MiB and a 512-byte disk
whose boot sector spins (jmp $), so that a vCPU stays busy.

The settings this machine needs (qemu.conf, below, and the namespace):
- cgroup_controllers = ["cpuset"]: libvirt writes the advised nodes into the
  cpuset of the guest's cgroups (machine/qemu-N-NAME.libvirt-qemu/{emulator,
  vcpuN}); the other v1 controllers mounted here are not needed for that
  and are left out, so that libvirt writes nothing else on the host. Without
  systemd as PID 1 (no machined) libvirt creates these cgroups itself; the
  test removes machine/ afterwards when it was not there before.
- the empty cgroup2 mount at /sys/fs/cgroup/unified is unmounted in the
  namespace: libvirt 9.0 takes a hybrid hierarchy whose v2 part has no
  controllers for a v2 backend and fails the start with "v2 controller
  '(null)' is not available".
- user/group root, security_driver "none", dynamic_ownership 0, namespaces
  []: QEMU runs as root without an AppArmor profile, chown()ed files or a
  private /dev of its own (none of which placement needs), in the test's
  namespace. Debian's libvirt looks its default user libvirt-qemu up at
  start even so (the user comes with libvirt-daemon-system, not installed
  here): the namespace gets a copy of /etc/passwd and /etc/group with it
  added.
- stdio_handler "file": QEMU's log is written by libvirtd (no virtlogd).
- libvirtd.conf logs util.command (the numad command line) and qemu_process
  (the node list numad answered) at debug level to the private log dir.
"""
import glob
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

LIBVIRTD = "/usr/sbin/libvirtd"
VIRSH = "/usr/bin/virsh"
QEMU = "/usr/bin/qemu-system-x86_64"
NUMAD = "/usr/bin/numad"
CPUSET = "/sys/fs/cgroup/cpuset"

LIBVIRTD_CONF = """log_filters="1:util.command 1:qemu.qemu_process"
log_outputs="1:file:/var/log/libvirt/libvirtd.log"
"""

QEMU_CONF = """user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
namespaces = [ ]
stdio_handler = "file"
cgroup_controllers = [ "cpuset" ]
"""

# Runs as: unshare -m --propagation private sh -c NAMESPACE sh DIR DAEMON
# libvirtd [args]. Parents that do not exist on the host (/run/libvirt...)
# get an empty tmpfs first, so that no directory is created on the host;
# /etc/libvirt comes with libvirt-daemon.
NAMESPACE = r"""
set -eu
dir=$1 daemon=$2
shift 2
for d in /run/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt; do
        if [ ! -d "$d" ]; then
                parent=$(dirname "$d")
                mount -t tmpfs -o mode=755 np-libvirt "$parent"
                mkdir "$d"
        fi
done
mount --bind "$dir/run" /run/libvirt
mount --bind "$dir/lib" /var/lib/libvirt
mount --bind "$dir/log" /var/log/libvirt
mount --bind "$dir/cache" /var/cache/libvirt
mount --bind "$dir/etc" /etc/libvirt
cp /etc/passwd "$dir/passwd"
cp /etc/group "$dir/group"
getent passwd libvirt-qemu >/dev/null || echo "libvirt-qemu:x:64055:64055::/var/lib/libvirt:/usr/sbin/nologin" >>"$dir/passwd"
getent group libvirt-qemu >/dev/null || echo "libvirt-qemu:x:64055:" >>"$dir/group"
mount --bind "$dir/passwd" /etc/passwd
mount --bind "$dir/group" /etc/group
if mountpoint -q /sys/fs/cgroup/unified; then umount /sys/fs/cgroup/unified; fi
mount --bind "$daemon" /usr/bin/numad
exec "$@"
"""

DOMAIN = """<domain type='qemu'>
  <name>{name}</name>
  <memory unit='MiB'>128</memory>
  {vcpu}
  {extra}
  <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>
  <devices>
    <emulator>{qemu}</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file='{disk}'/>
      <target dev='hda' bus='ide'/>
    </disk>
    <video><model type='none'/></video>
    <memballoon model='none'/>
  </devices>
</domain>
"""

AUTO = ("<vcpu placement='auto'>2</vcpu>",
        "<numatune><memory mode='strict' placement='auto'/></numatune>")
PINNED = ("<vcpu placement='static'>2</vcpu>",
          """<cputune>
    <vcpupin vcpu='0' cpuset='0'/>
    <vcpupin vcpu='1' cpuset='0'/>
    <emulatorpin cpuset='0'/>
  </cputune>
  <numatune><memory mode='strict' nodeset='0'/></numatune>""")


def parse_list(s):
    """A kernel or libvirt list ("0-3,6") as a set of ints."""
    out = set()
    for part in s.strip().split(","):
        if part:
            a, _, b = part.partition("-")
            out |= set(range(int(a), int(b or a) + 1))
    return out


def read(path):
    with open(path) as f:
        return f.read()


def node_cpus(nodes):
    cpus = set()
    for n in nodes:
        cpus |= parse_list(read("/sys/devices/system/node/node%d/cpulist" % n))
    return cpus


class Libvirtd:
    """The real libvirtd in its own mount namespace, with the numaplaced
    binary over /usr/bin/numad, talking to `bus`."""

    def __init__(self, bus):
        self.dir = tempfile.mkdtemp(prefix="np-libvirt-")
        for d in ("run", "lib", "log", "cache", "etc"):
            os.makedirs(os.path.join(self.dir, d))
        with open(os.path.join(self.dir, "etc", "libvirtd.conf"), "w") as f:
            f.write(LIBVIRTD_CONF)
        with open(os.path.join(self.dir, "etc", "qemu.conf"), "w") as f:
            f.write(QEMU_CONF)
        self.disk = os.path.join(self.dir, "boot.img")
        with open(self.disk, "wb") as f:
            f.write(b"\xeb\xfe" + bytes(508) + b"\x55\xaa")
        self.uri = "qemu:///system?socket=" + os.path.join(self.dir, "run", "libvirt-sock")
        self.log = os.path.join(self.dir, "log", "libvirtd.log")
        self.machine_existed = os.path.isdir(os.path.join(CPUSET, "machine"))
        self.qemu_pids = set()
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address)
        env.pop("NOTIFY_SOCKET", None)
        self.out = open(os.path.join(self.dir, "stdout"), "w")
        self.proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", NAMESPACE, "sh",
                                      self.dir, nptest.DAEMON, LIBVIRTD, "--config", "/etc/libvirt/libvirtd.conf"],
                                     env=env, stdout=self.out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while self.virsh("version", check=False).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError("libvirtd did not start:\n" + self.output())
            time.sleep(0.2)

    def output(self):
        text = read(os.path.join(self.dir, "stdout"))
        if os.path.exists(self.log):
            text += "\n--- libvirtd.log (errors):\n" + "\n".join(
                line for line in read(self.log).splitlines() if ": error : " in line)
        return text

    def virsh(self, *args, check=True):
        r = subprocess.run([VIRSH, "-q", "-c", self.uri] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120)
        if check and r.returncode != 0:
            raise AssertionError("virsh %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
        return r

    def define(self, name, vcpu, extra):
        xml = os.path.join(self.dir, name + ".xml")
        with open(xml, "w") as f:
            f.write(DOMAIN.format(name=name, vcpu=vcpu, extra=extra, qemu=QEMU, disk=self.disk))
        self.virsh("define", xml)

    def start(self, name):
        """virsh start: its result (the guest's QEMU pid is remembered)."""
        r = self.virsh("start", name, check=False)
        pid = self.qemu_pid(name)
        if pid:
            self.qemu_pids.add(pid)
        return r

    def qemu_pid(self, name):
        try:
            return int(read(os.path.join(self.dir, "run", "qemu", name + ".pid")))
        except (OSError, ValueError):
            return None

    def stop(self):
        """Every guest destroyed, libvirtd stopped, QEMU gone, the cgroups
        libvirt made removed, the directories deleted."""
        if self.proc.poll() is None:
            names = self.virsh("list", "--name", check=False).stdout.split()
            for n in names:
                self.virsh("destroy", n, check=False)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in self.qemu_pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while any(os.path.exists("/proc/%d" % p) for p in self.qemu_pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        # libvirt removes a guest's cgroups when it stops; what a failed
        # stop left of this test's guests (np-*) goes here
        ours = os.path.join(CPUSET, "machine", "qemu-*-np-*.libvirt-qemu")
        for d in sorted(glob.glob(os.path.join(ours, "*")) + glob.glob(ours), reverse=True):
            if os.path.isdir(d):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
        if not self.machine_existed:
            try:
                os.rmdir(os.path.join(CPUSET, "machine"))
            except OSError:
                pass
        self.out.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def threads_allowed(pid):
    """{tid: (Cpus_allowed_list, Mems_allowed_list)} of every thread."""
    out = {}
    for st in glob.glob("/proc/%d/task/*/status" % pid):
        try:
            text = read(st)
        except OSError:
            continue
        cpus = re.search(r"^Cpus_allowed_list:\s*(\S+)", text, re.M).group(1)
        mems = re.search(r"^Mems_allowed_list:\s*(\S+)", text, re.M).group(1)
        out[int(st.split("/")[4])] = (parse_list(cpus), parse_list(mems))
    return out


def cpuset_cgroup(pid):
    for line in read("/proc/%d/cgroup" % pid).splitlines():
        _, ctrls, path = line.split(":", 2)
        if "cpuset" in ctrls.split(","):
            return path
    return None


class LibvirtCase(BusTestCase):
    def setUp(self):
        super().setUp()
        for prog in (LIBVIRTD, VIRSH, QEMU):
            if not os.access(prog, os.X_OK):
                self.fail("%s is missing: install libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients "
                          "qemu-system-x86 (run-tests.sh does)" % prog)
        self.numad_before = os.stat(NUMAD) if os.path.exists(NUMAD) else None

    def libvirtd(self):
        lv = Libvirtd(self.bus)
        self.addCleanup(self.check_numad_untouched)
        self.addCleanup(lv.stop)
        return lv

    def check_numad_untouched(self):
        # the bind mount was the namespace's only: the host's /usr/bin/numad
        # (the numad package's, when installed) is the file it was
        after = os.stat(NUMAD) if os.path.exists(NUMAD) else None
        if self.numad_before is None:
            self.assertIsNone(after)
        else:
            self.assertEqual((after.st_ino, after.st_dev, after.st_size, after.st_mtime),
                             (self.numad_before.st_ino, self.numad_before.st_dev, self.numad_before.st_size,
                              self.numad_before.st_mtime))


ADVISE_CONF = """[Daemon]
Mode=advise
ScanIntervalSec=3600
MaxScanIntervalSec=3600
"""


class AutoPlacement(LibvirtCase):
    def monitor_advise(self):
        """busctl monitor of Advise() calls on the bus: a function that
        stops it and returns what it printed."""
        d = tempfile.mkdtemp(prefix="np-monitor-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "monitor")
        with open(path, "w") as out:
            mon = subprocess.Popen(["busctl", "--address=" + self.bus.address, "monitor",
                                    "--match=type='method_call',member='Advise'"], stdout=out,
                                   stderr=subprocess.STDOUT)

        def stop():
            if mon.poll() is None:
                mon.terminate()
                mon.wait(10)
            return read(path)
        self.addCleanup(stop)
        # listening once its BecomeMonitor() call is through (it says so
        # on stderr then)
        deadline = time.monotonic() + 10
        while "Monitoring bus" not in read(path):
            self.assertLess(time.monotonic(), deadline, "busctl monitor did not start")
            time.sleep(0.1)
        return stop

    def test_guest_placed_where_numaplaced_says(self):
        self.start(ADVISE_CONF)
        lv = self.libvirtd()
        monitor = self.monitor_advise()
        lv.define("np-auto", *AUTO)
        r = lv.start("np-auto")
        self.assertEqual(r.returncode, 0, r.stderr + lv.output())
        # numad -w asked the running daemon (not the machine itself)
        calls = monitor()
        self.assertIn("Member=Advise", calls)
        log = read(lv.log)
        # libvirt ran numaplaced as numad: 2 vCPUs, 128 MiB
        self.assertRegex(log, r"About to run /usr/bin/numad -w 2:128\n")
        m = re.search(r"Nodeset returned from numad: (\S+)", log)
        self.assertIsNotNone(m, log)
        nodes = parse_list(m.group(1))
        with_memory = parse_list(read("/sys/devices/system/node/has_memory"))
        self.assertTrue(nodes and nodes <= with_memory, (nodes, with_memory))
        # the same answer the daemon gives on the bus for the same job (the
        # node list is "0" on a one-node machine)
        out = self.bus.call("Advise", "dt", 2, 128 << 20).stdout.split()
        self.assertEqual({int(v) for v in out[2:]}, nodes)

        # every QEMU thread (main, vCPUs, I/O) runs on those nodes' CPUs
        # and allocates from those nodes
        pid = lv.qemu_pid("np-auto")
        self.assertIsNotNone(pid)
        threads = threads_allowed(pid)
        self.assertGreaterEqual(len(threads), 3, threads)  # main, 2 vCPUs at least
        for tid, (cpus, mems) in threads.items():
            self.assertEqual(cpus, node_cpus(nodes), "thread %d" % tid)
            self.assertEqual(mems, nodes, "thread %d" % tid)
        # through its cgroup's cpuset, which libvirt wrote
        cg = cpuset_cgroup(pid)
        self.assertRegex(cg, r"^/machine/qemu-\d+-np-auto\.libvirt-qemu/emulator$")
        self.assertEqual(parse_list(read(CPUSET + cg + "/cpuset.mems")), nodes)


class AdviceRefused(LibvirtCase):
    # The bus refuses Advise() (a mandatory deny, which outranks the
    # project's policy for root): the daemon runs and the call fails with
    # an error, as any refusal does.
    bus_extra_config = """<policy context="mandatory">
    <deny send_destination="org.numaplaced1" send_interface="org.numaplaced1.Manager" send_member="Advise"/>
  </policy>"""

    def test_guest_not_started(self):
        d = self.start(ADVISE_CONF)
        lv = self.libvirtd()
        lv.define("np-refused", *AUTO)
        r = lv.start("np-refused")
        self.assertNotEqual(r.returncode, 0, r.stdout)
        # the error libvirt reports names numad
        self.assertIn("Failed to query numad for the advisory nodeset", r.stderr)
        self.assertEqual(lv.virsh("domstate", "np-refused").stdout.strip(), "shut off")
        # its log says why: numad exited 1 with numaplaced's message
        log = read(lv.log)
        self.assertRegex(log, r"/usr/bin/numad -w 2:128\) unexpected exit status \d+: numaplaced: .*Advise")
        # and the daemon is still there
        self.assertTrue(d.alive())


# Low thresholds make the guest significant (its vCPU spins); Mode=advise,
# since every busy process of the host is significant too and none may move.
FOREIGN_CONF = """[Daemon]
Mode=advise
ScanIntervalSec=1
MaxScanIntervalSec=1
[Placement]
MinProcessMemory=1M
MinProcessCPU=0.05
"""


class PinnedGuest(LibvirtCase):
    def test_pinned_guest_is_foreign(self):
        d = self.start(FOREIGN_CONF)
        lv = self.libvirtd()
        lv.define("np-pinned", *PINNED)
        r = lv.start("np-pinned")
        self.assertEqual(r.returncode, 0, r.stderr + lv.output())
        # no numad without placement='auto'
        self.assertNotIn("/usr/bin/numad", read(lv.log))
        pid = lv.qemu_pid("np-pinned")
        before = threads_allowed(pid)
        cg = cpuset_cgroup(pid)
        self.assertRegex(cg, r"^/machine/qemu-\d+-np-pinned\.libvirt-qemu/emulator$")
        # libvirt pinned every thread (emulator and vCPUs) to CPU 0
        for tid, (cpus, mems) in before.items():
            self.assertEqual((cpus, mems), ({0}, {0}), "thread %d" % tid)

        path = "/org/numaplaced1/process/%d" % pid
        iface = "org.numaplaced1.Process"
        deadline = time.monotonic() + 60
        state = None
        while time.monotonic() < deadline:
            r = self.bus.busctl("get-property", nptest.MGR[0], path, iface, "State", check=False)
            if r.returncode == 0:
                state = nptest.parse_busctl(r.stdout.strip())
                if state == "foreign":
                    break
            time.sleep(0.5)
        self.assertEqual(state, "foreign", d.stderr())
        decision = self.bus.get("Decision", path=path, iface=iface)
        self.assertIn("narrowed by someone else (cgroup %s)" % cg, decision)
        self.assertEqual(self.bus.get("Cgroup", path=path, iface=iface), cg)
        # left alone: two more scans, and every thread is where libvirt put it
        scans = self.bus.get("Scans")
        deadline = time.monotonic() + 30
        while self.bus.get("Scans") < scans + 2:
            self.assertLess(time.monotonic(), deadline, "the daemon does not scan")
            time.sleep(0.2)
        self.assertEqual(self.bus.get("State", path=path, iface=iface), "foreign")
        after = threads_allowed(pid)
        for tid, allowed in after.items():
            if tid in before:
                self.assertEqual(allowed, before[tid], "thread %d" % tid)
        self.assertTrue(d.alive())


if __name__ == "__main__":
    nptest.main()
