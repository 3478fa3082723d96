# SPDX-License-Identifier: GPL-2.0-or-later
"""A real Debian 12 system under QEMU: systemd as PID 1, cgroup v2, dbus,
polkitd, and numaplaced installed the way a package installs it.

The other vm tests boot Debian's kernel with a busybox initramfs; this one
boots a whole root filesystem so that the daemon runs under its installed
unit (systemd/numaplaced.service.in, every hardening line of it), is started,
reloaded, stopped and restarted by systemd, and is asked over the real
system bus with polkit in the loop.

- The base system: `mmdebstrap --variant=minbase` of bookworm with the
  host's apt sources and PACKAGES, as a tarball in the vm cache
  (<builddir>/tests/vm/cache/sysvm-<hash>.tar, the hash of the package list
  and options: a second run builds nothing), plus the image's own kernel and
  initramfs taken out of it.
- Per run: the tarball is unpacked, the source tree is configured for a
  packager (`--prefix=/usr --sysconfdir=/etc`), built and installed into it
  with `meson install --destdir`, the scenario is added as a service that
  runs after boot and writes its NPVM-* lines to the second serial port,
  units the test does not need are masked, and `mkfs.ext4 -d` makes the disk.
- Boot: QEMU TCG with npvm.Topology's NUMA nodes, virtio disk, the image's
  own vmlinuz and initrd; ttyS0 is the console (kept in runs/<name>.log),
  ttyS1 the results (runs/<name>.results).
"""

import hashlib
import os
import shutil
import subprocess
import tempfile
import time

import npvm

# What the image holds besides minbase: systemd as init, the bus, polkit, a
# kernel with its initramfs (initramfs-tools needs udev), the daemon's
# runtime libraries, and what the scenarios use: PostgreSQL 15 for
# service-pg-4 (the postgresql metapackage pulls postgresql-15, which holds
# pgbench and the pg_prewarm extension as well as the server); podman with
# its runtime (crun), conmon and a network stack its common files depend on
# (netavark, the smaller of the two; the containers run with --network none)
# for service-podman-4; no recommends.
PACKAGES = ["systemd", "systemd-sysv", "dbus", "polkitd", "udev", "linux-image-amd64",
            "procps", "numactl", "libnuma1", "libcgroup2", "libglib2.0-0", "libsystemd0",
            "postgresql", "podman", "crun", "conmon", "netavark"]
DPKG_OPTS = ["path-exclude=/usr/share/man/*", "path-exclude=/usr/share/locale/*",
             "path-exclude=/usr/share/doc/*", "path-include=/usr/share/doc/*/copyright"]
SUITE = "bookworm"

# Units the scenario does not need: masked to shorten the boot (and a getty
# on a serial port would swallow the test's output).
MASK = ["getty.target", "serial-getty@.service", "console-getty.service", "systemd-logind.service",
        "apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "fstrim.timer",
        "systemd-tmpfiles-clean.timer", "systemd-timesyncd.service", "cron.service",
        "systemd-networkd.service", "systemd-resolved.service", "networking.service",
        "systemd-update-utmp.service", "systemd-update-utmp-runlevel.service"]

# Two unprivileged users for the polkit checks.
USERS = [("alice", 1000), ("bob", 1001)]

SCENARIO_UNIT = """[Unit]
Description=npvm scenario
After=basic.target dbus.service

[Service]
Type=oneshot
ExecStart=/npvm/run.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS1
TTYReset=no
TTYVHangup=no
"""

RUN_SH = """#!/bin/bash
# the scenario's frame: markers, its exit status, then power off
echo NPVM-BEGIN
bash /npvm/scenario.sh
rc=$?
echo "NPVM-END rc=$rc"
sync
# (poweroff.target directly: logind, which "systemctl poweroff" asks first, is masked)
systemctl start --no-block --job-mode=replace-irreversibly poweroff.target
"""


def _key():
    h = hashlib.sha256(repr((SUITE, sorted(PACKAGES), DPKG_OPTS)).encode()).hexdigest()
    return h[:12]


def base_image():
    """(tarball, vmlinuz, initrd) of the cached base system; built with
    mmdebstrap when missing."""
    npvm.ensure_host_commands("mmdebstrap", "mkfs.ext4", "tar")
    cache = npvm.cache_dir()
    key = _key()
    tarball = os.path.join(cache, f"sysvm-{key}.tar")
    kernel = os.path.join(cache, f"sysvm-{key}.vmlinuz")
    initrd = os.path.join(cache, f"sysvm-{key}.initrd")
    with npvm._Lock(".sysvm.lock"):
        if os.path.exists(tarball) and os.path.exists(kernel) and os.path.exists(initrd):
            return tarball, kernel, initrd
        npvm.log(f"building the Debian {SUITE} image with mmdebstrap ({', '.join(PACKAGES)})")
        t0 = time.monotonic()
        # mmdebstrap picks the output format from the name: it must end in .tar
        part = os.path.join(cache, f"sysvm-{key}.part.tar")
        if os.path.lexists(part):
            shutil.rmtree(part) if os.path.isdir(part) else os.unlink(part)
        cmd = ["mmdebstrap", "--mode=root", "--variant=minbase", "--include=" + ",".join(PACKAGES)]
        cmd += [f"--dpkgopt={o}" for o in DPKG_OPTS]
        cmd += [SUITE, part]
        r = npvm._run(cmd)
        if r.returncode != 0:
            raise npvm.HarnessError(f"mmdebstrap failed:\n{r.stdout[-4000:]}")
        # the image's own kernel and initramfs
        with tempfile.TemporaryDirectory(prefix="sysvm-boot-") as d:
            r = npvm._run(["tar", "-xf", part, "-C", d, "--wildcards", "./boot/vmlinuz-*",
                           "./boot/initrd.img-*"])
            if r.returncode != 0:
                raise npvm.HarnessError(f"no kernel or initramfs in the image (tar exit {r.returncode}):\n{r.stdout}")
            boot = os.path.join(d, "boot")
            vm = sorted(f for f in os.listdir(boot) if f.startswith("vmlinuz-"))
            ir = sorted(f for f in os.listdir(boot) if f.startswith("initrd.img-"))
            if not vm or not ir:
                raise npvm.HarnessError(f"no kernel or initramfs in the image: {os.listdir(boot)}")
            shutil.copyfile(os.path.join(boot, vm[-1]), kernel)
            shutil.copyfile(os.path.join(boot, ir[-1]), initrd)
        os.replace(part, tarball)
        npvm.log(f"image built in {time.monotonic() - t0:.0f} s: {os.path.getsize(tarball) >> 20} MB "
                 f"({vm[-1]})")
    return tarball, kernel, initrd


def install_numaplaced(rootdir):
    """Configure the source tree as a packager would (--prefix=/usr
    --sysconfdir=/etc) in a build directory of its own under the vm build
    dir, build it and `meson install --destdir` it into rootdir."""
    src = os.path.dirname(os.path.dirname(npvm.HERE))
    bld = os.path.join(npvm.vm_build_dir(), "sysvm-build")
    if not os.path.exists(os.path.join(bld, "build.ninja")):
        r = npvm._run(["meson", "setup", bld, src, "--prefix=/usr", "--sysconfdir=/etc",
                       "--buildtype=debugoptimized", "-Dvm_tests=false"])
        if r.returncode != 0:
            raise npvm.HarnessError(f"meson setup --prefix=/usr failed:\n{r.stdout[-3000:]}")
    r = npvm._run(["meson", "compile", "-C", bld, "daemon/numaplaced:executable"])
    if r.returncode != 0:
        raise npvm.HarnessError(f"meson compile failed:\n{r.stdout[-3000:]}")
    r = npvm._run(["meson", "install", "-C", bld, "--no-rebuild", "--destdir", rootdir],
                  env=dict(os.environ, DESTDIR=""))
    if r.returncode != 0:
        raise npvm.HarnessError(f"meson install failed:\n{r.stdout[-3000:]}")
    return r.stdout


def expand(lst):
    """A kernel list ("1-2,4") as a sorted list of numbers."""
    out = []
    for part in lst.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return sorted(out)


def checked(res):
    """A Checker for the boot's results, with what every scenario of the
    system needs: it completed (else the console's end is printed), systemd
    is PID 1, cgroup v2 is mounted."""
    t = npvm.Checker(res)
    if not res.completed:
        print(res.boot_console[-6000:])
    t.require_completed()
    t.eq(res.get("pid1"), "systemd", "systemd is PID 1")
    t.eq(res.get("cgroup"), "cgroup2fs", "cgroup v2 at /sys/fs/cgroup")
    return t


class SysVM:
    """One boot of the Debian system with a bash scenario."""

    def __init__(self, name, topology):
        self.name = name
        self.topology = topology
        self.files = {}
        self.commands = npvm.ensure_host_commands(npvm.QEMU)

    def add_file(self, dest, data, mode=0o644):
        self.files[dest.lstrip("/")] = (data, mode)

    def add_host_file(self, host_path, dest, mode=0o755):
        with open(host_path, "rb") as f:
            self.files[dest.lstrip("/")] = (f.read(), mode)

    def add_workload(self):
        """This build's np-workload as /usr/local/bin/np-workload."""
        self.add_host_file(os.environ.get("NPVM_WORKLOAD") or
                           os.path.join(npvm.build_root(), "tests", "tools", "np-workload"),
                           "/usr/local/bin/np-workload")

    def _populate(self, rootdir, script):
        install_numaplaced(rootdir)
        for dest, (data, mode) in self.files.items():
            p = os.path.join(rootdir, dest)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(data if isinstance(data, bytes) else data.encode())
            os.chmod(p, mode)
        os.makedirs(os.path.join(rootdir, "npvm"), exist_ok=True)
        for name, data in (("run.sh", RUN_SH), ("scenario.sh", script)):
            p = os.path.join(rootdir, "npvm", name)
            with open(p, "w") as f:
                f.write(data)
            os.chmod(p, 0o755)
        etc = os.path.join(rootdir, "etc")
        sysd = os.path.join(etc, "systemd", "system")
        with open(os.path.join(sysd, "npvm-scenario.service"), "w") as f:
            f.write(SCENARIO_UNIT)
        wants = os.path.join(sysd, "multi-user.target.wants")
        os.makedirs(wants, exist_ok=True)
        os.symlink("/etc/systemd/system/npvm-scenario.service", os.path.join(wants, "npvm-scenario.service"))
        for unit in MASK:
            link = os.path.join(sysd, unit)
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink("/dev/null", link)
        with open(os.path.join(etc, "hostname"), "w") as f:
            f.write("npvm\n")
        with open(os.path.join(etc, "fstab"), "w") as f:
            f.write("/dev/vda / ext4 rw,errors=remount-ro 0 1\n")
        for user, uid in USERS:
            with open(os.path.join(etc, "passwd"), "a") as f:
                f.write(f"{user}:x:{uid}:{uid}::/nonexistent:/bin/bash\n")
            with open(os.path.join(etc, "group"), "a") as f:
                f.write(f"{user}:x:{uid}:\n")
            with open(os.path.join(etc, "shadow"), "a") as f:
                f.write(f"{user}:!:19000::::::\n")

    def run(self, script, timeout=600):
        tarball, kernel, initrd = base_image()
        outdir = os.path.join(npvm.vm_build_dir(), "runs")
        os.makedirs(outdir, exist_ok=True)
        image = os.path.join(outdir, f"{self.name}.ext4")
        results = os.path.join(outdir, f"{self.name}.results")
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="sysvm-root-", dir=npvm.vm_build_dir()) as rootdir:
            r = npvm._run(["tar", "-xpf", tarball, "-C", rootdir])
            if r.returncode != 0:
                raise npvm.HarnessError(f"cannot unpack {tarball}:\n{r.stdout[-2000:]}")
            self._populate(rootdir, script)
            if os.path.exists(image):
                os.unlink(image)
            r = npvm._run(["mkfs.ext4", "-q", "-F", "-L", "npvm", "-d", rootdir, image, "2G"])
            if r.returncode != 0:
                raise npvm.HarnessError(f"mkfs.ext4 -d failed:\n{r.stdout[-2000:]}")
        npvm.log(f"'{self.name}': disk image made in {time.monotonic() - t0:.0f} s")
        if os.path.exists(results):
            os.unlink(results)
        cmdline = ["root=/dev/vda", "rw", "console=ttyS0", "quiet", "loglevel=3", "nokaslr",
                   "numa_balancing=disable", "systemd.show_status=0", "panic=-1"]
        cmd = [self.commands[npvm.QEMU], "-accel", "tcg", "-nographic", "-no-reboot", "-nic", "none",
               "-kernel", kernel, "-initrd", initrd, "-append", " ".join(cmdline),
               "-drive", f"file={image},format=raw,if=virtio,cache=unsafe",
               "-serial", "mon:stdio", "-serial", f"file:{results}"] + self.topology.qemu_args()
        with open(os.path.join(outdir, f"{self.name}.cmd"), "w") as f:
            f.write(" ".join(f"'{a}'" if " " in a else a for a in cmd) + "\n")
        logpath = os.path.join(outdir, f"{self.name}.log")
        npvm.log(f"booting '{self.name}' (Debian {SUITE}, systemd): {self.topology.describe()}, "
                 f"timeout {timeout} s")
        start = time.monotonic()
        timed_out = False
        with open(logpath, "wb") as out:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
            npvm._current_qemu = proc
            try:
                while proc.poll() is None:
                    if time.monotonic() - start >= timeout:
                        timed_out = True
                        proc.kill()
                        break
                    time.sleep(0.2)
                proc.wait()
            finally:
                npvm._current_qemu = None
        wall = time.monotonic() - start
        text = ""
        if os.path.exists(results):
            with open(results, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        with open(logpath, "rb") as f:
            console = f.read().decode("utf-8", "replace")
        res = npvm.Result(self.name, text, wall, timed_out, proc.returncode)
        res.boot_console = console
        os.unlink(image)  # 2 GB sparse; the console and results are kept
        npvm.log(f"'{self.name}' done in {wall:.1f} s{' (TIMED OUT)' if timed_out else ''}, "
                 f"{len(res.items)} result lines")
        return res
