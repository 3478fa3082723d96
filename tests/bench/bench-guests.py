#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench-guests: three real QEMU guests (issue 24) under numaplaced, numad
and the kernel's automatic NUMA balancing, in the VM shape of the vm suite's
guests-* tests (tests/vm/test_guests.py: 4 nodes, two CPUs per node, cgroup
v1; nested qemu-system-x86_64 under TCG, -m 300 preallocated, one vCPU
spinning in a boot sector, started under numactl --interleave=all).

Two backings of the guests' RAM, each run three ways, one fresh boot per
backing and way:

  anon     memory-backend-ram (anonymous memory), 4 x 640 MB
  hugetlb  memory-backend-file on hugetlbfs (2 MB pages, share=on), pools
           reserved per node at boot (288, 288, 288, 64 pages), 4 x 896 MB

  numaplaced  the daemon with the shipped config/numaplaced.conf, started
              before the guests; numa_balancing=disable
  numad       Debian's numad (20150602) at its defaults, started before the
              guests; numa_balancing=disable
  kernel      no placer; numa_balancing=enable on the kernel command line

Every 2 s the VM samples each guest's locality (the share of its RAM, its
largest numa_maps mapping, on the node holding the most of it),
pgmigrate_success and the placer's CPU ticks, for --duration seconds from
the first guest's start. Printed per backing and way: seconds until each
guest first had >= 95% of its RAM on one node (or never), its final
locality, whether that node is the one its vCPU thread last ran on, MB
migrated (pgmigrate_success x 4096) against the minimum (the RAM each guest
had outside the node it ended on, or the node holding most of it), the
placer's CPU seconds (utime + stime at the end), the kernel's
numa_pte_updates and numa_hint_faults; then the ratios of numaplaced's
figures to numad's and the kernel's. --png draws the mean locality of the
three guests over time (gnuplot, Debian's gnuplot-nox).

    NP_BUILD_ROOT=BUILD python3 tests/bench/bench-guests.py [--duration 360]
        [--backings anon,hugetlb] [--ways numaplaced,numad,kernel]
        [--png FILE] [--json FILE] [--lock FILE]
    python3 tests/bench/bench-guests.py --report FILE.json [--png FILE]
"""
import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("NP_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "vm"))
import npvm  # noqa: E402
import test_guests as tg  # noqa: E402

WAYS = ("numaplaced", "numad", "kernel")
BACKINGS = ("anon", "hugetlb")
GUESTS = ("a", "b", "c")

SCRIPT = r"""
# ram_loc PID: the share of its RAM (largest mapping) on the node holding
# most of it, per mille, and that node
ram_loc() {
	ram_kb $1 | awk '{ for (i = 1; i <= NF; i++) { split($i, a, "="); t += a[2]; if (a[2] > m) { m = a[2]; n = a[1] } } }
		END { print (t ? int(1000 * m / t) : 0) ":" n }'
}
# vcpu_node PID: the node of the CPU its vCPU thread last ran on
vcpu_node() {
	_c=$(stat_field /proc/$1/task/$(vcpu_tid $1)/stat 39)
	_n=$(ls -d /sys/devices/system/cpu/cpu$_c/node* | head -n 1)
	echo "${_n##*node}"
}
cpu_ticks() { awk '{ print $14 + $15 }' /proc/$1/stat 2>/dev/null; }
WAY={way}
{setup}
np_start_placer $WAY || exit 1
t0=$(now)
np_result start $t0
for x in a b c; do
	p=$(start_guest $x {backend})
	np_result pid.$x $p
	eval $x=$p
done
for x in a b c; do
	eval p=\$$x
	np_wait_for 240 guest_ready $p || { np_log "guest $x did not start:"; cat /tmp/$x.out; exit 1; }
	np_result ready.$x $(now)
	np_result ram.$x $(ram_kb $p)
done
end=$(( $(date +%s) + {duration} + ${t0%.*} - $(cut -d. -f1 /proc/uptime) ))
sample() {
	np_result s $(now) $(ram_loc $a) $(ram_loc $b) $(ram_loc $c) \
		$(( $(np_vmstat pgmigrate_success) - m0 )) $( [ -n "$PLACER" ] && cpu_ticks $PLACER || echo 0)
}
while [ "$(date +%s)" -lt "$end" ]; do
	sample
	sleep 2
done
# the last one, next to the final reads (a placer that acts in the last
# seconds is counted in both)
sample
for x in a b c; do
	eval p=\$$x
	np_result final.$x $(ram_kb $p)
	np_result vcpu.$x $(vcpu_node $p)
	np_result alive.$x $(kill -0 $p 2>/dev/null && echo yes || echo no)
done
np_result pte $(( $(np_vmstat numa_pte_updates) - u0 ))
np_result hint $(( $(np_vmstat numa_hint_faults) - f0 ))
[ -n "$PLACER" ] && np_result placer.ticks $(cpu_ticks $PLACER)
np_result pools $(huge_pools)
case $WAY in
numaplaced)
	np_result migrated $(busctl get-property org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager MigratedBytes | cut -d' ' -f2)
	for p in $a $b $c; do
		np_result decision $p "$(busctl get-property org.numaplaced1 /org/numaplaced1/process/$p org.numaplaced1.Process Decision 2>/dev/null | cut -d' ' -f2-)"
	done
	np_stop_numaplaced ;;
numad) np_capture numad.log grep -i -e "moved" -e "advis" -e "process" /var/log/numad.log ;;
esac
kill $a $b $c
"""


class Lock:
    """An flock on FILE while a VM runs (--lock), so that other VM users of
    the machine wait rather than share its cores with the measurement."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        if self.path:
            self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.path:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)


def run_one(args, backing, way):
    sc = tg.SCENARIOS[backing]
    cmdline = list(sc["cmdline"])
    if way == "kernel":
        cmdline.append("numa_balancing=enable")
    vm = npvm.VM(f"bench-guests-{backing}-{way}", sc["topo"], cgroup="v1", cmdline=cmdline)
    vm.add_commands("numactl")
    vm.add_nested_qemu()
    if way == "numaplaced":
        vm.add_dbus()
        vm.add_daemon()
        with open(os.path.join(SRC, "config", "numaplaced.conf")) as f:
            vm.add_file("etc/np.conf", f.read())
    if way == "numad":
        vm.add_commands("numad")
    script = ("now() { awk '{ print $1 }' /proc/uptime; }\n" + tg.GUEST_SH +
              SCRIPT.replace("{way}", way).replace("{setup}", sc["setup"]).replace("{backend}", sc["backend"])
              .replace("{duration}", str(args.duration)))
    with Lock(args.lock):
        res = vm.run(script, timeout=args.duration + 300)
    if not res.completed or res.rc != 0:
        print(res.console.replace("\r", "")[-4000:])
        raise SystemExit(f"bench-guests: the {way} run with {backing} RAM did not complete")
    t0 = float(res.get("start"))
    samples = []
    for line in res.all("s"):
        f = line.split()
        locs = [int(x.split(":")[0]) / 1000.0 for x in f[1:4]]
        samples.append([float(f[0]) - t0] + locs + [int(f[4]), int(f[5])])
    hz = 100
    out = {"samples": samples, "balancing": res.get("balancing"), "guests": {}}
    min_kb = 0
    for i, x in enumerate(GUESTS):
        final = res.node_kb(f"final.{x}")
        start = res.node_kb(f"ram.{x}")
        node = max(final, key=final.get) if final else None
        min_kb += sum(kb for n, kb in start.items() if n != node)
        local_s = next((s[0] for s in samples if s[1 + i] >= 0.95), None)
        total = sum(final.values())
        out["guests"][x] = {"local_s": local_s, "ready_s": float(res.get(f"ready.{x}")) - t0,
                            "final_locality": final.get(node, 0) / total if total else None, "node": node,
                            "vcpu_node": res.int(f"vcpu.{x}"), "alive": res.get(f"alive.{x}")}
    last = samples[-1] if samples else [0] * 6
    out["migrated_mb"] = last[4] * 4096 / 2 ** 20
    out["min_mb"] = min_kb / 1024
    ticks = res.int("placer.ticks")
    out["placer_cpu_s"] = ticks / hz if ticks is not None else None
    out["pte_updates"], out["hint_faults"] = res.int("pte"), res.int("hint")
    out["daemon_migrated_mb"] = (res.int("migrated") or 0) / 2 ** 20 if way == "numaplaced" else None
    out["pools"] = res.get("pools")
    out["numad_log"] = res.all("numad.log")
    out["decisions"] = res.all("decision")
    return out


def fmt(v, prec=1, none="never"):
    return none if v is None else f"{v:.{prec}f}"


def report(args, results):
    print(f"\nbench-guests: three QEMU guests (TCG, -m {tg.GUEST_MB}, one busy vCPU) started under numactl "
          f"--interleave=all; 4 nodes x 2 CPUs; {args.duration} s per way from the first guest's start; "
          "one boot per backing and way")
    for backing in args.backings:
        if backing not in results:
            continue
        print(f"\n== {backing} guest RAM")
        print(f"{'way':<11} {'local s (a/b/c)':>20} {'locality (a/b/c)':>18} {'on its vCPU node':>16} "
              f"{'MB moved':>9} {'MB min':>7} {'moved/min':>9} {'placer CPU s':>12} {'pte upd':>9} "
              f"{'hint flt':>9}")
        for way in args.ways:
            r = results[backing].get(way)
            if not r:
                continue
            g = [r["guests"][x] for x in GUESTS]
            local = "/".join(fmt(x["local_s"], 0) for x in g)
            loc = "/".join(fmt(x["final_locality"], 2, "n/a") for x in g)
            same = sum(1 for x in g if x["node"] == x["vcpu_node"])
            ratio = fmt(r["migrated_mb"] / r["min_mb"], 2, "n/a") if r["min_mb"] else "n/a"
            print(f"{way:<11} {local:>20} {loc:>18} {f'{same} of 3':>16} {r['migrated_mb']:>9.0f} "
                  f"{r['min_mb']:>7.0f} {ratio:>9} {fmt(r['placer_cpu_s'], 2, 'n/a'):>12} "
                  f"{fmt(r['pte_updates'], 0, 'n/a'):>9} {fmt(r['hint_faults'], 0, 'n/a'):>9}")
        npr = results[backing].get("numaplaced")
        for other in ("numad", "kernel"):
            o = results[backing].get(other)
            if not npr or not o:
                continue
            parts = []
            for label, key in (("MB moved", "migrated_mb"), ("placer CPU", "placer_cpu_s")):
                a, b = npr.get(key), o.get(key)
                # a ratio to next to nothing moved says nothing
                ok = a is not None and b and (b >= 1 or key != "migrated_mb")
                parts.append(f"{label} {a / b:.2f}" if ok else f"{label} n/a")
            lo_np = sum(1 for x in GUESTS if npr["guests"][x]["local_s"] is not None)
            lo_o = sum(1 for x in GUESTS if o["guests"][x]["local_s"] is not None)
            parts.append(f"guests made local {lo_np} against {lo_o}")
            print(f"numaplaced / {other}: " + ", ".join(parts))
        for way in args.ways:
            r = results[backing].get(way) or {}
            if r.get("daemon_migrated_mb") is not None:
                print(f"   numaplaced's MigratedBytes: {r['daemon_migrated_mb']:.0f} MB")
            if r.get("pools") and backing == "hugetlb":
                print(f"   huge page pools at the end ({way}): {r['pools']}")
            for line in r.get("numad_log") or []:
                print(f"   numad's log: {line}")
            for d in r.get("decisions") or []:
                print(f"   Decision ({way}): {d}")
    if args.png:
        plot(args, results)


def plot(args, results):
    gp = shutil.which("gnuplot")
    if not gp:
        print("bench-guests: gnuplot not found (Debian package gnuplot-nox); no plot")
        return
    tmp = tempfile.mkdtemp(prefix="bench-guests-")
    backings = [b for b in args.backings if b in results]
    cmds = ["set terminal png size 1200,520", f"set output '{args.png}'",
            f"set multiplot layout 1,{max(1, len(backings))}", "set yrange [0:1.05]",
            "set xlabel 'seconds after the first guest started'",
            "set ylabel 'locality of the guests RAM (mean of three)'", "set key bottom right", "set grid"]
    for backing in backings:
        plots = []
        for way in args.ways:
            r = results[backing].get(way)
            if not r:
                continue
            path = os.path.join(tmp, f"{backing}-{way}.dat")
            with open(path, "w") as f:
                for s in r["samples"]:
                    f.write(f"{s[0]:.1f} {(s[1] + s[2] + s[3]) / 3:.3f}\n")
            plots.append(f"'{path}' using 1:2 with lines lw 2 title '{way}'")
        cmds.append(f"set title '{backing} guest RAM'")
        cmds.append("plot " + ", ".join(plots))
    cmds.append("unset multiplot")
    r = subprocess.run([gp], input="\n".join(cmds) + "\n", capture_output=True, text=True)
    if r.returncode:
        print("bench-guests: gnuplot failed:", r.stderr)
    else:
        print(f"bench-guests: plot written to {args.png}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=int, default=360, help="seconds each way runs from the first guest's start")
    ap.add_argument("--backings", default=",".join(BACKINGS))
    ap.add_argument("--ways", default=",".join(WAYS))
    ap.add_argument("--png", default=os.path.join(npvm.vm_build_dir(), "bench-guests.png"),
                    help="draw locality over time here ('' for no plot)")
    ap.add_argument("--json", help="write the results here after every boot (adds to what the file holds)")
    ap.add_argument("--lock", help="hold an flock on this file during each boot")
    ap.add_argument("--report", metavar="JSON", help="print the tables (and draw the plot) of an earlier --json")
    args = ap.parse_args()
    args.ways = [w for w in args.ways.split(",") if w]
    args.backings = [b for b in args.backings.split(",") if b]
    if any(w not in WAYS for w in args.ways) or any(b not in BACKINGS for b in args.backings):
        ap.error("unknown way or backing")
    if args.report:
        with open(args.report) as f:
            results = json.load(f)
        report(args, results)
        return 0
    npvm.ensure_host_commands(npvm.QEMU, "busybox", "dbus-daemon", "busctl", "numad",
                              *(["gnuplot"] if args.png else []))
    results = {}
    if args.json and os.path.exists(args.json):
        with open(args.json) as f:
            results = json.load(f)
    for backing in args.backings:
        for way in args.ways:
            print(f"bench-guests: {backing} guest RAM, {way}", flush=True)
            results.setdefault(backing, {})[way] = run_one(args, backing, way)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1)
    report(args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
