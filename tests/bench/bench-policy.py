#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench-policy: the placement policy (issue 8) against numad and the
kernel's automatic NUMA balancing, in the same 4-node QEMU VM setup.

Four scenarios, each run four ways, one fresh boot per way and run (4 nodes
x 512 MB, one vCPU each unless --cpus says more, cgroup v1; numaplaced
with Mode=enforce unless --mode advise, which has it scan and decide but
never place):

  1  interleaved  two busy 320 MB processes whose memory was allocated
                  interleaved over 0-3, then the policy set back to default
  2  interleave   the same with the interleave policy left on the memory
                  (the case automatic NUMA balancing never touches)
  3  numa01       autonuma-benchmark's numa01 shape: a process and its
                  child, both busy (0.6 CPUs each) on 320 MB of shared
                  memory first touched on node 0 (locality a: the parent,
                  b: the child)
  4  numa02       autonuma-benchmark's numa02 shape: one process whose
                  four busy threads (0.6 CPUs each) each sweep their own
                  slice of 320 MB first touched on node 0 (locality a: of
                  each thread's slice on the node its thread last ran on,
                  from np-workload's SLICES report (move_pages(2)); b: of
                  the process on its fullest node; no minimum: where the
                  threads end up decides it)

  numaplaced  the daemon at default settings (Mode=enforce), started before
              the workloads; numa_balancing=disable
  numad       Debian's numad (20150602) at its default settings, started
              before the workloads; numa_balancing=disable
  kernel      no placer; numa_balancing=enable on the kernel command line
  both        numaplaced as above with numa_balancing=enable (as distributions
              ship their kernels): who handles each process is in its
              Decision, printed at the end

"Busy" is np-workload --sweep --duty 90 --no-pin (a sweep for 90 ms of every
100 ms: 0.9 CPUs, above the default MinProcessCPU=0.5 with room to spare;
until f56fd9f the workloads ran --duty 50, which np-workload did not hold to
under TCG either, measured at 0.93 CPUs, so earlier runs are comparable;
--duty 30 --min-cpu 0.2 gives the vm suite's policy-converge-nb and
policy-interleave-nb workloads and configuration: at 0.3 CPUs they are
below the default MinProcessCPU=0.5). Every 2 s (--every) the VM samples each process's
locality (the share of its pages on its fullest node, from numa_maps),
pgmigrate_success, numa_pte_updates and numa_hint_faults, and the node each
of its threads last ran on (the JSON's samples only), for --duration
seconds; with --trace also every node's MemFree and each process's kB per
node (the JSON's "trace"; it reads numa_maps once more per sample), and each
process's scan passes (mm->numa_scan_seq) and its threads' preferred nodes
and NUMA groups from /proc/PID/sched, also of numaplaced and the bus with
their RssAnon in kB (the JSON's "sched"). Printed per scenario and way: seconds from the workload's start
until each process first had >= 95% of its pages on one node (or never),
the same from when it became significant ("after sig.": from when its
np-workload was ready, its memory allocated and its sweep begun; 0 when it
was already on one node then; to the samples' interval, about 2.3 s),
its final locality, MB migrated (pgmigrate_success x 4096) against the
minimum (the pages that were not on the node each process ended up on),
the placer's own CPU time (utime+stime from /proc/PID/stat at the end, the
share of it in the kernel (stime, mostly migrate_pages' page copies), CPU
ms per MB moved, and per minute from 120 s on, once the moves are over),
that CPU split by the 2 s samples into those in which pages moved (its
moves: seconds, and ms per MB moved) and those in which none did (the rest
of its work: sampling, deciding, its bus; seconds per minute of such
samples, comparable between the ways whenever each acted), the scans
numaplaced made (from its "Stopped after N scans": the regular ones, its
follow-ups and those its peeks brought), and
numa_pte_updates / numa_hint_faults. With --runs N the figures are
mmtests-style statistics (Min, Mean, TrimMean, Stddev, Max). --png draws
locality over time for the four ways (gnuplot, Debian's gnuplot-nox).

    meson test -C BUILD --benchmark policy -v
    NP_BUILD_ROOT=BUILD python3 tests/bench/bench-policy.py [--runs 1]
        [--duration 360] [--every 2] [--ways numaplaced,numad,kernel,both] [--scenarios 1,2,3,4]
        [--png FILE] [--json FILE]
    python3 tests/bench/bench-policy.py --report FILE.json [--png FILE]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("NP_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "vm"))
import npvm  # noqa: E402
import benchstat  # noqa: E402
from benchstat import stats  # noqa: E402

def topology(cpus):
    return npvm.Topology(4, mem_mb=512, cpus=cpus)


BUSY = "--mb 320 --interleave 0-3 --no-thp --sweep --duty 90 --no-pin"
READY = "np_result ready.{p} $(cut -d' ' -f1 /proc/uptime)\n"  # allocated and busy from here: significant
TWO = ("a=$(np_start_workload /tmp/a {busy}) || exit 1\n" + READY.format(p="a") +
       "b=$(np_start_workload /tmp/b {busy}) || exit 1\n" + READY.format(p="b"))
# numa01 (autonuma-benchmark's shape): one process and its child, both busy
# on 320 MB of shared memory first touched on node 0 (bound there while it
# was touched, then the default policy); 16 MB private to the first. Until
# this run's version the shared memory was 256 MB: below MinProcessMemory=
# with the first's 16 MB, so numaplaced left the pair alone in every way
NUMA01 = ("a=$(np_start_workload /tmp/a --mb 16 --share-mb 320 --share-busy --bind 0 --reset-policy --no-thp "
          "--sweep --duty 60 --no-pin) || exit 1\n"
          "b=$(sed -n 's/^CHILD pid=//p' /tmp/a.out)\n" + READY.format(p="a") + READY.format(p="b"))
# numa02: one process, four busy threads, each on its own slice of 320 MB
# (significant at the default MinProcessMemory) first touched on node 0;
# a's locality is the slices' (SLICES=1)
NUMA02 = ("a=$(np_start_workload /tmp/a --mb 320 --threads 4 --bind 0 --reset-policy --no-thp --sweep --duty 60 "
          "--no-pin --report) || exit 1\nb=$a\nSLICES=1\n" + READY.format(p="a") + READY.format(p="b"))
SCENARIOS = {"1": ("interleaved, policy reset", TWO.replace("{busy}", BUSY + " --reset-policy")),
             "2": ("interleave policy left set", TWO.replace("{busy}", BUSY)),
             "3": ("numa01: two processes on shared memory first touched on node 0", NUMA01),
             "4": ("numa02: four busy threads, each on its own slice", NUMA02)}
NO_MINIMUM = ("4",)
WAYS = ("numaplaced", "numad", "kernel", "both")
STEADY_FROM = 120  # seconds after the workloads started: every way has acted by then

SCRIPT = r"""
loc() {  # loc PID: share of its pages on its fullest node, in per mille
	awk '{ ps = 4
	  for (i = 2; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) { split($i, a, "="); ps = a[2] }
	  for (i = 2; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); s[a[1]] += a[2] * ps; t += a[2] * ps } }
	  END { m = 0; for (n in s) if (s[n] > m) m = s[n]; print (t ? int(1000 * m / t) : 0) }' /proc/$1/numa_maps
}
# numa02: a's locality is its slices' (np-workload's SLICES report, SIGUSR1)
loc_a() {
	if [ -z "$SLICES" ]; then loc $a; return; fi
	kill -USR1 $a
	sleep 0.3
	_l=$(sed -n 's/^SLICES local=\([0-9]*\).*/\1/p' /tmp/a.out | tail -n 1)
	echo "${_l:-0}"
}
# thread_nodes PID: the node each of its threads last ran on, one a line,
# the main thread's first
thread_nodes() {
	for _t in /proc/$1/task/*/stat; do
		_c=$(awk '{ print $39 }' "$_t" 2>/dev/null) || continue
		for _n in /sys/devices/system/cpu/cpu$_c/node*; do echo "${_n##*node}"; done
	done
}
# priv_local PID: kB of its private memory (numa_maps lines without file=)
# on the nodes its threads last ran on, and in all
priv_local() {
	awk -v nodes="$(thread_nodes $1 | tr '\n' ' ')" 'BEGIN { split(nodes, l, " "); for (i in l) on[l[i]] = 1 }
	  /file=/ { next }
	  { ps = 4
	  for (i = 2; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) { split($i, a, "="); ps = a[2] }
	  for (i = 2; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); t += a[2] * ps; if (a[1] in on) s += a[2] * ps } }
	  END { print s + 0, t + 0 }' /proc/$1/numa_maps
}
# where PID: the same as 1:3 (the sample's last fields)
where() {
	_w=$(thread_nodes $1 | paste -sd: -)
	echo "${_w:--}"
}
# sched_numa PID: its address space's scan passes (mm->numa_scan_seq), then
# each thread's preferred node and NUMA group (-1 and 0: none), main first
sched_numa() {
	awk '/^mm->numa_scan_seq/ { print $3; exit }' /proc/$1/sched 2>/dev/null
	for _t in /proc/$1/task/*/sched; do
		awk '/^numa_preferred_nid/ { p = $3 } /numa_group_id=/ { split($0, a, "numa_group_id="); g = a[2] + 0 }
		  END { printf "%s/%s ", p, g }' "$_t" 2>/dev/null
	done
}
cpu_ticks() { awk '{ print $14 + $15 }' /proc/$1/stat 2>/dev/null; }
sys_ticks() { awk '{ print $15 }' /proc/$1/stat 2>/dev/null; }
WAY={way}
np_start_placer $WAY || exit 1
t0=$(cut -d' ' -f1 /proc/uptime)
{start}np_result start $t0
np_result kb.a $(np_numa_kb $a)
np_result kb.b $(np_numa_kb $b)
end=$(( $(date +%s) + {duration} ))
while [ "$(date +%s)" -lt "$end" ]; do
	np_result s $(cut -d' ' -f1 /proc/uptime) $(loc_a) $(loc $b) \
		$(( $(np_vmstat pgmigrate_success) - m0 )) $(( $(np_vmstat numa_pte_updates) - u0 )) \
		$(( $(np_vmstat numa_hint_faults) - f0 )) $( [ -n "$PLACER" ] && cpu_ticks $PLACER || echo 0) \
		$(where $a) $(where $b)
	[ {trace} = 1 ] && np_result t $(cut -d' ' -f1 /proc/uptime) \
		$(for n in $(np_nodes); do awk '/MemFree/ { printf "%s ", $4 }' /sys/devices/system/node/node$n/meminfo; done) \
		a $(np_numa_kb $a) b $(np_numa_kb $b)
	[ {trace} = 1 ] && np_result k $(cut -d' ' -f1 /proc/uptime) a $(sched_numa $a) b $(sched_numa $b) \
		$( [ -n "$PLACER" ] && echo placer $(sched_numa $PLACER) $(awk '/^RssAnon/ { print $2 }' /proc/$PLACER/status) ) \
		$(for _d in $(pidof dbus-daemon); do echo dbus $(sched_numa $_d) $(awk '/^RssAnon/ { print $2 }' /proc/$_d/status); done)
	sleep {every}
done
np_result final.a $(np_numa_kb $a)
np_result final.b $(np_numa_kb $b)
np_result priv.a $(priv_local $a)
np_result priv.b $(priv_local $b)
[ -n "$PLACER" ] && np_result placer.ticks $(cpu_ticks $PLACER)
[ -n "$PLACER" ] && np_result placer.sys_ticks $(sys_ticks $PLACER)
np_result hz $(getconf CLK_TCK 2>/dev/null || echo 100)
case $WAY in
numaplaced|both)
	for p in $a $( [ "$b" != "$a" ] && echo $b ); do
		np_result decision $p "$(busctl get-property org.numaplaced1 /org/numaplaced1/process/$p org.numaplaced1.Process Decision 2>/dev/null | cut -d' ' -f2-)"
	done
	np_stop_numaplaced ;;
numad) np_capture numad.log grep -i -e "moved" -e "advis" /var/log/numad.log ;;
esac
kill $a $b 2>/dev/null
"""




def fmt(st, prec=1, none="never"):
    return benchstat.fmt(st, prec=prec, sep="/", width=0, none=none, single=True)


def run_one(args, scenario, way):
    label, start = SCENARIOS[scenario]
    cmdline = list(npvm.DEFAULT_CMDLINE)
    if way in ("kernel", "both"):
        cmdline = [c for c in cmdline if not c.startswith("numa_balancing=")] + ["numa_balancing=enable"]
    vm = npvm.VM(f"bench-policy-{scenario}-{way}", topology(args.cpus), cgroup="v1", cmdline=cmdline)
    vm.add_workload()
    if way in ("numaplaced", "both"):
        vm.add_dbus()
        vm.add_daemon()
        conf = f"[Daemon]\nMode={args.mode}\n"
        if args.min_cpu is not None:
            conf += f"[Placement]\nMinProcessCPU={args.min_cpu:g}\n"
        vm.add_file("etc/np.conf", conf)
    if way == "numad":
        vm.add_commands("numad")
    if args.duty is not None:
        start = start.replace("--duty 90", f"--duty {args.duty}")
    script = SCRIPT.replace("{way}", way).replace("{start}", start).replace(
        "{duration}", str(args.duration)).replace("{every}", f"{args.every:g}").replace(
        "{trace}", "1" if args.trace else "0")
    res = vm.run(script, timeout=args.duration + 240)
    if not res.completed or res.rc != 0:
        print(res.console.replace("\r", "")[-4000:])
        raise SystemExit(f"bench-policy: the {way} run of scenario {scenario} did not complete")
    t0 = float(res.get("start"))
    samples = []
    for line in res.all("s"):
        f = line.split()
        samples.append((float(f[0]) - t0, int(f[1]) / 1000.0, int(f[2]) / 1000.0, int(f[3]), int(f[4]), int(f[5]),
                        int(f[6]) if len(f) > 6 and f[6].isdigit() else 0,
                        f[7] if len(f) > 7 else "", f[8] if len(f) > 8 else ""))
    out = {"samples": samples, "balancing": res.get("balancing"), "duration": args.duration,
           "every": args.every, "cpus": args.cpus, "mode": args.mode,
           "duty": args.duty if args.duty is not None and scenario in ("1", "2") else None,
           "min_cpu": args.min_cpu}
    # the placer's CPU once the moves are over: from STEADY_FROM s to the end, per minute
    hz = res.int("hz") or 100
    steady = [x for x in samples if x[0] >= STEADY_FROM]
    out["steady_cpu_s_per_min"] = ((steady[-1][6] - steady[0][6]) / hz * 60.0 / (steady[-1][0] - steady[0][0])
                                   if len(steady) > 1 and steady[-1][0] > steady[0][0] and way != "kernel" else None)
    # the placer's CPU split by the 2 s samples: those in which pages moved
    # (its moves; per MB moved) and those in which none did (everything
    # else it does: sampling, deciding, its bus; per minute)
    move_ticks = idle_ticks = idle_s = 0
    for x, y in zip(samples, samples[1:]):
        if y[3] > x[3]:
            move_ticks += y[6] - x[6]
        else:
            idle_ticks += y[6] - x[6]
            idle_s += y[0] - x[0]
    out["idle_cpu_s_per_min"] = idle_ticks / hz * 60.0 / idle_s if idle_s > 0 and way != "kernel" else None
    out["move_cpu_s"] = move_ticks / hz if way != "kernel" else None
    for i, name in enumerate(("a", "b")):
        placed = next((s[0] for s in samples if s[1 + i] >= 0.95), None)
        final = res.node_kb(f"final.{name}")
        start = res.node_kb(f"kb.{name}")
        node = max(final, key=final.get) if final else None
        priv = (res.get(f"priv.{name}") or "").split()
        # the share of its private memory on the nodes its threads last ran on
        out.setdefault("private_local", {})[name] = (int(priv[0]) / int(priv[1]) if len(priv) == 2
                                                      and int(priv[1]) > 0 else None)
        ready = res.get(f"ready.{name}")
        ready_s = float(ready) - t0 if ready else None
        out[name] = {"placed_s": placed, "final_locality": samples[-1][1 + i] if samples else None,
                     "min_kb": sum(kb for n, kb in start.items() if n != node), "ready_s": ready_s,
                     # seconds from when it was allocated and busy (significant) until >= 95% on one node
                     "after_ready_s": (max(0.0, placed - ready_s) if placed is not None and ready_s is not None
                                       else None)}
    last = samples[-1] if samples else (0, 0, 0, 0, 0, 0, 0)
    out["migrated_mb"] = last[3] * 4096 / 2 ** 20
    out["min_mb"] = None if scenario in NO_MINIMUM else (out["a"]["min_kb"] + out["b"]["min_kb"]) / 1024
    out["pte_updates"], out["hint_faults"] = last[4], last[5]
    ticks = res.int("placer.ticks")
    out["placer_cpu_s"] = ticks / hz if ticks is not None else None
    # its kernel time (stime: mostly the page copies of migrate_pages(2)),
    # and its CPU per MB moved, the comparison at equal work
    sys_ticks = res.int("placer.sys_ticks")
    out["placer_sys_s"] = sys_ticks / hz if sys_ticks is not None else None
    out["cpu_ms_per_mb"] = (1000.0 * out["placer_cpu_s"] / out["migrated_mb"]
                            if out["placer_cpu_s"] is not None and out["migrated_mb"] > 0 else None)
    out["move_ms_per_mb"] = (1000.0 * out["move_cpu_s"] / out["migrated_mb"]
                             if out["move_cpu_s"] is not None and out["migrated_mb"] > 0 else None)
    out["numad_log"] = res.all("numad.log")
    out["decisions"] = res.all("decision")
    # what numaplaced decided and did, from its log (np_stop_numaplaced)
    if args.trace:
        out["trace"] = [f"{float(t.split()[0]) - t0:.2f} {t.split(None, 1)[1]}" for t in res.all("t")]
        out["sched"] = [f"{float(t.split()[0]) - t0:.2f} {t.split(None, 1)[1]}" for t in res.all("k")]
    # the scans it made ("Stopped after N scans": its follow-ups, and
    # those its peeks brought, beside the regular interval)
    stopped = [re.search(r"Stopped after ([0-9]+) scans", x) for x in res.all("numaplaced.log")]
    out["scans"] = next((int(m.group(1)) for m in stopped if m), None)
    out["log"] = [x for x in res.all("numaplaced.log")
                  if any(k in x for k in ("Placing ", "Placed ", "Not moving", "Not deciding", "Not placing",
                                          "Keeping the busy threads", "Widening the placement"))]
    return out


def plot(args, results):
    gp = shutil.which("gnuplot")
    if not gp:
        print("bench-policy: gnuplot not found (Debian package gnuplot-nox); no plot")
        return
    tmp = tempfile.mkdtemp(prefix="bench-policy-")
    # one panel per scenario, two to a row
    n = len(args.scenarios)
    cols = min(n, 2)
    rows = (n + 1) // 2
    cmds = [f"set terminal png size {600 * cols},{480 * rows}",
        f"set output '{args.png}'", f"set multiplot layout {rows},{cols}", "set yrange [0:1.05]",
        "set xlabel 'seconds after the workloads started'", "set key bottom right opaque", "set grid", "set title font ',10'"]
    for sc in args.scenarios:
        # numa02: a is the slices' locality, what the scenario is about; b
        # (the process on its fullest node) is best at 0.25 there
        slices = "SLICES=1" in SCENARIOS[sc][1]
        plots = []
        for way in args.ways:
            runs = results.get(sc, {}).get(way) or []
            if not runs:
                continue
            path = os.path.join(tmp, f"{sc}-{way}.dat")
            with open(path, "w") as f:
                for s in runs[0]["samples"]:
                    f.write(f"{s[0]:.1f} {s[1] if slices else (s[1] + s[2]) / 2:.3f}\n")
            plots.append(f"'{path}' using 1:2 with lines lw 2 title '{way}'")
        cmds.append('set ylabel "%s"' % ("slices on their threads' nodes" if slices else "locality (mean of a and b)"))
        cmds.append(f"set title 'scenario {sc}: {SCENARIOS[sc][0]}'")
        cmds.append("plot " + ", ".join(plots))
    cmds.append("unset multiplot")
    r = subprocess.run([gp], input="\n".join(cmds) + "\n", capture_output=True, text=True)
    if r.returncode:
        print("bench-policy: gnuplot failed:", r.stderr)
    else:
        print(f"bench-policy: plot written to {args.png}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--duration", type=int, default=360, help="seconds each way runs after the workloads start")
    ap.add_argument("--every", type=float, default=2.0,
                    help="seconds the VM sleeps between two samples (each takes 0.25 to 0.3 s more under TCG)")
    ap.add_argument("--duty", type=int, choices=range(1, 101), metavar="PERCENT",
                    help="the busy share of scenarios 1 and 2's two processes instead of 90 (30 with --min-cpu 0.2: "
                         "the vm suite's policy-converge-nb and policy-interleave-nb)")
    ap.add_argument("--min-cpu", type=float, metavar="CPUS",
                    help="numaplaced's MinProcessCPU= in the ways numaplaced and both (0.2 with --duty 30, as in "
                         "the vm suite)")
    ap.add_argument("--cpus", type=int, default=1,
                    help="vCPUs per node (2 lets numa01's pair share a node at TargetUtilization=85%%)")
    ap.add_argument("--ways", default=",".join(WAYS))
    ap.add_argument("--mode", choices=("enforce", "advise"), default="enforce",
                    help="numaplaced's Mode= in the ways numaplaced and both (advise: it scans and decides, "
                         "never places)")
    ap.add_argument("--scenarios", default="1,2,3,4")
    ap.add_argument("--trace", action="store_true",
                    help="also record, at each sample, every node's MemFree and where each process's pages are "
                         "(kB per node), as the run's trace")
    ap.add_argument("--png", default=os.path.join(npvm.vm_build_dir(), "bench-policy.png"))
    ap.add_argument("--json", help="write the results here (after every run, so a broken run keeps the others)")
    ap.add_argument("--report", metavar="JSON", help="print the tables and draw the plot of an earlier --json; "
                    "run nothing")
    args = ap.parse_args()
    args.ways = [w for w in args.ways.split(",") if w]
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    if any(w not in WAYS for w in args.ways) or any(s not in SCENARIOS for s in args.scenarios):
        ap.error("unknown way or scenario")
    if args.report:
        with open(args.report) as f:
            results = json.load(f)
        args.scenarios = [sc for sc in args.scenarios if sc in results]
        args.ways = [w for w in args.ways if any(results[sc].get(w) for sc in args.scenarios)]
        args.runs = max(len(r) for sc in args.scenarios for r in results[sc].values())
        args.duration = next((x["duration"] for sc in args.scenarios for r in results[sc].values() for x in r
                              if x.get("duration")), args.duration)
        args.cpus = next((x["cpus"] for sc in args.scenarios for r in results[sc].values() for x in r
                          if x.get("cpus")), 1)
        report(args, results)
        return 0
    npvm.ensure_host_commands(npvm.QEMU, "busybox", "dbus-daemon", "busctl", "numad", "gnuplot")

    results = {}
    for sc in args.scenarios:
        for way in args.ways:
            for r in range(args.runs):
                print(f"bench-policy: scenario {sc}, {way}, run {r + 1}/{args.runs}", flush=True)
                results.setdefault(sc, {}).setdefault(way, []).append(run_one(args, sc, way))
                if args.json:
                    with open(args.json, "w") as f:
                        json.dump(results, f, indent=1)
    report(args, results)
    return 0


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def report(args, results):
    """The tables (and the plot) of results: {scenario: {way: [run, ...]}}."""
    vcpus = "one vCPU" if args.cpus == 1 else f"{args.cpus} vCPUs"
    print(f"\nbench-policy: 4 nodes x 512 MB, {vcpus} each, QEMU TCG; two busy 320 MB processes; "
          f"{args.duration} s per way; {args.runs} run(s); figures as min/mean/trimmed mean/stddev/max "
          f"when runs > 1")
    for sc in args.scenarios:
        duty = next((x["duty"] for r in results[sc].values() for x in r if x.get("duty")), None)
        print(f"\n== Scenario {sc}: {SCENARIOS[sc][0]}" + (f", --duty {duty}" if duty else ""))
        hdr = (f"{'way':<11} {'placed s (a)':>14} {'placed s (b)':>14} {'after sig. a':>12} {'after sig. b':>12} "
               f"{'locality a':>11} {'locality b':>11} "
               f"{'MB moved':>9} {'MB min':>7} {'moved/min':>9} {'placer CPU s':>12} {'of it sys':>9} "
               f"{'ms/MB':>6} {'steady s/min':>12} {'in moves s':>10} {'moves ms/MB':>11} "
               f"{'idle s/min':>10} {'scans':>6} "
               f"{'pte upd':>9} {'hint flt':>9}")
        print(hdr)
        for way in args.ways:
            runs = results[sc].get(way)
            if not runs:
                continue
            col = lambda f: stats([f(x) for x in runs])  # noqa: E731
            ratio = stats([x["migrated_mb"] / x["min_mb"] if x["min_mb"] else None for x in runs])
            print(f"{way:<11} {fmt(col(lambda x: x['a']['placed_s']), 0):>14} "
                  f"{fmt(col(lambda x: x['b']['placed_s']), 0):>14} "
                  f"{fmt(col(lambda x: x['a'].get('after_ready_s')), 0):>12} "
                  f"{fmt(col(lambda x: x['b'].get('after_ready_s')), 0):>12} "
                  f"{fmt(col(lambda x: x['a']['final_locality']), 2):>11} "
                  f"{fmt(col(lambda x: x['b']['final_locality']), 2):>11} "
                  f"{fmt(col(lambda x: x['migrated_mb']), 0):>9} {fmt(col(lambda x: x['min_mb']), 0):>7} "
                  f"{fmt(ratio, 3, 'n/a'):>9} {fmt(col(lambda x: x['placer_cpu_s']), 2, 'n/a'):>12} "
                  f"{fmt(col(lambda x: x.get('placer_sys_s')), 2, 'n/a'):>9} "
                  f"{fmt(col(lambda x: x.get('cpu_ms_per_mb')), 1, 'n/a'):>6} "
                  f"{fmt(col(lambda x: x.get('steady_cpu_s_per_min')), 3, 'n/a'):>12} "
                  f"{fmt(col(lambda x: x.get('move_cpu_s')), 2, 'n/a'):>10} "
                  f"{fmt(col(lambda x: x.get('move_ms_per_mb')), 1, 'n/a'):>11} "
                  f"{fmt(col(lambda x: x.get('idle_cpu_s_per_min')), 3, 'n/a'):>10} "
                  f"{fmt(col(lambda x: x.get('scans')), 0, 'n/a'):>6} "
                  f"{fmt(col(lambda x: x['pte_updates']), 0):>9} {fmt(col(lambda x: x['hint_faults']), 0):>9}")
        # the ratios the issue asks for, of the means, measured in the same run
        np_runs, nd_runs = results[sc].get("numaplaced") or [], results[sc].get("numad") or []
        if np_runs and nd_runs:
            parts = []
            for label, key in (("placer CPU", "placer_cpu_s"), ("ms per MB moved", "cpu_ms_per_mb"),
                               ("MB moved", "migrated_mb"), ("idle s/min", "idle_cpu_s_per_min")):
                a, b = mean(x.get(key) for x in np_runs), mean(x.get(key) for x in nd_runs)
                parts.append(f"{label} {a / b:.2f}" if a is not None and b else f"{label} n/a")
            print("numaplaced / numad (means): " + ", ".join(parts))
        # "both" against the better of numaplaced and the kernel alone
        both, kern = results[sc].get("both") or [], results[sc].get("kernel") or []
        if both and kern:
            parts = []
            for label, key in (("MB moved", "migrated_mb"), ("pte updates", "pte_updates"),
                               ("hint faults", "hint_faults")):
                a, b = mean(x.get(key) for x in both), mean(x.get(key) for x in kern)
                parts.append(f"{label} {a / b:.2f}" if a is not None and b else f"{label} n/a")
            print("both / kernel alone (means): " + ", ".join(parts))
        for way in args.ways:
            pl = [x.get("private_local") for x in results[sc].get(way) or [] if x.get("private_local")]
            if pl:
                print(f"   private memory on its threads' nodes at the end ({way}): "
                      + "; ".join(" ".join(f"{k} {v:.2f}" if v is not None else f"{k} n/a"
                                           for k, v in sorted(p.items())) for p in pl))
        for way in args.ways:
            for x in results[sc].get(way) or []:
                if x["numad_log"]:
                    print(f"   numad's log ({way}): " + " | ".join(x["numad_log"][:6]))
                for d in x.get("decisions") or []:
                    print(f"   Decision ({way}): {d}")
    if args.png:
        plot(args, results)


if __name__ == "__main__":
    sys.exit(main())
