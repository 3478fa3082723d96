#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scan-cost: numaplaced's CPU time per scan and peak RSS with 1000 and 5000
real idle processes, with 1000 idle plus 20 significant 1 GB processes, and
with 1000 idle plus 200 of 32 MB (above the group member floor, below
MinProcessMemory),
side by side with numad measured in the same run.  A benchmark, not a test: it prints numbers, it never fails on
them (exit status 0 unless the harness itself breaks).

Run (as root; needs dbus-daemon, busctl, unshare, mount; numad optional):

    meson setup build-bench && meson compile -C build-bench
    meson test -C build-bench --benchmark scan-cost -v     # or directly:
    sudo tests/bench/bench-scan.py [--daemon build-bench/daemon/numaplaced]
         [--counts 100,1000,5000] [--runs 6] [--scans 25] [--interval 0.2]
         [--numad-runs 6] [--numad-scans 4] [--no-numad] [--json FILE]
         [--procfs-read-cost build-bench/tests/bench/procfs-read-cost]

The daemon is taken from --daemon, else $NP_DAEMON, else build/daemon/numaplaced.
numad missing: `apt-get install numad`; without it the numad columns say why.

What it does, for each process count N:

 1. Starts a "herd": this script re-executed as PID 1 of a new PID, mount and
    IPC namespace (unshare --pid --fork --mount-proc --mount --ipc
    --kill-child).  It posix_spawn()s N `/bin/sleep 1800` children.  They are
    ordinary processes of this machine: numaplaced, in the root namespace,
    sees them in /proc like any other.  Killing the namespace's init kills all
    of them, so nothing is left behind even if this script is SIGKILLed (the
    unshare process carries PR_SET_PDEATHSIG; the sleepers end after 30 min in
    any case).
 2. numaplaced: a private dbus-daemon and the real daemon (tests/integration/
    nptest.py) with Mode=advise, Backend=affinity (so nothing touches the
    machine's cpusets), ScanIntervalSec=MaxScanIntervalSec=--interval and the
    default significance thresholds (300M and 0.5 CPU), so no idle sleeper is
    significant.  After a few warm-up scans, --runs windows of --scans scans
    each.  CPU per window is the sum of the first field of
    /proc/<pid>/task/*/schedstat (on-CPU nanoseconds, all threads), divided by
    the scans counted with the Manager's `Scans` property.  The two busctl
    reads that bracket a window are inside it (a handful of Get calls per
    window, a few microseconds per scan); DaemonCPUUSec is read as a
    cross-check.  Per process = CPU per scan / PIDs in /proc (every PID the
    daemon reads, kernel threads included).  Peak RSS = VmHWM at the end.
 3. numad (Debian's numad 0.5+20150602), run inside the herd's namespaces:
    private /run (its pid file), private /var/log (its log), private IPC (its
    message queue), `-H 0` (leave the THP tunable alone), `-i 1:1` (the
    shortest interval it takes: whole seconds) and `-l 6` (one "Nodes:" and one
    "Processes:" line per scan, used to count scans).  Its CPU is measured the
    same way from schedstat, its RSS from VmHWM.  Inside the PID namespace it
    can only see and touch the herd, never anyone else's processes.
      * "numad 1 node": numad as it runs on this single-node machine.  Its main
        loop only calls update_processes() when update_nodes() returns more
        than one node, so here it samples nodes and sleeps: it reads no
        process at all.  The number is printed, but it is not a scan cost.
      * "numad 2-node view": the same numad with a two-node
        /sys/devices/system/node bind-mounted in its mount namespace (node0 =
        CPU 0, node1 = CPU 1, half the memory each).  Now it reads
        /proc/<pid>/stat of every visible process each scan, which is the
        work to compare.  It sees N + 2 PIDs (the herd's init and itself).
        No sleeper is above its 300 MB threshold, so it never moves anything.
    numad and the procfs floor (below) are measured in turn with
    numaplaced: after each of numaplaced's windows the daemon is stopped
    (SIGSTOP), the floor is measured, a fresh numad makes its scans, and the
    daemon goes on (SIGCONT).  This machine's speed drifts by a fifth over
    minutes, so figures measured one after the other would compare different
    machines; interleaved, every configuration samples the same stretch.
    Ratios are numaplaced / numad (2-node view); below 1 means numaplaced is
    cheaper.  The per-process ratio is the fair one (numaplaced sees the
    machine's other ~100 PIDs too).

Statistics per configuration, over the runs, in the style of the kernel
community's mmtests reports: Min, Mean, TrimMean (mean after dropping the
lowest and highest 10% of runs, at least one each side when there are 5 or
more), Stddev (sample), Max.  Percentages in the side-by-side blocks are the
gain of numaplaced over numad as baseline (positive = numaplaced cheaper).

Aims (issue 9): CPU per scan at most 0.5x numad's in every row, peak RSS at
most 8 MB, at most 1 us per process above the procfs floor of the read
pattern used (readdir + pread of statm on a kept descriptor), measured the
way the daemon runs it: one pass per scan interval, with the caches going
cold in between (procfs-read-cost's paced method; the same reads back to
back, warm, cost about half, and are printed too).  In the row with
significant processes the pattern also holds what the daemon reads of
them (stat every scan, status, threads and cgroup every
LocalityRefreshScans=, numa_maps not again while they do not run),
averaged per scan over that cycle.  numaplaced
reads the herd's namespace through --root (DIR/proc -> the namespace's
procfs), so both daemons read the same processes; see tests/bench/README.md.
"""
import argparse
import ctypes
import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchstat import stats

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("NP_SOURCE_ROOT", os.path.abspath(os.path.join(HERE, "..", "..")))

AIM_RATIO = 0.5              # issue 9: CPU per scan at most half of numad's, in every row
AIM_RSS_MB = 8.0
AIM_ABOVE_FLOOR_US = 1.0     # per process, above readdir + pread(statm) on a kept descriptor
SLEEP_SECONDS = 1800          # a sleeper's lifetime if every cleanup failed
PR_SET_PDEATHSIG = 1


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- helpers

def pids_in_proc(proc="/proc"):
    return sum(1 for e in os.listdir(proc) if e.isdigit())


def cpu_ns(pid):
    """On-CPU nanoseconds of every thread of pid (schedstat field 1)."""
    total = 0
    tdir = "/proc/%d/task" % pid
    for t in os.listdir(tdir):
        try:
            with open("%s/%s/schedstat" % (tdir, t)) as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def user_sys_ticks(pid):
    """(utime, stime) clock ticks of pid, all threads."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def user_share(a, b):
    du, ds = b[0] - a[0], b[1] - a[1]
    return [du / (du + ds) if du + ds > 0 else None, du + ds]


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None



# ---------------------------------------------------------------- the herd (runs as PID 1 of its namespace)

def herd_main(args):
    """PID 1 of a fresh PID+mount+IPC namespace: spawn the sleepers, then
    answer JSON commands on stdin (numad measurements) until told to quit or
    stdin closes.  When this process dies the kernel kills the namespace."""
    out = sys.stdout
    work = args.herd_dir
    # private /run and /var/log for numad (pid file, log); this mount
    # namespace only
    for d in ("run", "log"):
        os.makedirs(os.path.join(work, d), exist_ok=True)
    subprocess.run(["mount", "--bind", os.path.join(work, "run"), "/run"], check=True)
    subprocess.run(["mount", "--bind", os.path.join(work, "log"), "/var/log"], check=True)

    devnull = os.open("/dev/null", os.O_RDWR)
    fa = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
          (os.POSIX_SPAWN_DUP2, devnull, 2)]
    sleepers = []
    t0 = time.monotonic()
    for _ in range(args.herd):
        sleepers.append(os.posix_spawn("/bin/sleep", ["sleep", str(SLEEP_SECONDS)], {}, file_actions=fa))
    big_pids = []
    if args.herd_big:
        # N processes with 1 GB resident each, sharing one memfd (see bench-helper.c)
        helper = subprocess.Popen([args.helper, "shared", str(args.herd_big), str(args.herd_big_mb)],
                                  stdout=subprocess.PIPE, text=True)
        line = helper.stdout.readline().split()
        if not line or line[0] != "READY":
            raise RuntimeError("bench-helper shared did not start")
        big_pids = [int(x) for x in line[1:]] + [helper.pid]
    spawn_s = time.monotonic() - t0
    out.write(json.dumps({"ready": True, "sleepers": len(sleepers), "spawn_s": spawn_s, "big": len(big_pids) - 1
                          if big_pids else 0, "visible": pids_in_proc()}) + "\n")
    out.flush()

    for line in sys.stdin:
        reap()
        req = json.loads(line)
        if req.get("cmd") == "quit":
            break
        if req.get("cmd") == "numad":
            try:
                res = numad_measure(work, req["mode"], req["runs"], req["scans"], req.get("timeout", 120))
            except Exception as e:  # report, never die: the sleepers live with us
                res = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
            reap()
            out.write(json.dumps(res) + "\n")
            out.flush()
    return 0


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def write_fake_nodes(root):
    """A two-node view of this machine for numad: node0 = CPU 0, node1 = CPU 1
    (or the upper half of the CPUs), half of the real memory each."""
    with open("/sys/devices/system/node/node0/meminfo") as f:
        real = {}
        for line in f:
            parts = line.split()
            if len(parts) >= 4:
                real[parts[2].rstrip(":")] = int(parts[3])
    ncpu = os.cpu_count() or 2
    half = max(1, ncpu // 2)
    cpus = ["0" if half == 1 else "0-%d" % (half - 1),
            str(half) if ncpu - half == 1 else "%d-%d" % (half, ncpu - 1)]
    for n in (0, 1):
        d = os.path.join(root, "node%d" % n)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "cpulist"), "w") as f:
            f.write(cpus[n] + "\n")
        with open(os.path.join(d, "distance"), "w") as f:
            f.write("10 20\n" if n == 0 else "20 10\n")
        with open(os.path.join(d, "meminfo"), "w") as f:
            for key in ("MemTotal", "MemFree", "MemUsed", "Active", "Inactive", "Active(anon)",
                        "Inactive(anon)", "Active(file)", "Inactive(file)"):
                f.write("Node %d %-15s %8d kB\n" % (n, key + ":", real.get(key, 0) // 2))
    with open(os.path.join(root, "online"), "w") as f:
        f.write("0-1\n")
    with open(os.path.join(root, "possible"), "w") as f:
        f.write("0-1\n")


def numad_measure(work, mode, runs, scans, timeout):
    numad = shutil.which("numad")
    if not numad:
        return {"ok": False, "error": "numad is not installed (apt-get install numad)"}
    runfile = "/run/numad.pid"
    logfile = "/var/log/numad.log"
    for f in (runfile, logfile):
        if os.path.exists(f):
            os.unlink(f)
    mounted = False
    if mode == "2node":
        fake = os.path.join(work, "nodes")
        shutil.rmtree(fake, ignore_errors=True)
        write_fake_nodes(fake)
        subprocess.run(["mount", "--bind", fake, "/sys/devices/system/node"], check=True)
        mounted = True
        marker = "Processes:"
    else:
        marker = "Nodes:"
    pid = None
    try:
        r = subprocess.run([numad, "-H", "0", "-i", "1:1", "-l", "6"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
        if r.returncode != 0:
            return {"ok": False, "error": "numad exited %d: %s" % (r.returncode, r.stdout.strip())}
        deadline = time.monotonic() + 10
        while pid is None:
            try:
                with open(runfile) as f:
                    pid = int(f.read().split()[0])
            except (FileNotFoundError, ValueError, IndexError):
                if time.monotonic() > deadline:
                    return {"ok": False, "error": "numad wrote no pid file", "log": tail(logfile)}
                time.sleep(0.05)

        def count():
            try:
                with open(logfile) as f:
                    return sum(1 for line in f if marker in line)
            except FileNotFoundError:
                return 0

        def wait_count(target):
            end = time.monotonic() + timeout
            while True:
                c = count()
                if c >= target:
                    return c
                if not os.path.exists("/proc/%d" % pid):
                    raise RuntimeError("numad exited; log: " + tail(logfile))
                if time.monotonic() > end:
                    raise RuntimeError("numad made no progress (%d of %d '%s' lines); log: %s"
                                       % (c, target, marker, tail(logfile)))
                time.sleep(0.02)

        # warm up: two scans (the first fills its tables)
        wait_count(2)
        time.sleep(0.15)
        us0 = user_sys_ticks(pid)
        per_scan = []
        procs_seen = []
        for _ in range(runs):
            c0 = count()
            ns0 = cpu_ns(pid)
            c1 = wait_count(c0 + scans)
            time.sleep(0.15)      # let the scan finish its tail (manage_loads) and sleep
            ns1 = cpu_ns(pid)
            c1 = count()
            per_scan.append((ns1 - ns0) / 1000.0 / (c1 - c0))
        if mode == "2node":
            with open(logfile) as f:
                for line in f:
                    if "Processes:" in line:
                        procs_seen.append(int(line.rsplit(":", 1)[1]))
        threads = len(os.listdir("/proc/%d/task" % pid))
        res = {"ok": True, "mode": mode, "us_per_scan": per_scan, "hwm_kb": status_kb(pid, "VmHWM"),
               "user_share": user_share(us0, user_sys_ticks(pid)),
               "scans": runs * scans, "threads": threads,
               "procs_seen": statistics.fmean(procs_seen[-runs * scans:]) if procs_seen else None,
               "log_head": head(logfile, 4)}
        return res
    finally:
        if pid:
            stop_pid(pid)
        if mounted:
            subprocess.run(["umount", "/sys/devices/system/node"], check=False)


def stop_pid(pid):
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + 3      # numad acts on SIGTERM after its sleep(1)
    while time.monotonic() < end:
        reap()
        if not os.path.exists("/proc/%d" % pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    reap()


def tail(path, n=6):
    try:
        with open(path) as f:
            return "".join(f.readlines()[-n:]).strip()
    except FileNotFoundError:
        return "(no log)"


def head(path, n=4):
    try:
        with open(path) as f:
            return "".join(f.readlines()[:n]).strip()
    except FileNotFoundError:
        return "(no log)"


# ---------------------------------------------------------------- the outer side

class Herd:
    def __init__(self, n, workdir, big=0, big_mb=1024, helper=None):
        self.dir = tempfile.mkdtemp(prefix="herd-%d-" % n, dir=workdir)
        libc = ctypes.CDLL(None, use_errno=True)

        def pdeath():
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

        cmd = ["unshare", "--pid", "--fork", "--mount-proc", "--mount", "--ipc", "--propagation", "private",
               "--kill-child", "--", sys.executable, os.path.abspath(__file__), "--herd", str(n),
               "--herd-dir", self.dir, "--herd-big", str(big), "--herd-big-mb", str(big_mb),
               "--helper", helper or ""]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     preexec_fn=pdeath)
        self.info = self._read(timeout=300)
        if not self.info or not self.info.get("ready"):
            raise RuntimeError("herd of %d did not start: %r" % (n, self.info))

    def view_root(self):
        """A --root for numaplaced that shows the herd's namespace: proc -> the
        herd's own procfs (through its init's /proc/<pid>/root), sys -> /sys.
        numaplaced then reads exactly the processes numad sees."""
        with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
            init = int(f.read().split()[0])
        root = os.path.join(self.dir, "view")
        os.makedirs(root, exist_ok=True)
        os.symlink("/proc/%d/root/proc" % init, os.path.join(root, "proc"))
        os.symlink("/sys", os.path.join(root, "sys"))
        return root

    def _read(self, timeout):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            raise RuntimeError("herd did not answer within %d s" % timeout)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("herd exited (status %s)" % self.proc.poll())
        return json.loads(line)

    def numad(self, mode, runs, scans):
        self.proc.stdin.write(json.dumps({"cmd": "numad", "mode": mode, "runs": runs, "scans": scans}) + "\n")
        self.proc.stdin.flush()
        return self._read(timeout=60 + runs * scans * 4)

    def close(self):
        try:
            if self.proc.poll() is None:
                try:
                    self.proc.stdin.write('{"cmd": "quit"}\n')
                    self.proc.stdin.flush()
                    self.proc.wait(5)
                except (BrokenPipeError, subprocess.TimeoutExpired, OSError):
                    pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()          # --kill-child takes the namespace down with it
                self.proc.wait()
            shutil.rmtree(self.dir, ignore_errors=True)


def busctl_props(bus, *props):
    r = bus.busctl("get-property", "org.numaplaced1", "/org/numaplaced1", "org.numaplaced1.Manager", *props)
    vals = [int(line.split()[1]) for line in r.stdout.strip().splitlines()]
    return dict(zip(props, vals))


def numaplaced_measure(nptest, n, args, extra_conf="", root=None, between=None):
    """numaplaced's CPU per scan over args.runs windows of args.scans scans.
    between(run): called after each window with the daemon stopped
    (SIGSTOP), so that numad and the floor are measured interleaved with
    numaplaced, at the same times, on this machine whose speed drifts by a
    fifth over minutes."""
    conf = ("[Daemon]\nMode=advise\nBackend=affinity\nScanIntervalSec=%g\nMaxScanIntervalSec=%g\n"
            % (args.interval, args.interval)) + extra_conf
    bus = nptest.Bus()
    d = None
    stop = threading.Event()
    try:
        d = nptest.Daemon(bus, config_text=conf, root=root)
        pid = d.proc.pid

        # The daemon sends STATUS= to NOTIFY_SOCKET after every scan: keep the
        # socket drained so a full queue can never block it.
        def drain():
            d.notify.sock.settimeout(0.2)
            while not stop.is_set():
                try:
                    d.notify.sock.recv(4096)
                except OSError:
                    pass
        th = threading.Thread(target=drain, daemon=True)
        th.start()

        interval = args.interval

        def snapshot():
            """Scans, DaemonCPUUSec and on-CPU ns taken between two scans."""
            for _ in range(50):
                p = busctl_props(bus, "Scans", "LastScanTimestamp", "DaemonCPUUSec")
                ns = cpu_ns(pid)
                since = time.time() - p["LastScanTimestamp"] / 1e6
                if since < interval * 0.6:
                    p["ns"] = ns
                    p["pids"] = pids_in_proc(os.path.join(root, "proc") if root else "/proc")
                    return p
                time.sleep(interval * 0.5)
            raise RuntimeError("could not read the daemon between two scans")

        # warm-up: the first scans create every process record
        deadline = time.monotonic() + 120
        while busctl_props(bus, "Scans")["Scans"] < args.warmup:
            if time.monotonic() > deadline or not d.alive():
                raise RuntimeError("daemon does not scan: " + d.stderr()[-2000:])
            time.sleep(interval)
        us0 = user_sys_ticks(pid)
        per_scan, per_scan_rusage, per_proc, wall, pids, sig = [], [], [], [], [], []
        for _ in range(args.runs):
            a = snapshot()
            # every bus call is the daemon's CPU too: wait out most of the
            # window before asking for Scans (the interval is fixed here)
            time.sleep(interval * (args.scans - 1.5))
            while True:
                time.sleep(interval * 0.5)
                s = busctl_props(bus, "Scans")["Scans"]
                if s >= a["Scans"] + args.scans:
                    break
            b = snapshot()
            k = b["Scans"] - a["Scans"]
            us = (b["ns"] - a["ns"]) / 1000.0 / k
            npids = (a["pids"] + b["pids"]) / 2.0
            per_scan.append(us)
            per_scan_rusage.append((b["DaemonCPUUSec"] - a["DaemonCPUUSec"]) / k)
            per_proc.append(us / npids)
            pids.append(npids)
            wall.append(busctl_props(bus, "LastScanDurationUSec")["LastScanDurationUSec"])
            # significant processes (other users' big ones, e.g. QEMU) cost
            # status + numa_maps + task/*/stat reads every scan: count them
            tree = bus.busctl("tree", "--list", "org.numaplaced1").stdout.split()
            sig.append(sum(1 for t in tree if t.startswith("/org/numaplaced1/process/")))
            if between:
                os.kill(pid, signal.SIGSTOP)
                try:
                    between(len(per_scan) - 1)
                finally:
                    os.kill(pid, signal.SIGCONT)
        res = {"us_per_scan": per_scan, "us_per_scan_rusage": per_scan_rusage, "us_per_proc": per_proc,
               "last_scan_wall_us": wall, "pids": statistics.fmean(pids), "scans": args.runs * args.scans,
               "hwm_kb": status_kb(pid, "VmHWM"), "rss_kb": status_kb(pid, "VmRSS"),
               "threads": len(os.listdir("/proc/%d/task" % pid)), "significant": sig,
               "user_share": user_share(us0, user_sys_ticks(pid))}
        if not d.alive():
            raise RuntimeError("daemon died: " + d.stderr()[-2000:])
        log_lines = d.stderr().count("\n")
        res["log_lines"] = log_lines
        res["log"] = d.stderr()[-3000:]
        return res
    finally:
        stop.set()
        if d is not None:
            time.sleep(0.25)
            d.cleanup()
        bus.stop()


def callgrind_measure(daemon, extra_conf, workdir, root):
    """Instructions numaplaced executes per scan in user space (np_scan_run
    and below), from valgrind --tool=callgrind on `numaplaced --once` (two
    scans) with the row's processes in place. Not affected by the machine's
    load: the noise-free counterpart of the CPU figures."""
    if not shutil.which("valgrind"):
        return {"error": "valgrind is not installed"}
    conf = os.path.join(workdir, "callgrind.conf")
    with open(conf, "w") as f:
        f.write("[Daemon]\nMode=advise\n" + extra_conf)
    out = os.path.join(workdir, "callgrind.out")
    pids = pids_in_proc(os.path.join(root, "proc") if root else "/proc")
    # one profile part per scan: the first scan discovers every process, the
    # second is the steady state that repeats every ScanIntervalSec
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, "--toggle-collect=np_scan_run",
           "--dump-after=np_scan_run", daemon, "--once", "--config", conf] + (["--root", root] if root else [])
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=900)
    parts = {}
    for k in (1, 2):
        try:
            with open("%s.%d" % (out, k)) as f:
                for line in f:
                    if line.startswith("totals:"):
                        parts[k] = int(line.split()[1])
        except FileNotFoundError:
            pass
    for f in os.listdir(workdir):
        if f.startswith("callgrind.out"):
            os.unlink(os.path.join(workdir, f))
    if r.returncode != 0 or 2 not in parts:
        return {"error": "valgrind exited %d: %s" % (r.returncode, r.stderr[-500:])}
    return {"ir_first_scan": parts.get(1), "scans": 1, "ir_per_scan": parts[2], "pids": pids}


# the daemon's defaults the floor of the significant processes' reads uses
MIN_PROCESS_MEMORY = 300 << 20
LOCALITY_REFRESH_SCANS = 12


def procfs_floor(tool, interval, significant=False):
    """Run procfs-read-cost over the PIDs present now: {method: us/process};
    its paced method runs one pass per `interval` seconds, as the daemon.
    significant: also the reads of the processes above MinProcessMemory
    (significant_us_per_scan, the CPU they add per scan)."""
    if not tool or not os.access(tool, os.X_OK):
        return None
    cmd = [tool, "5", str(max(1, int(interval * 1000)))]
    if significant:
        cmd += [str(MIN_PROCESS_MEMORY), str(LOCALITY_REFRESH_SCANS)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode != 0:
        return {"error": r.stderr.strip()}
    out = {}
    for line in r.stdout.splitlines():
        k, v = line.split()
        out[k] = float(v)
    return out


def merge_floors(parts):
    """procfs_floor() results of several runs: the mean of each method, and
    the paced pattern's per-run values (paced_runs)."""
    ok = [x for x in parts if x and "error" not in x]
    if not ok:
        return parts[-1] if parts else None
    m = {k: statistics.fmean(x[k] for x in ok) for k in ok[0] if all(k in x for x in ok)}
    m["runs"] = len(ok)
    m["paced_runs"] = [x["paced_readdir_pread_statm"] for x in ok if "paced_readdir_pread_statm" in x]
    return m


def merge_numad(parts):
    """numad_measure() results of single runs as one of several runs."""
    ok = [x for x in parts if x.get("ok")]
    if not ok:
        return parts[-1]
    m = dict(ok[-1])
    m["us_per_scan"] = [u for x in ok for u in x["us_per_scan"]]
    m["scans"] = sum(x["scans"] for x in ok)
    m["hwm_kb"] = max(x["hwm_kb"] for x in ok)
    seen = [x["procs_seen"] for x in ok if x.get("procs_seen")]
    m["procs_seen"] = statistics.fmean(seen) if seen else None
    return m


def fmt(v, w=10, p=2):
    return ("%*.*f" % (w, p, v)) if v is not None else "%*s" % (w, "n/a")


def pct(base, new):
    if base is None or new is None or base == 0:
        return "      "
    return "(%6.2f%%)" % ((base - new) / base * 100.0)


def side_by_side(title, unit, base_name, base, new_name, new):
    lines = ["%s, %s" % (title, unit),
             "%-10s %22s %22s" % ("", base_name, new_name)]
    for key, name in (("min", "Min"), ("mean", "Mean"), ("trim", "TrimMean"), ("sd", "Stddev"),
                      ("max", "Max")):
        b = base[key] if base else None
        nv = new[key]
        lines.append("%-10s %12s %9s %12s %9s" % (name, fmt(b), "( 0.00%)" if b is not None else "",
                                                 fmt(nv), pct(b, nv) if key != "sd" else pct(b, nv)))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--daemon", default=None)
    ap.add_argument("--counts", default="1000,5000")
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--scans", type=int, default=25)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--numad-runs", type=int, default=6)
    ap.add_argument("--numad-scans", type=int, default=4)
    ap.add_argument("--numad-1node-runs", type=int, default=3)
    ap.add_argument("--no-numad", action="store_true")
    ap.add_argument("--json", default=None, help="also write the raw numbers here")
    ap.add_argument("--procfs-read-cost", default=os.environ.get("NP_PROCFS_READ_COST"),
                    help="path of the procfs-read-cost tool (meson builds it); run with the herd in place")
    ap.add_argument("--herd", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--herd-dir", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--herd-big", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--herd-big-mb", type=int, default=1024, help=argparse.SUPPRESS)
    ap.add_argument("--big", default="1000+20x1024,1000+200x32",
                    help="rows with bigger processes, comma-separated IDLE+NxMB: N of them map one MB memfd "
                         "(empty: no such row)")
    ap.add_argument("--helper", default=os.environ.get("NP_BENCH_HELPER"),
                    help="path of bench-helper (meson builds it)")
    ap.add_argument("--whole-machine", action="store_true",
                    help="let numaplaced read the whole machine's /proc instead of the herd's namespace")
    ap.add_argument("--callgrind", action="store_true",
                    help="also count numaplaced's instructions per scan with valgrind --tool=callgrind")
    args = ap.parse_args()

    if args.herd is not None:
        return herd_main(args)

    if os.geteuid() != 0:
        print("scan-cost: must run as root (namespaces, bind mounts, numad)", file=sys.stderr)
        return 1
    daemon = os.path.abspath(args.daemon or os.environ.get("NP_DAEMON")
                             or os.path.join(SRC, "build", "daemon", "numaplaced"))
    if not os.access(daemon, os.X_OK):
        print("scan-cost: no daemon at %s (build it, or pass --daemon / NP_DAEMON)" % daemon, file=sys.stderr)
        return 1
    os.environ["NP_DAEMON"] = daemon
    sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
    import nptest
    nptest.DAEMON = daemon

    counts = [int(c) for c in args.counts.split(",") if c]
    rows = [(n, 0, 0) for n in counts]
    for spec in (b for b in args.big.split(",") if b):
        idle, big = spec.split("+")
        bn, bmb = big.split("x")
        if not args.helper or not os.access(args.helper, os.X_OK):
            print("scan-cost: --big needs bench-helper (--helper or NP_BENCH_HELPER)", file=sys.stderr)
            return 1
        args.helper = os.path.abspath(args.helper)
        rows.append((int(idle), int(bn), int(bmb)))
    need = max(counts) + 500
    import resource
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    if soft != resource.RLIM_INFINITY and soft < need or pid_max < need + pids_in_proc():
        print("scan-cost: %d processes need RLIMIT_NPROC and pid_max above %d (have %s, %d)"
              % (max(counts), need, soft, pid_max), file=sys.stderr)
        return 1

    started = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="np-bench-")
    results = {"daemon": daemon, "interval": args.interval, "counts": {}}
    numad_version = None
    if shutil.which("numad"):
        numad_version = subprocess.run(["numad", "-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True).stdout.strip()
    nodes = sorted(e for e in os.listdir("/sys/devices/system/node") if e.startswith("node"))
    try:
        for n, big, big_mb in rows:
            key = "%d" % n if not big else "%d+%dx%dM" % (n, big, big_mb)
            log("== %s processes: spawning" % key)
            herd = Herd(n, workdir, big, big_mb, args.helper)
            try:
                log("   %d sleepers in %.1f s; numaplaced: %d runs x %d scans every %g s"
                    % (herd.info["sleepers"], herd.info["spawn_s"], args.runs, args.scans, args.interval))
                # the significant ones are idle: MinProcessCPU=0 makes them
                # significant for numaplaced (numad's CPU threshold is fixed)
                extra = "[Placement]\nMinProcessCPU=0\n" if big else ""
                root = None if args.whole_machine else herd.view_root()
                # after each of numaplaced's windows: the floor, and numad
                # (a fresh one per run, its 2-node view), in turn
                floors, numads = [], []

                def between(run):
                    floors.append(procfs_floor(args.procfs_read_cost, args.interval, significant=bool(big)))
                    if not args.no_numad and run < args.numad_runs:
                        numads.append(herd.numad("2node", 1, args.numad_scans))
                if not args.no_numad:
                    log("   numad, 2-node view: %d runs x %d scans, each after one of numaplaced's runs"
                        % (args.numad_runs, args.numad_scans))
                entry = {"spawned": herd.info["sleepers"], "big": big, "big_mb": big_mb, "root": root,
                         "numaplaced": numaplaced_measure(nptest, n, args, extra, root, between)}
                entry["floor"] = merge_floors(floors)
                if numads:
                    entry["numad_2node"] = merge_numad(numads)
                if args.callgrind:
                    entry["callgrind"] = callgrind_measure(daemon, extra, workdir, root)
                if not args.no_numad:
                    log("   numad, 1 node: %d runs x 2 scans" % args.numad_1node_runs)
                    entry["numad_1node"] = herd.numad("1node", args.numad_1node_runs, 2)
                results["counts"][key] = entry
            finally:
                herd.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - started

    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    report(results, args, nodes, numad_version, elapsed)
    return 0


def report(results, args, nodes, numad_version, elapsed):
    p = print
    p("scan-cost: numaplaced vs numad, CPU per scan and peak RSS with N idle processes")
    p("machine: %d CPUs, %s, %s; kernel %s" % (os.cpu_count(), ",".join(nodes) or "no node dirs",
                                               meminfo_total(), os.uname().release))
    p("numaplaced: %s, Mode=advise Backend=affinity ScanIntervalSec=MaxScanIntervalSec=%g, default thresholds"
      % (results["daemon"], args.interval))
    p("numaplaced reads %s" % ("the whole machine's /proc" if args.whole_machine else
                               "the herd's namespace (--root DIR, DIR/proc -> the namespace's procfs, DIR/sys -> "
                               "/sys): the same processes numad sees"))
    p("numad: %s, -H 0 -i 1:1 -l 6, in a private pid/mount/ipc namespace" % (numad_version or "not installed"))
    p("CPU = on-CPU time from /proc/<pid>/task/*/schedstat; %d runs of %d scans (numad: %d runs of %d scans)"
      % (args.runs, args.scans, args.numad_runs, args.numad_scans))
    p("")
    summary = []
    for n, e in results["counts"].items():
        npd = e["numaplaced"]
        s_np = stats(npd["us_per_scan"])
        s_pp = stats(npd["us_per_proc"])
        s_ru = stats(npd["us_per_scan_rusage"])
        n2 = e.get("numad_2node")
        n1 = e.get("numad_1node")
        s_n2 = stats(n2["us_per_scan"]) if n2 and n2.get("ok") else None
        s_n1 = stats(n1["us_per_scan"]) if n1 and n1.get("ok") else None
        pp_n2 = None
        if s_n2 and n2.get("procs_seen"):
            pp_n2 = stats([u / n2["procs_seen"] for u in n2["us_per_scan"]])
        kind = ("significant ones" if e.get("big_mb", 0) << 20 >= MIN_PROCESS_MEMORY else
                "ones below MinProcessMemory but above the group member floor (their stat read every scan)")
        what = ("%s idle processes" % n if not e.get("big") else
                "%s: %d idle processes and %d %s of %d MB each (one shared memfd, so %d MB "
                "of the machine; numaplaced with MinProcessCPU=0, since they are idle)"
                % (n, e["spawned"], e["big"], kind, e["big_mb"], e["big_mb"]))
        p("---- %s (numaplaced sees %.0f PIDs in /proc; numad 2-node view sees %s) ----"
          % (what, npd["pids"], "%.0f" % n2["procs_seen"] if s_n2 and n2.get("procs_seen") else "n/a"))
        p(side_by_side("CPU per scan", "us", "numad(2-node view)", s_n2, "numaplaced", s_np))
        p("")
        p(side_by_side("CPU per process per scan", "us", "numad(2-node view)", pp_n2, "numaplaced", s_pp))
        p("")
        p("numaplaced cross-check: DaemonCPUUSec mean %.1f us/scan (schedstat %.1f); last scan wall time "
          "mean %.0f us; %d thread(s); %d log lines" % (s_ru["mean"], s_np["mean"],
                                                       statistics.fmean(npd["last_scan_wall_us"]),
                                                       npd["threads"], npd["log_lines"]))
        sg = npd.get("significant") or [0]
        p("significant processes numaplaced saw (each costs stat, status, task/*/stat and cgroup reads per "
          "scan and numa_maps by LocalityRefreshScans=; counted in the figures above): %d to %d"
          % (min(sg), max(sg)))
        cg = e.get("callgrind")
        if cg and "error" not in cg:
            p("callgrind (user space only, no kernel time; `numaplaced --once`, inside np_scan_run): steady "
              "scan %.0f instructions, %.0f per PID; first scan (discovers every process) %.0f, %.0f per PID; "
              "%d PIDs" % (cg["ir_per_scan"], cg["ir_per_scan"] / cg["pids"], cg["ir_first_scan"] or 0,
                           (cg["ir_first_scan"] or 0) / cg["pids"], cg["pids"]))
        elif cg:
            p("callgrind: %s" % cg["error"])
        for line in npd.get("log", "").splitlines():
            if "[info]" not in line and "[debug]" not in line:
                p("  numaplaced log: " + line)

        def share(sh):
            if not sh or sh[0] is None:
                return "n/a"
            return "%.0f%% of %d ticks" % (100 * sh[0], sh[1])
        p("user-space share of CPU (utime/(utime+stime), tick-sampled, whole measurement): numaplaced %s, "
          "numad 2-node view %s" % (share(npd.get("user_share")), share(n2.get("user_share") if s_n2 else None)))
        fl = e.get("floor")
        above = None
        if fl and "error" not in fl:
            warm = fl["readdir_proc"] + fl["kept_fd_pread_statm"]
            pattern = fl.get("paced_readdir_pread_statm", warm)
            if "significant_us_per_scan" in fl:
                sig_pp = fl["significant_us_per_scan"] / fl["pids"]
                p("floor of the significant processes' reads: %d processes above %d MB, %.1f us per scan "
                  "(stat every scan, status/threads/cgroup every %d scans, numa_maps not while they do not run: "
                  "one read of all of them costs %.0f us), %.2f us "
                  "per PID on top of the paced pattern"
                  % (fl["significant"], MIN_PROCESS_MEMORY >> 20, fl["significant_us_per_scan"],
                     LOCALITY_REFRESH_SCANS, fl.get("significant_numa_maps_us_per_read", -1), sig_pp))
                pattern += sig_pp
            above = s_pp["mean"] - pattern
            p("procfs floor over the same %d PIDs (mean of %d measurements, one after each of numaplaced's runs; "
              "paced pattern per run %s), us/process: numaplaced's pattern, readdir(/proc) + pread of "
              "statm on a kept fd, one pass every %.1f s as the daemon runs it: %.2f (numaplaced is %.2f above "
              "it); the same back to back (warm caches): readdir %.2f + pread %.2f = %.2f; others: "
              "open+read+close stat %.2f, statm %.2f, status %.2f; openat(/proc fd) stat %.2f; pread kept stat "
              "%.2f; openat(kept /proc/<pid> fd) statm %.2f"
              % (fl["pids"], fl.get("runs", 1), "/".join("%.2f" % v for v in fl.get("paced_runs", [])),
                 args.interval, pattern, above, fl["readdir_proc"], fl["kept_fd_pread_statm"], warm,
                 fl["open_read_close_stat"], fl["open_read_close_statm"], fl["open_read_close_status"],
                 fl["openat_procfd_stat"], fl["kept_fd_pread_stat"], fl.get("kept_dir_openat_statm", -1)))
        elif fl:
            p("procfs floor: %s" % fl["error"])
        if s_n1:
            p("numad on the real single node: %.1f us per loop (min %.1f, max %.1f), VmHWM %.2f MB: node "
              "sampling only, it reads no process (main loop skips update_processes() with < 2 nodes)"
              % (s_n1["mean"], s_n1["min"], s_n1["max"], n1["hwm_kb"] / 1024.0))
        elif n1:
            p("numad on the real single node: could not run: %s" % n1.get("error"))
        if n2 and not n2.get("ok"):
            p("numad 2-node view: could not run: %s" % n2.get("error"))
        p("")
        summary.append((n, npd, s_np, s_pp, s_n2, pp_n2, n2, above))

    p("Summary (means; ratio = numaplaced / numad 2-node view)")
    hdr = ("%-16s %6s | %-44s | %8s | %7s | %9s | %9s | %7s | %-17s" %
           ("row", "scans", "numaplaced us/scan min/mean/trim/sd/max", "us/proc", "RSS MB",
            "numad us", "numad/pr", "numadMB", "ratio scan/proc/RSS"))
    p(hdr)
    p("-" * len(hdr))
    for n, npd, s_np, s_pp, s_n2, pp_n2, n2, above in summary:
        rss = npd["hwm_kb"] / 1024.0
        nrss = n2["hwm_kb"] / 1024.0 if s_n2 else None
        five = "%.0f/%.0f/%.0f/%.0f/%.0f" % (s_np["min"], s_np["mean"], s_np["trim"], s_np["sd"], s_np["max"])
        if s_n2:
            ratio = "%.2f/%.2f/%.2f" % (s_np["mean"] / s_n2["mean"], s_pp["mean"] / pp_n2["mean"], rss / nrss)
        else:
            ratio = "n/a (numad did not run)"
        p("%-16s %6d | %-44s | %8.2f | %7.2f | %9s | %9s | %7s | %s" % (
            n, npd["scans"], five, s_pp["mean"], rss, fmt(s_n2["mean"] if s_n2 else None, 9, 0),
            fmt(pp_n2["mean"] if pp_n2 else None, 9, 2), fmt(nrss, 7, 2), ratio))
    p("")
    # marginal cost per process and fixed cost per scan: least squares over
    # every numaplaced run, (PIDs in /proc, us per scan)
    xs, ys = [], []
    for e in results["counts"].values():
        if e.get("big"):
            continue
        npd = e["numaplaced"]
        for us, pp in zip(npd["us_per_scan"], npd["us_per_proc"]):
            xs.append(us / pp)
            ys.append(us)
    fit = None
    if len(set(round(x) for x in xs)) > 1:
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        fit = (slope, my - slope * mx)
        p("numaplaced fit over all runs: %.2f us per process per scan (marginal) + %.0f us fixed per scan"
          % fit)
    ratios = [(n, s[2]["mean"] / s[4]["mean"]) for s in summary if s[4] for n in [s[0]]]
    worst_rss = max(s[1]["hwm_kb"] for s in summary) / 1024.0
    aboves = [s[7] for s in summary if s[7] is not None]
    p("aim: CPU per scan at most %.1fx numad's in every row: %s (%s)"
      % (AIM_RATIO, "met" if ratios and all(r <= AIM_RATIO for _, r in ratios) else "MISSED",
         ", ".join("%s %.2f" % (n, r) for n, r in ratios) or "numad did not run"))
    p("aim: peak RSS at most %.0f MB: %s (largest VmHWM %.2f MB)"
      % (AIM_RSS_MB, "met" if worst_rss <= AIM_RSS_MB else "MISSED", worst_rss))
    p("aim: at most %.1f us per process above the floor of its read pattern: %s (%s)"
      % (AIM_ABOVE_FLOOR_US, "met" if aboves and max(aboves) <= AIM_ABOVE_FLOOR_US else "MISSED",
         ", ".join("%s %.2f" % (s[0], s[7]) for s in summary if s[7] is not None) or "no floor measured"))
    p("total time %.0f s" % elapsed)


def meminfo_total():
    with open("/proc/meminfo") as f:
        kb = int(f.readline().split()[1])
    return "%.1f GiB" % (kb / 1048576.0)


if __name__ == "__main__":
    sys.exit(main())
