#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""fault-latency: the stall a placement daemon's sampling causes in the
process it watches.  A process with 2 GB of anonymous memory (no THP, so 4 kB
pages) faults pages in a tight loop (bench-helper fault: per 2 MiB chunk,
MADV_DONTNEED, then touch every page again, each touch timed).  Its per-fault
latency p50/p90/p99/p99.9/max with no placer running, with numad, and with
numaplaced scanning every second (LocalityRefreshScans default, and =1, the
old read-numa_maps-every-scan behaviour, for comparison).  A benchmark: it
prints numbers, it never fails on them.

Run (as root; numad optional):

    meson test -C build-bench --benchmark fault-latency -v     # or directly:
    sudo tests/bench/bench-fault.py [--daemon build-bench/daemon/numaplaced]
         [--helper build-bench/tests/bench/bench-helper] [--mb 2048]
         [--seconds 20] [--runs 3] [--json FILE]

Each configuration runs in a fresh PID+mount+IPC namespace whose init
starts the faulter (and, for numad, numad with a two-node view of this
machine bind-mounted over /sys/devices/system/node, as in bench-scan.py, so it
scans processes at all: `-i 1:1`, one scan a second).  numaplaced runs on a
private bus with Mode=advise, Backend=affinity, ScanIntervalSec=1 and the
default thresholds (the faulter is busy and has 2 GB: significant) and reads
the namespace's /proc through --root, like bench-scan.py.

Per configuration, --runs runs of --seconds each; the table shows, over the
runs, min/mean/max of each percentile (mmtests style), the faults per second,
and the numa_maps reads the daemon made (numaplaced: its debug log).
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("NP_SOURCE_ROOT", os.path.abspath(os.path.join(HERE, "..", "..")))


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def inner(args):
    """PID 1 of the namespace: faulter (+ numad), print the faulter's JSON."""
    numad_pid = None
    if args.inner == "numad":
        sys.path.insert(0, HERE)
        import importlib.util
        spec = importlib.util.spec_from_file_location("bench_scan", os.path.join(HERE, "bench-scan.py"))
        bs = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bs)
        for d in ("run", "log", "nodes"):
            os.makedirs(os.path.join(args.work, d), exist_ok=True)
        subprocess.run(["mount", "--bind", os.path.join(args.work, "run"), "/run"], check=True)
        subprocess.run(["mount", "--bind", os.path.join(args.work, "log"), "/var/log"], check=True)
        bs.write_fake_nodes(os.path.join(args.work, "nodes"))
        subprocess.run(["mount", "--bind", os.path.join(args.work, "nodes"), "/sys/devices/system/node"],
                       check=True)
        subprocess.run(["numad", "-H", "0", "-i", "1:1", "-l", "6"], check=True)
        for _ in range(200):
            try:
                with open("/run/numad.pid") as f:
                    numad_pid = int(f.read().split()[0])
                break
            except (FileNotFoundError, ValueError, IndexError):
                time.sleep(0.05)
    # PID 2 (and its children) look like kthreadd to a placer: burn it first
    subprocess.run(["true"])
    r = subprocess.run([args.helper, "fault", str(args.mb), str(args.seconds)], stdout=subprocess.PIPE,
                       text=True)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    if numad_pid:
        try:
            with open("/var/log/numad.log") as f:
                text = f.read()
            res["numad_scans"] = text.count("Processes:")
            res["numad_log_tail"] = text.strip().splitlines()[-3:]
        except FileNotFoundError:
            pass
        os.kill(numad_pid, signal.SIGTERM)
    print(json.dumps(res), flush=True)
    return 0


def run_ns(args, mode, work, on_start=None):
    cmd = ["unshare", "--pid", "--fork", "--mount-proc", "--mount", "--ipc", "--propagation", "private",
           "--kill-child", "--", sys.executable, os.path.abspath(__file__), "--inner", mode, "--work", work,
           "--helper", args.helper, "--mb", str(args.mb), "--seconds", str(args.seconds)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    if on_start:
        on_start(p)
    out, _ = p.communicate(timeout=args.seconds * 4 + 120)
    return json.loads(out.strip().splitlines()[-1])


def namespace_root(p, work):
    """--root for numaplaced showing the namespace of unshare process p."""
    for _ in range(200):
        try:
            with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
                init = int(f.read().split()[0])
            break
        except (FileNotFoundError, ValueError, IndexError):
            time.sleep(0.02)
    root = os.path.join(work, "view")
    os.makedirs(root, exist_ok=True)
    os.symlink("/proc/%d/root/proc" % init, os.path.join(root, "proc"))
    os.symlink("/sys", os.path.join(root, "sys"))
    # wait until the namespace has its own procfs (unshare mounts it after the fork)
    for _ in range(500):
        try:
            with open(os.path.join(root, "proc", "1", "comm")) as f:
                if f.read().strip() != "systemd" and not os.path.exists(os.path.join(root, "proc", str(p.pid))):
                    break
        except OSError:
            pass
        time.sleep(0.01)
    return root


def measure(args, mode, nptest):
    work = tempfile.mkdtemp(prefix="np-fault-")
    try:
        if mode in ("none", "numad"):
            return run_ns(args, mode, work)
        refresh = 1 if mode == "numaplaced-every-scan" else None
        conf = "[Daemon]\nMode=advise\nBackend=affinity\nScanIntervalSec=1\nMaxScanIntervalSec=1\nLogLevel=debug\n"
        if refresh:
            conf += "[Placement]\nLocalityRefreshScans=%d\n" % refresh
        bus = nptest.Bus()
        state = {}
        try:
            def start(p):
                root = namespace_root(p, work)
                state["d"] = nptest.Daemon(bus, config_text=conf, root=root)
            res = run_ns(args, "none", work, start)
            d = state.get("d")
            if d:
                text = d.stderr()
                res["maps_reads"] = text.count("Read numa_maps of")
                if os.environ.get("NP_BENCH_DEBUG"):
                    log(text[-3000:])
                res["daemon_alive"] = d.alive()
                d.cleanup()
            return res
        finally:
            bus.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--daemon", default=None)
    ap.add_argument("--helper", default=os.environ.get("NP_BENCH_HELPER"))
    ap.add_argument("--mb", type=int, default=2048)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="none,numad,numaplaced,numaplaced-every-scan")
    ap.add_argument("--json", default=None)
    ap.add_argument("--inner", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--work", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        return inner(args)
    if os.geteuid() != 0:
        print("fault-latency: must run as root", file=sys.stderr)
        return 1
    if not args.helper or not os.access(args.helper, os.X_OK):
        print("fault-latency: no bench-helper (--helper or NP_BENCH_HELPER)", file=sys.stderr)
        return 1
    args.helper = os.path.abspath(args.helper)
    daemon = os.path.abspath(args.daemon or os.environ.get("NP_DAEMON")
                             or os.path.join(SRC, "build", "daemon", "numaplaced"))
    sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
    import nptest
    nptest.DAEMON = daemon
    modes = [m for m in args.modes.split(",") if m]
    if "numad" in modes and not shutil.which("numad"):
        log("numad is not installed (apt-get install numad): skipping its rows")
        modes.remove("numad")
    results = {}
    for mode in modes:
        results[mode] = []
        for r in range(args.runs):
            log("== %s, run %d of %d (%g s)" % (mode, r + 1, args.runs, args.seconds))
            results[mode].append(measure(args, mode, nptest))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print("fault-latency: per-fault latency of a %d MB process faulting 4 kB pages in a tight loop, %g s a run, "
          "%d runs; us as min/mean/max over the runs" % (args.mb, args.seconds, args.runs))
    print("machine: %d CPUs, kernel %s; numaplaced %s (ScanIntervalSec=1, Mode=advise)"
          % (os.cpu_count(), os.uname().release, daemon))
    hdr = "%-24s %9s | %-17s | %-17s | %-17s | %-20s | %-22s | %s" % (
        "placer", "faults/s", "p50", "p99", "p99.9", "max", ">100us/>1ms per run", "numa_maps reads")
    print(hdr)
    print("-" * len(hdr))

    def mmm(rs, k, fmt="%.2f"):
        v = [r[k] for r in rs]
        return "/".join(fmt % x for x in (min(v), statistics.fmean(v), max(v)))
    for mode, rs in results.items():
        reads = ("%d/run" % statistics.fmean(r["maps_reads"] for r in rs) if "maps_reads" in rs[0] else
                 ("numad scans %d/run" % statistics.fmean(r.get("numad_scans", 0) for r in rs)
                  if mode == "numad" else "-"))
        print("%-24s %9.0f | %-17s | %-17s | %-17s | %-20s | %-22s | %s" % (
            mode, statistics.fmean(r["faults"] / args.seconds for r in rs), mmm(rs, "p50_us"), mmm(rs, "p99_us"),
            mmm(rs, "p999_us"), mmm(rs, "max_us", "%.0f"),
            "%.0f/%.0f" % (statistics.fmean(r["above_100us"] for r in rs),
                           statistics.fmean(r["above_1ms"] for r in rs)), reads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
