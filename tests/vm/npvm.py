#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""npvm: run scenario scripts inside a real Debian kernel under QEMU with a
chosen NUMA topology, and bring structured results back.

Standard library only.  The pieces, usable on their own:

  ensure_host_commands()  install missing host tools from Debian packages
  fetch_kernel()          apt-get download + dpkg-deb -x the Debian kernel,
                          cached in the build directory
  Topology                nodes, memory and CPUs per node, distances
  Initramfs               newc cpio writer, adds binaries with their ldd libs
  VM                      initramfs + topology + scenario -> boot -> Result
  Result / Checker        parsed result lines, assertions, failure report
  run_test()              wrapper for the meson test scripts (timing, errors)

Inside the VM the scenario script runs under busybox sh after /npvm/lib.sh
(tests/vm/lib.sh) was sourced; it reports with `np_result KEY VALUE...`,
which prints `NPVM-R KEY VALUE...` between the NPVM-BEGIN and NPVM-END
markers on the serial console.

Run `python3 tests/vm/npvm.py --help` for the command line (run a script in
a VM, or get an interactive shell).
"""

import argparse
import copy
import fcntl
import glob
import json
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

MARK_BEGIN = "NPVM-BEGIN"
MARK_END = "NPVM-END"
MARK_RESULT = "NPVM-R"
MARK_HOST = "NPVM-HOST"     # a request of the scenario to the host (VM(hotplug_mb=...))
MARK_DAEMON = "NPVM-DAEMON"  # the scenario starts the placer under test (lib.sh)
# what the guest kernel prints (KERN_EMERG, so past printk level 1) when a
# CPU ran in the kernel without scheduling for 20 s and more
LOCKUP = "watchdog: BUG: soft lockup"

QEMU = "qemu-system-x86_64"

# Host command -> Debian package providing it.
PACKAGES = {
    QEMU: "qemu-system-x86",
    "busybox": "busybox-static",
    "dpkg-deb": "dpkg",
    "apt-get": "apt",
    "ldd": "libc-bin",
    "numactl": "numactl",
    "migratepages": "numactl",
    "numad": "numad",
    "dbus-daemon": "dbus-daemon",
    "busctl": "systemd",
    "gnuplot": "gnuplot-nox",
    "mmdebstrap": "mmdebstrap",
    "mkfs.ext4": "e2fsprogs",
    "tar": "tar",
}

DEFAULT_CMDLINE = ["console=ttyS0", "panic=-1", "quiet", "loglevel=1", "nokaslr",
                   # automatic NUMA balancing would move pages behind the
                   # scenario's back; a scenario can ask for it again.
                   "numa_balancing=disable"]


# A normal boot reaches the scenario in 6-15 s under TCG on 2 cores; one
# that has not after this long hung in the kernel (seen once in CI: nothing
# after SeaBIOS for 240 s) and is booted again (VM.run).
BOOT_DEADLINE = int(os.environ.get("NPVM_BOOT_DEADLINE", "120"))


class HarnessError(Exception):
    """The harness itself cannot run (missing tool, download failed...)."""


def log(msg):
    print(f"npvm: {msg}", flush=True)


# --------------------------------------------------------------------------
# Build directory, cache, locking

def build_root():
    root = os.environ.get("NP_BUILD_ROOT")
    if root:
        return os.path.abspath(root)
    # Run by hand from the source tree: guess ./build-vm or ./build.
    src = os.path.dirname(os.path.dirname(HERE))
    for cand in ("build-vm", "build"):
        if os.path.isdir(os.path.join(src, cand, "meson-private")):
            return os.path.join(src, cand)
    raise HarnessError("NP_BUILD_ROOT is not set and no build directory was found; "
                       "run through `meson test --suite vm` or set NP_BUILD_ROOT")


def vm_build_dir():
    d = os.path.join(build_root(), "tests", "vm")
    os.makedirs(d, exist_ok=True)
    return d


def cache_dir():
    d = os.environ.get("NPVM_CACHE") or os.path.join(vm_build_dir(), "cache")
    os.makedirs(d, exist_ok=True)
    return d


class _Lock:
    """An flock on a file in the cache, so parallel tests fetch once."""

    def __init__(self, name):
        self.path = os.path.join(cache_dir(), name)

    def __enter__(self):
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


# --------------------------------------------------------------------------
# Host tools

def _run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kw)


_apt_updated = False


def _apt_update():
    global _apt_updated
    if _apt_updated:
        return
    log("apt-get update")
    r = _run(["apt-get", "update"], env=_apt_env())
    if r.returncode != 0:
        raise HarnessError(f"apt-get update failed:\n{r.stdout}")
    _apt_updated = True


def _apt_env():
    env = dict(os.environ)
    env["DEBIAN_FRONTEND"] = "noninteractive"
    return env


def find_command(name):
    """Path of a host command, looking in sbin too."""
    path = shutil.which(name)
    if path:
        return path
    for d in ("/usr/sbin", "/sbin", "/usr/bin", "/bin"):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


def ensure_host_commands(*names):
    """Make sure the host commands exist; install the Debian packages that
    provide missing ones (as root), or raise HarnessError saying what to
    install.  Returns {name: path}."""
    missing = [n for n in names if not find_command(n)]
    if missing:
        pkgs = sorted({PACKAGES.get(n, n) for n in missing})
        if os.geteuid() != 0:
            raise HarnessError(
                f"missing host command(s) {', '.join(missing)}; install the Debian "
                f"package(s) as root: apt-get install -y {' '.join(pkgs)}")
        with _Lock(".apt.lock"):
            missing = [n for n in names if not find_command(n)]
            if missing:
                _apt_update()
                log(f"installing {' '.join(pkgs)} (for {', '.join(missing)})")
                r = _run(["apt-get", "install", "-y", "--no-install-recommends"] + pkgs,
                         env=_apt_env())
                if r.returncode != 0:
                    raise HarnessError(f"apt-get install {' '.join(pkgs)} failed:\n{r.stdout}")
    paths = {}
    for n in names:
        p = find_command(n)
        if not p:
            raise HarnessError(f"host command {n} still missing after installing "
                               f"Debian package {PACKAGES.get(n, n)}")
        paths[n] = p
    return paths


# --------------------------------------------------------------------------
# Kernel

def kernel_package():
    """The versioned kernel package that linux-image-amd64 depends on."""
    def query():
        r = _run(["apt-cache", "depends", "linux-image-amd64"])
        m = re.search(r"Depends:\s*(linux-image-[0-9][^\s]*)", r.stdout)
        return m.group(1) if m else None
    pkg = query()
    if not pkg:
        _apt_update()
        pkg = query()
    if not pkg:
        raise HarnessError("apt-cache depends linux-image-amd64 names no kernel package")
    return pkg


def fetch_kernel():
    """Path to a cached vmlinuz from Debian's kernel package; downloads and
    unpacks it on first use.  NPVM_KERNEL overrides."""
    override = os.environ.get("NPVM_KERNEL")
    if override:
        if not os.path.isfile(override):
            raise HarnessError(f"NPVM_KERNEL={override} does not exist")
        return override
    cache = cache_dir()
    with _Lock(".kernel.lock"):
        found = sorted(glob.glob(os.path.join(cache, "vmlinuz-*")))
        if found:
            return found[-1]
        ensure_host_commands("apt-get", "dpkg-deb")
        pkg = kernel_package()
        log(f"downloading kernel package {pkg} into {cache}")
        r = _run(["apt-get", "download", pkg], cwd=cache, env=_apt_env())
        debs = glob.glob(os.path.join(cache, pkg + "_*.deb"))
        if r.returncode != 0 or not debs:
            raise HarnessError(f"apt-get download {pkg} failed:\n{r.stdout}")
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            r = _run(["dpkg-deb", "-x", debs[0], tmp])
            if r.returncode != 0:
                raise HarnessError(f"dpkg-deb -x {debs[0]} failed:\n{r.stdout}")
            images = glob.glob(os.path.join(tmp, "boot", "vmlinuz-*"))
            if not images:
                raise HarnessError(f"{debs[0]} holds no boot/vmlinuz-*")
            dest = os.path.join(cache, os.path.basename(images[0]))
            shutil.copyfile(images[0], dest + ".tmp")
            os.rename(dest + ".tmp", dest)
        for d in debs:       # the modules are not needed; keep only vmlinuz
            os.unlink(d)
        return dest


# --------------------------------------------------------------------------
# Topology

class Topology:
    """A NUMA topology for QEMU.

    nodes      number of nodes (ids 0..nodes-1)
    mem_mb     MB per node: an int for all, or a list; 0 = a CPU-only node
               (no memdev)
    cpus       CPUs per node: an int for all, or a list; 0 = a memory-only node
    distances  full matrix (list of lists), or None for the two-socket
               default: 10 local, 20 same socket, 30 other socket, where the
               first half of the nodes is socket 0 and the rest socket 1
    CPU ids are handed out in node order: node 0 gets 0..cpus[0]-1, etc.
    """

    def __init__(self, nodes, mem_mb=256, cpus=1, distances=None):
        if nodes < 1:
            raise ValueError("at least one node")
        self.nodes = nodes
        self.mem_mb = list(mem_mb) if isinstance(mem_mb, (list, tuple)) else [mem_mb] * nodes
        ncpus = list(cpus) if isinstance(cpus, (list, tuple)) else [cpus] * nodes
        if len(self.mem_mb) != nodes or len(ncpus) != nodes:
            raise ValueError("mem_mb and cpus need one entry per node")
        if sum(self.mem_mb) <= 0 or sum(ncpus) <= 0:
            raise ValueError("the machine needs memory and CPUs")
        self.cpus = []
        nxt = 0
        for c in ncpus:
            self.cpus.append(list(range(nxt, nxt + c)))
            nxt += c
        self.distances = distances or self.two_socket_distances(nodes)
        if len(self.distances) != nodes or any(len(r) != nodes for r in self.distances):
            raise ValueError("distance matrix must be nodes x nodes")
        # Linux numbers nodes in the order their proximity domains first
        # appear in the ACPI SRAT: CPU entries first (in CPU order), then
        # memory.  A memory-only node placed before a node with CPUs would
        # get another id inside the guest than here, so refuse that.
        seen_memonly = False
        for i in range(nodes):
            if not self.cpus[i]:
                seen_memonly = True
            elif seen_memonly:
                raise ValueError("memory-only nodes (cpus=0) must come after all nodes "
                                 "with CPUs, or Linux numbers the nodes differently")

    @staticmethod
    def two_socket_distances(n):
        sock = [i * 2 // n for i in range(n)]
        return [[10 if i == j else (20 if sock[i] == sock[j] else 30)
                 for j in range(n)] for i in range(n)]

    @property
    def total_mb(self):
        return sum(self.mem_mb)

    @property
    def total_cpus(self):
        return sum(len(c) for c in self.cpus)

    def describe(self):
        return (f"{self.nodes} nodes, MB/node {self.mem_mb}, "
                f"CPUs/node {[len(c) for c in self.cpus]}")

    def qemu_args(self):
        n = self.total_cpus
        args = ["-m", f"{self.total_mb}M",
                # one socket per CPU: QEMU is happy with any CPU->node map
                "-smp", f"{n},sockets={n},cores=1,threads=1"]
        for i in range(self.nodes):
            if self.mem_mb[i]:
                args += ["-object", f"memory-backend-ram,id=m{i},size={self.mem_mb[i]}M"]
            opt = f"node,nodeid={i}"
            if self.cpus[i]:
                c = self.cpus[i]
                opt += f",cpus={c[0]}" if len(c) == 1 else f",cpus={c[0]}-{c[-1]}"
            if self.mem_mb[i]:
                opt += f",memdev=m{i}"
            args += ["-numa", opt]
        for i in range(self.nodes):
            for j in range(self.nodes):
                if i != j:
                    args += ["-numa", f"dist,src={i},dst={j},val={self.distances[i][j]}"]
        return args


# --------------------------------------------------------------------------
# Initramfs

class Initramfs:
    """An in-memory newc cpio archive."""

    def __init__(self):
        self.entries = {}   # path (no leading /) -> (mode, bytes)

    @staticmethod
    def _norm(path):
        return os.path.normpath(path).lstrip("/")

    def add_dir(self, path, mode=0o755):
        path = self._norm(path)
        if not path or path == ".":
            return
        parent = os.path.dirname(path)
        if parent:
            self.add_dir(parent)
        cur = self.entries.get(path)
        if cur is None or not stat.S_ISDIR(cur[0]):
            if cur is not None and stat.S_ISLNK(cur[0]):
                return      # a symlinked directory (e.g. lib64 -> lib)
            self.entries[path] = (stat.S_IFDIR | mode, b"")

    def add_file(self, path, data, mode=0o644):
        path = self._norm(path)
        self.add_dir(os.path.dirname(path))
        if isinstance(data, str):
            data = data.encode()
        self.entries[path] = (stat.S_IFREG | mode, data)

    def add_symlink(self, path, target):
        path = self._norm(path)
        self.add_dir(os.path.dirname(path))
        self.entries[path] = (stat.S_IFLNK | 0o777, target.encode())

    def add_host_file(self, host_path, dest=None, mode=None):
        with open(host_path, "rb") as f:
            data = f.read()
        if mode is None:
            mode = stat.S_IMODE(os.stat(host_path).st_mode)
        self.add_file(dest or host_path, data, mode)

    def add_binary(self, host_path, dest=None):
        """Add an executable and every library ldd lists, at their paths."""
        if not os.path.isfile(host_path):
            raise HarnessError(f"binary {host_path} does not exist")
        self.add_host_file(host_path, dest, 0o755)
        for lib in ldd(host_path):
            if self._norm(lib) not in self.entries:
                self.add_host_file(lib, lib, 0o755)

    def write(self, path):
        out = bytearray()
        ino = 1000

        def entry(name, mode, data, nlink):
            nonlocal ino
            ino += 1
            nb = name.encode() + b"\0"
            hdr = "070701" + "".join(f"{v:08X}" for v in (
                ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(nb), 0))
            out.extend(hdr.encode())
            out.extend(nb)
            out.extend(b"\0" * (-(110 + len(nb)) % 4))
            out.extend(data)
            out.extend(b"\0" * (-len(data) % 4))

        for name in sorted(self.entries):
            mode, data = self.entries[name]
            entry(name, mode, data, 2 if stat.S_ISDIR(mode) else 1)
        entry("TRAILER!!!", 0, b"", 1)
        with open(path + ".tmp", "wb") as f:
            f.write(out)
        os.rename(path + ".tmp", path)
        return len(out)


def ldd(binary):
    """Libraries (and the dynamic loader) a binary needs, as host paths."""
    r = _run(["ldd", binary])
    if "not a dynamic executable" in r.stdout or "statically linked" in r.stdout:
        return []
    if r.returncode != 0:
        raise HarnessError(f"ldd {binary} failed:\n{r.stdout}")
    libs = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if "not found" in line:
            raise HarnessError(f"ldd {binary}: {line}")
        m = re.match(r"\S+\s+=>\s+(/\S+)", line) or re.match(r"(/\S+)\s+\(", line)
        if m:
            libs.append(m.group(1))
    return libs


# --------------------------------------------------------------------------
# Results

class Result:
    """What came back from one boot."""

    def __init__(self, name, console, wall, timed_out, qemu_rc):
        self.name = name
        self.console = console
        self.wall = wall
        self.timed_out = timed_out
        self.qemu_rc = qemu_rc
        self.first_boot_hung = None  # why VM.run booted a second time
        self.began = False
        self.ended = False
        self.rc = None
        self.items = []             # (key, value) in order
        for raw in console.splitlines():
            line = raw.rstrip("\r")
            # tolerate stray console bytes before a marker
            for mark in (MARK_RESULT + " ", MARK_BEGIN, MARK_END):
                idx = line.find(mark)
                if idx < 0:
                    continue
                rest = line[idx + len(mark):]
                if mark == MARK_BEGIN:
                    self.began = True
                elif mark == MARK_END:
                    self.ended = True
                    m = re.search(r"rc=(\d+)", rest)
                    self.rc = int(m.group(1)) if m else None
                elif self.began and not self.ended:
                    key, _, value = rest.partition(" ")
                    self.items.append((key, value))
                break

    @property
    def completed(self):
        return self.began and self.ended and not self.timed_out

    def all(self, key):
        return [v for k, v in self.items if k == key]

    def get(self, key, default=None):
        vals = self.all(key)
        return vals[-1] if vals else default

    def prefixed(self, prefix):
        """The results whose keys begin with PREFIX, without it (one phase
        of a script that tags its keys), as a Result of their own."""
        out = copy.copy(self)
        out.items = [(k[len(prefix):], v) for k, v in self.items if k.startswith(prefix)]
        return out

    def int(self, key, default=None):
        v = self.get(key)
        try:
            return int(v.split()[0])
        except (AttributeError, IndexError, ValueError):
            return default

    def kv(self, key):
        """A result line of KEY a=1 b=2 ... as a dict of ints (or strings)."""
        out = {}
        for tok in (self.get(key) or "").split():
            k, sep, v = tok.partition("=")
            if sep:
                out[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
        return out

    def node_kb(self, key):
        """A np_numa_kb result ("0=kB 1=kB ...") as {node: kB}."""
        return {int(k): v for k, v in self.kv(key).items() if k.isdigit()}

    def numactl_hardware(self, key="numactl-H"):
        """Parse captured `numactl -H` lines into
        {'nodes': [ids], 'cpus': {n: [..]}, 'size_mb': {n: MB}, 'distances': {n: {m: d}}}."""
        hw = {"nodes": [], "cpus": {}, "size_mb": {}, "distances": {}}
        header = None
        for line in self.all(key):
            m = re.match(r"\s*node (\d+) cpus:(.*)$", line)
            if m:
                n = int(m.group(1))
                hw["nodes"].append(n)
                hw["cpus"][n] = [int(x) for x in m.group(2).split()]
                continue
            m = re.match(r"\s*node (\d+) size: (\d+) MB", line)
            if m:
                hw["size_mb"][int(m.group(1))] = int(m.group(2))
                continue
            m = re.match(r"\s*node\s+((\d+\s*)+)$", line)
            if m:
                header = [int(x) for x in m.group(1).split()]
                continue
            m = re.match(r"\s*(\d+):\s+((\d+\s*)+)$", line)
            if m and header:
                vals = [int(x) for x in m.group(2).split()]
                hw["distances"][int(m.group(1))] = dict(zip(header, vals))
        return hw


class CheckFailed(Exception):
    pass


# failed checks of this process's tests, for the suite summary (run_test)
FAILED_CHECKS = []


class Checker:
    """Collects assertions about a Result; finish() reports and returns the
    exit code (0 pass, 1 fail) with the scenario's console attached on
    failure."""

    def __init__(self, result):
        self.result = result
        self.failures = []
        self.passes = 0

    def check(self, cond, what):
        if cond:
            self.passes += 1
            print(f"  ok   {what}")
        else:
            self.failures.append(what)
            print(f"  FAIL {what}")
        return bool(cond)

    def eq(self, got, want, what):
        return self.check(got == want, f"{what}: got {got!r}, want {want!r}")

    def near(self, got, want, tol, what):
        ok = got is not None and abs(got - want) <= tol
        return self.check(ok, f"{what}: got {got!r}, want {want!r} +- {tol}")

    def require_completed(self):
        r = self.result
        if r.timed_out:
            self.check(False, f"VM '{r.name}' finished in time (killed after {r.wall:.0f} s)")
        elif not r.began:
            self.check(False, f"VM '{r.name}' reached the scenario ({MARK_BEGIN} seen)")
        elif not r.ended:
            self.check(False, f"VM '{r.name}' scenario ran to its end ({MARK_END} seen)")
        else:
            self.eq(r.rc, 0, f"scenario '{r.name}' exit status")
        return r.completed

    def finish(self):
        r = self.result
        if self.failures:
            print(f"\n---- console output of VM '{r.name}' ({r.wall:.1f} s, "
                  f"qemu rc {r.qemu_rc}{', TIMED OUT' if r.timed_out else ''}) ----")
            print(r.console.replace("\r", "").rstrip())
            print(f"---- end of console output of '{r.name}' ----\n")
            print(f"{len(self.failures)} check(s) failed, {self.passes} passed:")
            for f in self.failures:
                print(f"  - {f}")
            FAILED_CHECKS.extend(self.failures)
            return 1
        print(f"all {self.passes} checks passed")
        return 0


def check_topology(t, result, topo, mem_tol_mb=None, key="numactl-H"):
    """Assert that `numactl -H` inside the VM (captured with
    `np_capture numactl-H numactl -H`) shows exactly the topology asked for:
    nodes, CPUs, memory sizes (within mem_tol_mb) and distances."""
    hw = result.numactl_hardware(key)
    # CPU-only nodes: how they look is reported by the scenario itself.
    want_nodes = list(range(topo.nodes))
    t.eq(sorted(hw["nodes"]), want_nodes, "numactl -H node ids")
    # The kernel keeps back struct pages (~1.6%) and boot-time allocations
    # on every node, and its own image (~50 MB) on one node (node 0 with
    # nokaslr, any node with KASLR).
    image_node = None
    for n in want_nodes:
        t.eq(hw["cpus"].get(n), topo.cpus[n], f"node {n} CPUs")
        want = topo.mem_mb[n]
        got = hw["size_mb"].get(n)
        tol = mem_tol_mb if mem_tol_mb is not None else max(8, want * 3 // 100)
        if mem_tol_mb is None and got is not None and got < want - tol and image_node is None:
            image_node = n
            tol += 64
        t.check(got is not None and want - tol <= got <= want,
                f"node {n} size: got {got} MB, want {want} MB (at most {tol} MB less)")
    for i in want_nodes:
        row = hw["distances"].get(i, {})
        t.eq([row.get(j) for j in want_nodes], topo.distances[i], f"distances from node {i}")


# Smoke part any scenario can include: report the topology and cgroup state
# (checked by check_smoke()).
SMOKE_SCRIPT = r"""
np_capture numactl-H numactl -H
for f in online possible has_cpu has_memory; do
	np_result sys.$f $(cat /sys/devices/system/node/$f)
done
np_result cgroup.mode "$NPVM_CGROUP"
case "$NPVM_CGROUP" in
v1) np_result cgroup.mems $(cat /sys/fs/cgroup/cpuset/cpuset.mems)
    np_result cgroup.cpus $(cat /sys/fs/cgroup/cpuset/cpuset.cpus)
    mkdir /sys/fs/cgroup/cpuset/npvm-test &&
    np_result cgroup.child $(cat /sys/fs/cgroup/cpuset/npvm-test/cpuset.mems 2>&1 | tr -d ' ' )-ok ;;
v2) np_result cgroup.subtree_control $(cat /sys/fs/cgroup/cgroup.subtree_control)
    np_result cgroup.mems $(cat /sys/fs/cgroup/cpuset.mems.effective)
    np_result cgroup.cpus $(cat /sys/fs/cgroup/cpuset.cpus.effective)
    mkdir /sys/fs/cgroup/npvm-test &&
    np_result cgroup.child $(cat /sys/fs/cgroup/npvm-test/cpuset.mems.effective)-ok ;;
esac
"""


def id_set(text):
    """A kernel CPU or node list ("0-2,5") as a set; "none" or "" is empty."""
    out = set()
    for part in str(text or "").replace("none", "").split(","):
        if part:
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    return out


def nodelist(ids):
    """[0,1,2,5] -> '0-2,5' (kernel list format)."""
    out, ids = [], sorted(ids)
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def check_smoke(t, res, topo, cgroup):
    """Assertions for SMOKE_SCRIPT's results."""
    check_topology(t, res, topo)
    all_nodes = list(range(topo.nodes))
    cpu_nodes = [n for n in all_nodes if topo.cpus[n]]
    mem_nodes = [n for n in all_nodes if topo.mem_mb[n]]
    t.eq(res.get("sys.online"), nodelist(all_nodes), "online nodes")
    t.eq(res.get("sys.has_cpu"), nodelist(cpu_nodes), "nodes with CPUs")
    t.eq(res.get("sys.has_memory"), nodelist(mem_nodes), "nodes with memory")
    t.eq(res.get("cgroup.mode"), cgroup, "cgroup mode")
    if cgroup == "v2":
        t.check("cpuset" in (res.get("cgroup.subtree_control") or "").split(),
                "cgroup2 subtree_control has cpuset")
    if cgroup:
        t.eq(res.get("cgroup.mems"), nodelist(mem_nodes), f"cgroup {cgroup} root cpuset mems")
        t.eq(res.get("cgroup.cpus"), f"0-{topo.total_cpus - 1}" if topo.total_cpus > 1 else "0",
             f"cgroup {cgroup} root cpuset cpus")
        # v1 children start with empty mems; v2 children inherit the effective set
        want_child = ("" if cgroup == "v1" else nodelist(mem_nodes)) + "-ok"
        t.eq(res.get("cgroup.child"), want_child, f"cgroup {cgroup} child cpuset created")


# --------------------------------------------------------------------------
# The VM

DBUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
  </policy>
</busconfig>
"""

_current_qemu = None


def _kill_current(*_):
    if _current_qemu and _current_qemu.poll() is None:
        _current_qemu.kill()


class VM:
    """One boot: a topology, a cgroup mode, files and binaries, a scenario.

        vm = VM("workload-4", Topology(4, mem_mb=512), cgroup="v1")
        vm.add_commands("numactl", "migratepages")   # host binaries + libs
        vm.add_workload()                            # tests/tools/np-workload
        res = vm.run(SCRIPT, timeout=300)

    cgroup: "v1" (cpuset hierarchy at /sys/fs/cgroup/cpuset), "v2" (cgroup2 at
    /sys/fs/cgroup with +cpuset in cgroup.subtree_control) or None.
    """

    def __init__(self, name, topology, cgroup="v2", cmdline=None, hotplug_mb=0):
        if cgroup not in ("v1", "v2", None):
            raise ValueError("cgroup must be 'v1', 'v2' or None")
        self.name = name
        self.topology = topology
        self.cgroup = cgroup
        self.cmdline = list(DEFAULT_CMDLINE) + list(cmdline or [])
        # memory hot-add: room for pc-dimms beyond the nodes' memory, a QMP
        # socket, and the kernel onlines what is added; the scenario asks
        # with a console line "NPVM-HOST memadd NODE MB" (np_host_memadd)
        self.hotplug_mb = hotplug_mb
        self.qmp_path = None
        self.host_log = []          # what the host did for the scenario
        if hotplug_mb:
            self.cmdline.append("memhp_default_state=online")
        self.commands = ensure_host_commands(QEMU, "busybox", "ldd")
        self.initramfs = Initramfs()
        self._setup_base()

    def _setup_base(self):
        fs = self.initramfs
        for d in ("proc", "sys", "dev", "run", "tmp", "etc", "root", "var", "mnt",
                  "npvm", "usr/bin", "usr/sbin"):
            fs.add_dir(d)
        fs.add_symlink("var/run", "../run")
        busybox = self.commands["busybox"]
        fs.add_binary(busybox, "bin/busybox")
        r = _run([busybox, "--list-full"])
        for applet in r.stdout.split():
            if applet != "bin/busybox":
                fs.add_symlink(applet, "/bin/busybox")
        fs.add_file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"
                    "messagebus:x:100:101::/nonexistent:/bin/false\n")
        fs.add_file("etc/group", "root:x:0:\nmessagebus:x:101:\n")
        fs.add_file("etc/machine-id", secrets.token_hex(16) + "\n")
        with open(os.path.join(HERE, "init.sh")) as f:
            fs.add_file("init", f.read(), 0o755)
        with open(os.path.join(HERE, "lib.sh")) as f:
            fs.add_file("npvm/lib.sh", f.read(), 0o644)

    # -- contents ---------------------------------------------------------
    def add_commands(self, *names):
        """Host commands (installed from Debian if missing) into /usr/bin."""
        paths = ensure_host_commands(*names)
        for n in names:
            self.initramfs.add_binary(paths[n], f"usr/bin/{n}")

    def add_binary(self, host_path, dest=None):
        """Any binary (with its libraries), by default into /usr/bin."""
        self.initramfs.add_binary(host_path, dest or f"usr/bin/{os.path.basename(host_path)}")

    def add_file(self, dest, data, mode=0o644):
        self.initramfs.add_file(dest, data, mode)

    def add_workload(self):
        """tests/tools/np-workload from the build tree, as /usr/bin/np-workload."""
        path = os.environ.get("NPVM_WORKLOAD") or \
            os.path.join(build_root(), "tests", "tools", "np-workload")
        if not os.path.isfile(path):
            raise HarnessError(f"np-workload not built ({path}); run meson compile")
        self.add_binary(path, "usr/bin/np-workload")

    def add_dbus(self):
        """dbus-daemon with an allow-everything system-bus config at
        /etc/npvm-dbus.conf (np_start_dbus in lib.sh starts it) and busctl."""
        self.add_commands("dbus-daemon", "busctl")
        self.add_file("etc/npvm-dbus.conf", DBUS_CONFIG)
        self.initramfs.add_dir("run/dbus")

    def add_nested_qemu(self):
        """qemu-system-x86_64 for guests inside the VM (TCG in TCG): the
        binary with its libraries, the TCG accelerator module it loads from
        /usr/lib/x86_64-linux-gnu/qemu/ (next to /usr/bin/../lib), SeaBIOS
        as /usr/share/seabios/bios-256k.bin (pass -L /usr/share/seabios) and
        the pc machine's kvmvapic.bin option ROM from /usr/share/qemu."""
        self.add_commands(QEMU)
        qemu = self.commands[QEMU]
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(qemu)))
        modules = os.path.join(prefix, "lib", "x86_64-linux-gnu", "qemu")
        tcg = os.path.join(modules, "accel-tcg-x86_64.so")
        if os.path.isfile(tcg):   # built into the binary where QEMU has no modules
            self.initramfs.add_binary(tcg, "usr/lib/x86_64-linux-gnu/qemu/accel-tcg-x86_64.so")
        for path in ("/usr/share/seabios/bios-256k.bin", "/usr/share/qemu/kvmvapic.bin"):
            if not os.path.isfile(path):
                raise HarnessError(f"{path} is missing (Debian packages seabios, qemu-system-data)")
            self.initramfs.add_host_file(path, path.lstrip("/"), 0o644)

    def add_daemon(self):
        """The project's daemon from the build tree as /usr/sbin/numaplaced."""
        path = os.environ.get("NPVM_DAEMON") or os.path.join(build_root(), "daemon", "numaplaced")
        if not os.path.isfile(path):
            raise HarnessError(f"numaplaced not built ({path}); run meson compile")
        self.add_binary(path, "usr/sbin/numaplaced")

    # -- running ----------------------------------------------------------
    def qemu_command(self, kernel, initrd, interactive=False):
        args = self.topology.qemu_args()
        if self.hotplug_mb:
            i = args.index("-m")
            total = self.topology.total_mb
            args[i + 1] = f"{total}M,slots=4,maxmem={total + self.hotplug_mb}M"
            self.qmp_path = os.path.join(vm_build_dir(), "runs", f"{self.name}.qmp")
            args += ["-qmp", f"unix:{self.qmp_path},server=on,wait=off"]
        return [self.commands[QEMU], "-accel", "tcg", "-nographic", "-no-reboot",
                "-nic", "none", "-kernel", kernel, "-initrd", initrd,
                "-append", " ".join(self.cmdline)] + args

    # -- requests of the scenario to the host (memory hot-add) ---------------
    def _qmp(self, commands):
        """Run QMP commands (dicts) on this boot's monitor; returns the
        replies ("return" or "error" objects, in order)."""
        replies = []
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sk:
            sk.settimeout(30)
            sk.connect(self.qmp_path)
            f = sk.makefile("rw")

            def reply():
                while True:
                    line = f.readline()
                    if not line:
                        raise HarnessError("QMP closed the connection")
                    msg = json.loads(line)
                    if "return" in msg or "error" in msg:
                        return msg
            f.readline()  # the greeting
            for cmd in [{"execute": "qmp_capabilities"}] + commands:
                f.write(json.dumps(cmd) + "\n")
                f.flush()
                replies.append(reply())
        return replies[1:]

    def _host_request(self, line):
        """One NPVM-HOST line of the scenario: 'memadd NODE MB' plugs a
        pc-dimm of MB into NODE (the kernel onlines it)."""
        words = line.split()
        if len(words) == 3 and words[0] == "memadd" and self.qmp_path:
            n = len(self.host_log)
            node, mb = int(words[1]), int(words[2])
            replies = self._qmp([
                {"execute": "object-add", "arguments": {"qom-type": "memory-backend-ram",
                                                        "id": f"hp{n}", "size": mb << 20}},
                {"execute": "device_add", "arguments": {"driver": "pc-dimm", "id": f"dimm{n}",
                                                        "memdev": f"hp{n}", "node": node}}])
            ok = all("return" in r for r in replies)
            self.host_log.append(f"memadd node {node} {mb} MB: {'ok' if ok else replies}")
        else:
            self.host_log.append(f"unknown request {line!r}")
        log(f"'{self.name}': host: {self.host_log[-1]}")

    def _prepare(self, script, interactive):
        env = [f"export NPVM_NAME='{self.name}'", f"export NPVM_CGROUP='{self.cgroup or ''}'",
               f"export NPVM_SHELL='{1 if interactive else 0}'"]
        self.add_file("npvm/env", "\n".join(env) + "\n")
        self.add_file("npvm/scenario.sh", script, 0o755)
        kernel = fetch_kernel()
        outdir = os.path.join(vm_build_dir(), "runs")
        os.makedirs(outdir, exist_ok=True)
        initrd = os.path.join(outdir, f"{self.name}.cpio")
        self.initramfs.write(initrd)
        return kernel, initrd, outdir

    def run(self, script, timeout=300):
        """Boot, run the scenario script, power off; never longer than
        timeout seconds (QEMU is killed).  Returns a Result; the console is
        also kept in <builddir>/tests/vm/runs/<name>.log.

        A boot is killed and booted once more (both the hang and the retry
        are printed, its console is kept in <name>.hung.log) when the
        emulated machine hung before anything under test ran:
        - it has not reached the scenario (no NPVM-BEGIN on the console)
          after BOOT_DEADLINE seconds: the kernel hung before init ran;
        - its kernel reported a soft lockup before the scenario started the
          placer under test (no NPVM-DAEMON yet): a CPU spun in the kernel
          for the harness's own tools (dbus-daemon, busctl).
        A soft lockup after the placer started, and every other failure of
        a scenario that began, is never retried."""
        kernel, initrd, outdir = self._prepare(script, False)
        cmd = self.qemu_command(kernel, initrd)
        with open(os.path.join(outdir, f"{self.name}.cmd"), "w") as f:
            f.write(" ".join(f"'{a}'" if " " in a else a for a in cmd) + "\n")
        logpath = os.path.join(outdir, f"{self.name}.log")
        first_hung = None
        for attempt in (1, 2):
            log(f"booting '{self.name}': {self.topology.describe()}, cgroup {self.cgroup}, "
                f"timeout {timeout} s{', second boot' if attempt == 2 else ''}")
            res, hung = self._boot(cmd, logpath, timeout, attempt == 1)
            if not hung:
                break
            first_hung = hung
            hungpath = os.path.join(outdir, f"{self.name}.hung.log")
            os.replace(logpath, hungpath)
            tail = res.console.replace("\r", "").rstrip().splitlines()[-5:]
            log(f"'{self.name}': {hung}; booting once more (console in {hungpath}, last lines: "
                f"{tail!r})")
        res.first_boot_hung = first_hung
        log(f"'{self.name}' done in {res.wall:.1f} s"
            f"{' (TIMED OUT)' if res.timed_out else ''}, {len(res.items)} result lines")
        return res

    def _boot(self, cmd, logpath, timeout, may_retry):
        """One QEMU run.  Returns (Result, hung): hung is None, or (only
        when may_retry) why the emulated machine is taken as hung before
        anything under test ran (see run())."""
        global _current_qemu
        start = time.monotonic()
        timed_out = False
        hung = None
        began = daemon = False
        seen = 0                    # console bytes read so far (whole lines)
        with open(logpath, "wb") as out:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT)
            _current_qemu = proc
            try:
                while proc.poll() is None:
                    with open(logpath, "rb") as f:
                        f.seek(seen)
                        new = f.read()
                    end = new.rfind(b"\n") + 1
                    seen += end
                    for raw in new[:end].decode("utf-8", "replace").splitlines():
                        if self.qmp_path:
                            idx = raw.find(MARK_HOST + " ")
                            if idx >= 0:
                                self._host_request(raw[idx + len(MARK_HOST) + 1:].strip())
                        began = began or MARK_BEGIN in raw
                        daemon = daemon or MARK_DAEMON in raw
                        if may_retry and not daemon and hung is None and LOCKUP in raw:
                            hung = (f"the guest kernel reported a soft lockup before the scenario "
                                    f"started the placer ({raw.strip()!r})")
                    if hung:
                        break
                    elapsed = time.monotonic() - start
                    if elapsed >= timeout:
                        timed_out = True
                        break
                    if may_retry and not began and elapsed >= BOOT_DEADLINE:
                        hung = f"no {MARK_BEGIN} after {BOOT_DEADLINE} s, the kernel hung before the scenario began"
                        break
                    time.sleep(0.2)
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
            finally:
                _current_qemu = None
        wall = time.monotonic() - start
        with open(logpath, "rb") as f:
            console = f.read().decode("utf-8", "replace")
        return Result(self.name, console, wall, timed_out, proc.returncode), hung

    def shell(self, script=""):
        """Boot interactively: the scenario (if any) runs, then a shell on
        the console; leaving it powers off.  Ctrl-a x kills QEMU."""
        kernel, initrd, _ = self._prepare(script, True)
        cmd = self.qemu_command(kernel, initrd, interactive=True)
        print("npvm: interactive VM; exit the shell to power off, or Ctrl-a x", flush=True)
        return subprocess.call(cmd)


# --------------------------------------------------------------------------
# Test wrapper

def run_test(name, body):
    """Run one meson test: body() returns an exit code.  Prints the wall
    time, records it for the suite summary, and turns HarnessError into a
    clear failure."""
    signal.signal(signal.SIGTERM, lambda *a: (_kill_current(), sys.exit(124)))
    start = time.time()
    try:
        rc = body()
    except HarnessError as e:
        print(f"npvm: FAIL: {name} cannot run: {e}", flush=True)
        FAILED_CHECKS.append(f"cannot run: {e}")
        rc = 1
    finally:
        _kill_current()
    end = time.time()
    print(f"npvm: {name}: {'PASS' if rc == 0 else 'FAIL'}, wall time {end - start:.1f} s")
    try:
        tdir = os.path.join(vm_build_dir(), "times")
        os.makedirs(tdir, exist_ok=True)
        with open(os.path.join(tdir, f"{name}.txt"), "w") as f:
            f.write(f"{start:.3f} {end:.3f} {'PASS' if rc == 0 else 'FAIL'}\n")
        # what failed, for the summary at the end of the suite (a CI log
        # is often read from its end)
        with open(os.path.join(tdir, f"{name}.failed"), "w") as f:
            for what in FAILED_CHECKS if rc != 0 else []:
                f.write(" ".join(str(what).split())[:600] + "\n")
    except (OSError, HarnessError):
        pass
    sys.exit(rc)


# --------------------------------------------------------------------------
# Command line

def _parse_list(s, conv=int):
    return [conv(x) for x in s.split(",")] if "," in s else conv(s)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Boot the Debian kernel under QEMU (TCG) with a NUMA topology "
                    "and run a scenario script, or get a shell.")
    ap.add_argument("mode", choices=["run", "shell"], help="run SCRIPT, or an interactive shell")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--mem", default="512", help="MB per node, or a comma list (0: CPU-only)")
    ap.add_argument("--cpus", default="1", help="CPUs per node, or a comma list (0: memory-only)")
    ap.add_argument("--cgroup", choices=["v1", "v2", "none"], default="v2")
    ap.add_argument("--script", help="scenario script file (busybox sh)")
    ap.add_argument("--workload", action="store_true", help="include np-workload")
    ap.add_argument("--daemon", action="store_true", help="include numaplaced, dbus-daemon, busctl")
    ap.add_argument("--commands", default="numactl,migratepages",
                    help="host commands to include (comma list)")
    ap.add_argument("--file", action="append", default=[], metavar="DEST=HOSTPATH",
                    help="copy a host file into the VM (repeatable)")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--append", default="", help="extra kernel command line")
    a = ap.parse_args(argv)
    topo = Topology(a.nodes, _parse_list(a.mem), _parse_list(a.cpus))
    vm = VM(f"manual-{a.mode}", topo, None if a.cgroup == "none" else a.cgroup,
            a.append.split())
    if a.commands:
        vm.add_commands(*a.commands.split(","))
    if a.workload:
        vm.add_workload()
    if a.daemon:
        vm.add_dbus()
        vm.add_daemon()
    for spec in a.file:
        dest, sep, src = spec.partition("=")
        if not sep:
            ap.error("--file takes DEST=HOSTPATH")
        vm.initramfs.add_host_file(src, dest)
    script = open(a.script).read() if a.script else ""
    if a.mode == "shell":
        return vm.shell(script)
    res = vm.run(script or "np_capture numactl-H numactl -H\n", a.timeout)
    print(res.console.replace("\r", ""))
    print(f"npvm: {len(res.items)} result lines, completed={res.completed}, rc={res.rc}, "
          f"wall {res.wall:.1f} s")
    return 0 if res.completed and res.rc == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except HarnessError as e:
        print(f"npvm: error: {e}", file=sys.stderr)
        sys.exit(1)
