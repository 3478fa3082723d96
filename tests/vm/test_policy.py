#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The placement policy (issue 8) in a 4-node VM (4 x 512 MB, one CPU per
node, cgroup v1), at default settings unless a scenario says otherwise.

  converge    two busy 320 MB processes allocated interleaved over 0-3
              (policy reset to default after touching): each ends up alone
              on one node with >= 95% of its pages, within 3 scans of
              becoming significant; bytes moved within 5% of the minimum;
              then a minute of steady load: no further move
  interleave  the same with the interleave policy left set on the memory:
              left alone with KeepInterleaved=yes, placed after a reload with
              KeepInterleaved=no
  three       three busy 300 MB processes: each on its own node, no node
              above TargetUtilization
  threads     a two-thread process whose threads first-touched their memory
              on nodes 1 and 2: placed together on one node
  advise      Mode=advise: the same decisions as converge published (State
              advised, TargetNodes), nothing moved
  foreign     a process started with numactl --cpunodebind=1 --membind=1 is
              left alone (State foreign); a process with four busy threads
              on the 4-CPU VM is not confined to one node, nor to fewer
              nodes than the CPUs it was measured to use
  rate        MaxRate=16M: while the policy moves two processes, property
              reads, Dump() and Advise() answer
  converge-nb converge with the kernel's NUMA balancing on (numa_balancing=
              enable, as distributions ship it): both end local (>= 95% of
              their pages on the node their thread runs on), whoever makes
              them so; pages moved by the daemon and the kernel together at
              most 1.05 times the minimum (no fight, no page moved twice);
              a minute steady;
              each Decision or placement says what the kernel did
  interleave-nb  interleave with the balancing on: the daemon places both
              at its follow-up scan (the kernel does not move interleaved
              memory), pages moved at most 1.05 times the minimum
  numa02-nb   autonuma-benchmark's numa02 shape with the balancing on: one
              process, four busy threads on their own slices of 320 MB
              first touched on node 0; the kernel moves its pages after
              threads the scheduler keeps moving. The daemon keeps each
              busy thread on a node of its own (Cpus_allowed_list that
              node's CPUs, the other threads every CPU), in no cpuset (or
              in the cpuset of a placement it widened for them first, no
              page moved); >= 95% of each thread's private NUMA faults on
              pages of its node; the Decision names the homes; 30 s
              steady: at most 1% of its memory moved; after the stop
              every thread has every CPU again
  late        one busy process started once the machine was quiet long
              enough for the scan interval to stretch to MaxScanIntervalSec:
              a peek between the stretched scans sees its memory and brings
              the scan forward; placed on one node (>= 95% of its pages);
              the seconds from its start to its placement are printed
  hugetlb     2 MB pages reserved on every node, node 0's pool (64 pages)
              too small for a busy process whose 320 MB are hugetlb pages
              (np-workload --hugetlb under numactl --interleave=all): it is
              significant (MemoryBytes counts its huge pages), placed within
              3 scans of becoming significant on one node other than 0 with
              >= 95% of its huge pages there; no Decision or placement ever
              names node 0
  hugetlb-file  the same with the memory in a file on hugetlbfs mapped
              shared (np-workload --hugetlb-file), as a guest's RAM, started
              under numactl --preferred=0: node 0's pool (100 pages) filled,
              the other 60 pages on node 1; node 0, which holds the most of
              its pages, cannot take the rest: placed on node 1

Run one: python3 tests/vm/test_policy.py converge
"""
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=512, cpus=1)

BASE_CONF = """[Daemon]
Mode=enforce
[Placement]
MinProcessCPU=0.2
"""

COMMON = r"""
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
P=org.numaplaced1.Process
now() { awk '{ print $1 }' /proc/uptime; }
mprop() { busctl get-property $M "$1" 2>/dev/null | cut -d' ' -f2-; }
pprop() { busctl get-property org.numaplaced1 /org/numaplaced1/process/$1 $P "$2" 2>/dev/null | cut -d' ' -f2- | tr -d '"'; }
cgroup_of() { sed -n 's/^[0-9]*:cpuset:\(.*\)$/\1/p' /proc/$1/cgroup | head -n 1; }
# Cheap waits (the VM is slow under TCG; polling with busctl would eat the
# CPU the workloads and the daemon need): the daemon's log and a monitor of
# its signals, read once at the end.
logged() { [ "$(grep -c "$1" /tmp/numaplaced.log)" -ge "$2" ]; }
# every pid given has a Placed line (a move that ran out of room on its
# node logs a second one for the rest: N lines are not N processes)
all_placed() { for _p in "$@"; do grep -q "Placed $_p " /tmp/numaplaced.log || return 1; done; }
# final STATE/TARGET of each pid, one result line
states() {
	_l=""
	for _p in "$@"; do
		_l="$_l $(pprop $_p State)/$(pprop $_p TargetNodes | tr ' ' ,)"
	done
	np_result states $_l
}
kb() { np_result $1 $(np_numa_kb $2); }
# its private anonymous memory only (a file's pages are shared with other
# processes, and move with theirs: migrate_pages as root moves shared pages)
anon_kb() { np_result $1 $(np_numa_kb $2 '^[0-9a-f]+ [^ ]+ (heap |stack )?anon='); }
np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
busctl monitor --json=short org.numaplaced1 > /tmp/mon 2>/dev/null &
MON=$!
m0=$(np_vmstat pgmigrate_success)
"""

FINISH = r"""
np_result pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
np_result calls $(mprop MigrationCalls)
np_result migrated $(mprop MigratedBytes)
for i in /sys/devices/system/node/node[0-9]*; do
	n=${i##*node}
	np_result meminfo $n $(awk '/MemTotal/ { t = $4 } /MemUsed/ { u = $4 } END { print t, u }' $i/meminfo)
done
kill $MON
while IFS= read -r l; do echo "NPVM-R mon $l"; done < /tmp/mon
np_stop_numaplaced
"""

# busy: a sweep for 30 ms of every 100 ms (0.3 to 0.7 CPUs as TCG counts it:
# its remote accesses and NUMA hinting faults are slow there), so that one
# fits a one-CPU node at TargetUtilization=85% beside the VM's own load (the
# test's shell, busctl, the bus) and the VM keeps CPU for the daemon and the
# checks; MinProcessCPU=0.2 (BASE_CONF) makes it significant
BUSY = "--mb 320 --interleave 0-3 --no-thp --sweep --duty 30 --no-pin"
# the steady time after convergence, in which nothing may move
STEADY_SEC = 60
# numa02-nb's, after its threads are homed and the kernel has moved their
# slices (the kernel alone moves about 550 MB of it in that time)
NUMA02_SETTLE_SEC = 30
NUMA02_STEADY_SEC = 30

SCENARIOS = {}


def scenario(name, conf="", script="", timeout=420, cmdline=None, daemon_conf=""):
    def deco(check):
        SCENARIOS[name] = (conf, script, check, timeout, cmdline, daemon_conf)
        return check
    return deco


# ---- helpers for the checks -----------------------------------------------

def events(res):
    """From the monitor: {pid: scan it became significant}, {pid: scan the
    policy decided to place it}, {pid: scan its placement ended}, and the
    last Scans seen. The daemon publishes a scan's process changes before the
    Manager's Scans change, so an InterfacesAdded or a Decision counts in the
    scan whose Scans change follows it; a ProcessPlaced in the last scan
    before it."""
    import json
    scans, sig, decided, placed = 0, {}, {}, {}
    pending_sig, pending_dec = [], []
    for line in res.all("mon"):
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        member, path = msg.get("member"), msg.get("path", "")
        data = (msg.get("payload") or {}).get("data") or []
        if member == "PropertiesChanged" and path == "/org/numaplaced1" and data:
            if "Scans" in data[1]:
                scans = int(data[1]["Scans"]["data"])
                for pid in pending_sig:
                    sig.setdefault(pid, scans)
                for pid in pending_dec:
                    decided.setdefault(pid, scans)
                pending_sig, pending_dec = [], []
        elif member == "InterfacesAdded" and data and "/process/" in data[0]:
            pid = int(data[0].rsplit("/", 1)[1])
            pending_sig.append(pid)
            props = data[1].get("org.numaplaced1.Process", {})
            if ": place on" in props.get("Decision", {}).get("data", ""):
                pending_dec.append(pid)
        elif member == "PropertiesChanged" and "/process/" in path and data:
            if ": place on" in data[1].get("Decision", {}).get("data", ""):
                pending_dec.append(int(path.rsplit("/", 1)[1]))
        elif member == "ProcessPlaced" and data:
            placed.setdefault(int(data[0]), scans)
    return sig, decided, placed, scans


def final_states(res):
    out = []
    for x in (res.get("states") or "").split():
        st, _, tg = x.partition("/")
        out.append((st, [int(v) for v in tg.split(",")[1:]] if tg else []))
    return out


def check_placed_alone(t, res, names, tag, want="placed"):
    """Each process (pids in results pid.NAME) on one node of its own;
    placed (ProcessPlaced) within 3 scans of becoming significant."""
    sig, decided, placed, _ = events(res)
    states = final_states(res)
    targets = []
    for i, name in enumerate(names):
        pid = res.int(f"pid.{name}")
        st, nodes = states[i] if i < len(states) else ("?", [])
        t.eq(st, want, f"{tag}: {name} ({pid}) is {want}")
        t.eq(len(nodes), 1, f"{tag}: {name} on one node ({nodes})")
        targets.append(nodes[0] if nodes else None)
        if want == "placed":
            s0, s1, s2 = sig.get(pid), decided.get(pid), placed.get(pid)
            t.check(s0 is not None and s1 is not None and s1 - s0 <= 3,
                    f"{tag}: {name} placed within 3 scans of becoming significant (significant in scan {s0}, "
                    f"placement decided and queued in scan {s1})")
            t.check(s2 is not None, f"{tag}: {name}'s move ended (ProcessPlaced in scan {s2})")
            print(f"  ..   {tag}: {name}: significant in scan {s0}, placement decided in scan {s1}, "
                  f"its move ended in scan {s2}")
    t.check(len(set(targets)) == len(targets), f"{tag}: each on its own node ({targets})")
    return targets


def local_share(kb, node):
    total = sum(kb.values())
    return kb.get(node, 0) / total if total else 0.0


# ---- 1 + 4: converge, then steady -----------------------------------------

@scenario("converge", script=r"""
# each one's pages as allocated, read before the next starts: the daemon
# sees a within a second of its allocation and may be moving it while b
# allocates
a=$(np_start_workload /tmp/a """ + BUSY + r""" --reset-policy) || exit 1
kb a.before $a
b=$(np_start_workload /tmp/b """ + BUSY + r""" --reset-policy) || exit 1
kb b.before $b
np_result pid.a $a
np_result pid.b $b
np_wait_for 240 all_placed $a $b
states $a $b
kb a.after $a
kb b.after $b
np_result converged.calls $(mprop MigrationCalls)
np_result converged.scans $(mprop Scans)
# steady load: nothing may move
sleep """ + str(STEADY_SEC) + r"""
np_result steady.calls $(mprop MigrationCalls)
np_result steady.placed $(grep -c 'Placed ' /tmp/numaplaced.log)
np_result steady.scans $(mprop Scans)
kb a.steady $a
kb b.steady $b
""", timeout=1200)
def check_converge(t, res):
    targets = check_placed_alone(t, res, ["a", "b"], "converge")
    minimum = 0
    for name, node in zip(("a", "b"), targets):
        if node is None:
            continue
        share = local_share(res.node_kb(f"{name}.after"), node)
        t.check(share >= 0.95, f"converge: {name}: {share:.1%} of its pages on node {node}")
        before = res.node_kb(f"{name}.before")
        minimum += sum(kb for n, kb in before.items() if n != node)
        t.check(local_share(res.node_kb(f"{name}.steady"), node) >= 0.95, f"steady: {name} still on node {node}")
    moved_kb = (res.int("pgmigrate") or 0) * 4
    t.check(minimum > 0 and moved_kb <= minimum * 1.05,
            f"converge: bytes moved {moved_kb} kB within 5% of the minimum {minimum} kB "
            f"(ratio {moved_kb / minimum if minimum else float('nan'):.3f})")
    t.eq(res.get("steady.calls"), res.get("converged.calls"), f"steady {STEADY_SEC} s: no migration call")
    t.eq(res.get("steady.placed"), "2", f"steady {STEADY_SEC} s: no placement after the first two")
    scans = (res.int("steady.scans") or 0) - (res.int("converged.scans") or 0)
    t.check(scans >= 3, f"steady: the daemon kept scanning ({scans} scans in {STEADY_SEC} s)")
    print(f"  ..   converge: {moved_kb} kB moved, minimum {minimum} kB; {scans} scans in the steady {STEADY_SEC} s")


# ---- 2: interleave policy left set ------------------------------------------

@scenario("interleave", conf="KeepInterleaved=yes\n", script=r"""
a=$(np_start_workload /tmp/a """ + BUSY + r""") || exit 1
b=$(np_start_workload /tmp/b """ + BUSY + r""") || exit 1
np_result pid.a $a
np_result pid.b $b
np_result policy.a "$(grep -c interleave /proc/$a/numa_maps)"
# until both are significant and four more scans went by: left alone
np_wait_for 240 sh -c "busctl get-property org.numaplaced1 /org/numaplaced1/process/$b $P State >/dev/null 2>&1"
s0=$(mprop Scans)
np_wait_for 240 sh -c "[ \$(busctl get-property $M Scans | cut -d' ' -f2) -ge $((s0 + 4)) ]"
np_result keep.state.a "$(pprop $a State)"
np_result keep.decision.a "$(pprop $a Decision)"
np_result keep.calls $(mprop MigrationCalls)
sed -i 's/^KeepInterleaved=yes/KeepInterleaved=no/' /etc/np.conf
np_capture reload busctl call $M Reload
np_wait_for 240 all_placed $a $b
states $a $b
kb a.after $a
kb b.after $b
""", timeout=900)
def check_interleave(t, res):
    t.check(int(res.get("policy.a") or 0) > 0, "the workload's memory has an interleave policy in numa_maps")
    t.eq(res.get("keep.state.a"), "observed", "KeepInterleaved=yes: left alone")
    t.check("KeepInterleaved" in (res.get("keep.decision.a") or ""),
            f"the Decision says why ({res.get('keep.decision.a')!r})")
    t.eq(res.get("keep.calls"), "0", "KeepInterleaved=yes: no migration")
    t.eq(res.get("reload.rc"), "0", "Reload() with KeepInterleaved=no")
    states = final_states(res)
    targets = []
    for i, name in enumerate(("a", "b")):
        st, nodes = states[i] if i < len(states) else ("?", [])
        t.eq((st, len(nodes)), ("placed", 1), f"interleave: {name} placed on one node ({nodes})")
        if nodes:
            targets.append(nodes[0])
            share = local_share(res.node_kb(f"{name}.after"), nodes[0])
            t.check(share >= 0.95, f"interleave: {name}: {share:.1%} on node {nodes[0]}")
    t.check(len(set(targets)) == 2, f"interleave: each on its own node ({targets})")


# ---- 1b: a process that starts on a quiet machine (issue 22) -----------------

@scenario("late", daemon_conf="LogLevel=debug\n", script=r"""
# quiet: the interval stretches to MaxScanIntervalSec (15 s)
np_wait_for 120 sh -c "[ \$(busctl get-property $M ScanIntervalUSec | cut -d' ' -f2) -ge 15000000 ]"
np_result interval.before $(mprop ScanIntervalUSec)
s0=$(mprop Scans)
l0=$(wc -l < /tmp/numaplaced.log)
t0=$(now)
a=$(np_start_workload /tmp/a """ + BUSY + r""" --reset-policy) || exit 1
np_result pid.a $a
kb a.before $a
np_wait_for 120 all_placed $a
np_result placed.after $(awk -v a="$(now)" -v b="$t0" 'BEGIN { print a - b }')
np_result placed.scans $(( $(mprop Scans) - s0 ))
states $a
kb a.after $a
# the peek that brought a scan forward, before the placement (of the log
# since the start)
np_result order "$(tail -n +$((l0 + 1)) /tmp/numaplaced.log | grep -n -e 'scanning now' -e "Placed $a " | head -n 2 | tr '\n' ' ')"
""", timeout=420)
def check_late(t, res):
    t.eq(res.get("interval.before"), "15000000", "the machine was quiet: the interval stretched to 15 s")
    st = final_states(res)
    state, nodes = st[0] if st else ("?", [])
    t.eq((state, len(nodes)), ("placed", 1), f"late: placed on one node ({nodes})")
    if nodes:
        share = local_share(res.node_kb("a.after"), nodes[0])
        t.check(share >= 0.95, f"late: {share:.1%} of its pages on node {nodes[0]}")
    order = res.get("order") or ""
    t.check(re.match(r"^[0-9]+:.*scanning now.* [0-9]+:.*Placed ", order) is not None,
            f"a peek brought a scan forward before the placement ({order!r})")
    print(f"  ..   late: placed {res.get('placed.after')} s after its start, {res.get('placed.scans')} scans later "
          f"(the stretched interval alone would have waited up to 15 s before the first)")


# ---- 2b: beside the kernel's NUMA balancing (issue 22) ---------------------------

NB_SCRIPT = r"""
# the node PID's busiest thread last ran on
run_node() {
	_c=$(for _t in /proc/$1/task/*; do awk '{ print $14 + $15, $39 }' $_t/stat; done | sort -n | tail -n 1 | cut -d' ' -f2)
	_n=$(ls -d /sys/devices/system/cpu/cpu$_c/node* | head -n 1)
	echo "${_n##*node}"
}
# PID has at least 95% of its pages on the node its busiest thread runs on
is_local() {
	np_numa_kb $1 | awk -v n="$(run_node $1)" '{ for (i = 1; i <= NF; i++) { split($i, a, "="); t += a[2]; if (a[1] == n) l = a[2] } }
		END { exit !(t > 0 && l / t >= 0.95) }'
}
# every 2 s (numa_maps of two 320 MB processes read ten times a second would
# load the CPUs the policy weighs)
both_local() { is_local $1 && is_local $2 && return 0; sleep 1.9; return 1; }
np_result nb $(cat /proc/sys/kernel/numa_balancing)
p0=$(np_vmstat numa_pte_updates)
f0=$(np_vmstat numa_hint_faults)
t0=$(now)
a=$(np_start_workload /tmp/a """ + BUSY + r""" @RESET@) || exit 1
b=$(np_start_workload /tmp/b """ + BUSY + r""" @RESET@) || exit 1
np_result pid.a $a
np_result pid.b $b
kb a.before $a
kb b.before $b
np_wait_for 240 both_local $a $b
np_result local.after $(awk -v a="$(now)" -v b="$t0" 'BEGIN { print a - b }')
np_result converged.scans $(mprop Scans)
np_result converged.pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
# what the kernel's balancing moved of each workload (its threads' counters)
np_result knuma.a $(cat /proc/$a/task/*/sched 2>/dev/null | awk '/numa_pages_migrated/ { s += $NF } END { print s + 0 }')
np_result knuma.b $(cat /proc/$b/task/*/sched 2>/dev/null | awk '/numa_pages_migrated/ { s += $NF } END { print s + 0 }')
np_result converged.migrated $(mprop MigratedBytes)
states $a $b
np_result node.a $(run_node $a)
np_result node.b $(run_node $b)
kb a.after $a
kb b.after $b
np_result decision.a "$(pprop $a Decision)"
np_result decision.b "$(pprop $b Decision)"
# steady
sleep @STEADY@
np_result decision.a.steady "$(pprop $a Decision)"
np_result decision.b.steady "$(pprop $b Decision)"
np_result node.a.steady $(run_node $a)
np_result node.b.steady $(run_node $b)
kb a.steady $a
kb b.steady $b
np_result steady.pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
np_result pte $(( $(np_vmstat numa_pte_updates) - p0 ))
np_result hint $(( $(np_vmstat numa_hint_faults) - f0 ))
np_result daemon.cpu $(awk '{ print $14 + $15 }' /proc/$NP_DAEMON_PID/stat)
"""


def check_nb(t, res, tag, who):
    """Both local at the end and after the steady time, bytes within 5% of
    the minimum (three quarters of each process: its memory was interleaved
    over four nodes), and each Decision names the placer (who: "kernel" or
    "numaplaced")."""
    t.eq(res.get("nb"), "1", f"{tag}: the kernel's NUMA balancing is on")
    t.check(res.get("local.after") is not None, f"{tag}: both local within 240 s ({res.get('local.after')} s)")
    minimum = 0
    for name in ("a", "b"):
        node = res.int(f"node.{name}")
        after = res.node_kb(f"{name}.after")
        share = local_share(after, node) if node is not None else 0.0
        t.check(share >= 0.95, f"{tag}: {name}: {share:.1%} of its pages on node {node}, where it runs")
        t.eq(res.int(f"node.{name}.steady"), node, f"{tag}: {name} still runs on node {node} after {STEADY_SEC} s")
        share = local_share(res.node_kb(f"{name}.steady"), node) if node is not None else 0.0
        t.check(share >= 0.95, f"{tag}: {name}: {share:.1%} on node {node} after {STEADY_SEC} s")
        minimum += sum(res.node_kb(f"{name}.before").values()) * 3 // 4
        decision = (res.get(f"decision.{name}.steady") or "").replace("\\'", "'")
        pid = res.int(f"pid.{name}")
        placing = [x for x in res.all("numaplaced.log") if f"Placing {pid} " in x]
        if who == "kernel":
            # the kernel made it local; or the daemon finished it, saying
            # what the kernel was doing
            t.check("the kernel's NUMA balancing keeps it local" in decision
                    or (decision.startswith("placed on") and placing
                        and all("the kernel's NUMA balancing " in x for x in placing)),
                    f"{tag}: {name}'s Decision says who made it local ({decision!r}; {placing})")
        else:
            t.check(placing and all("the kernel's NUMA balancing does not move interleaved memory" in x
                                    for x in placing),
                    f"{tag}: {name}'s placement says the kernel does not move it ({placing})")
            t.check(decision.startswith("placed on"), f"{tag}: {name}'s Decision: placed ({decision!r})")
    # every page moved until both were local, by the daemon and the kernel,
    # of any process (vmstat's pgmigrate_success: an upper bound of the
    # workloads' own). Printed besides: the kernel's moves of each workload
    # (its threads' numa_pages_migrated) and the daemon's MigratedBytes,
    # which overlap when the kernel moves pages of a process the daemon is
    # moving (its numa_maps before and after count both)
    knuma = (res.int("knuma.a") or 0) + (res.int("knuma.b") or 0)
    global_kb = (res.int("converged.pgmigrate") or 0) * 4
    moved_kb = global_kb
    steady_kb = (res.int("steady.pgmigrate") or 0) * 4
    # Within 5% when the daemon alone moves (interleave-nb: 0.996). Where
    # the kernel moves pages too, it starts a second after each process
    # starts; the daemon reads a candidate's numa_maps until its locality
    # settles, decides at first sight one the kernel has begun to move, and
    # confines a process whose move waits behind another, so the kernel's
    # later moves go where the process stays. What the kernel moved before
    # the daemon's first sight, towards a node the process then does not
    # get (a node too full for it), stays: measured 0.995 to 1.020 in 7 of
    # 9 runs, 1.062 and 1.137 in the others (before these changes 1.21,
    # 1.27 and 1.765; the kernel alone 1.050 and 1.191). Later runs, and
    # two full CI runs, gave 1.128, 1.053, 0.995, 1.163 and 1.172: in the
    # last two the daemon decided both at first sight, in the first scan
    # after they started (5 s), when the kernel had already moved 131 and
    # 194 MiB of one of them to two neighbouring nodes its thread had run
    # on; a fight (pages moved back and forth) would be 1.5 times the
    # minimum and more. With a peek at the nodes' memory every second (a
    # process is first seen about a second after it allocated): 0.996 in
    # six runs of six, one of them in a full clean-clone run. A CI run gave
    # 1.325: a was decided at its follow-up scan, when b had just started
    # and was not yet significant, so b's pages on a's node counted as
    # staying there; a got two nodes, and the kernel then moved a's pages
    # between them. A round that would spread a process for want of memory
    # such newcomers hold now waits for their follow-up (np-decide.h).
    bound = 1.05
    t.check(minimum > 0 and moved_kb <= minimum * bound,
            f"{tag}: pages moved by the daemon and the kernel {moved_kb} kB within {bound - 1:.0%} of the "
            f"minimum {minimum} kB (ratio {moved_kb / minimum if minimum else float('nan'):.3f})")
    t.check(steady_kb <= global_kb + minimum * 0.05,
            f"{tag}: steady {STEADY_SEC} s: {steady_kb - global_kb} kB moved after both were local")
    sig, decided, placed, _ = events(res)
    for name in ("a", "b"):
        pid = res.int(f"pid.{name}")
        print(f"  ..   {tag}: {name}: significant in scan {sig.get(pid)}, placement decided in scan "
              f"{decided.get(pid)}, its move ended in scan {placed.get(pid)}; final Decision "
              f"{res.get('decision.' + name + '.steady')!r}")
    print(f"  ..   {tag}: both local {res.get('local.after')} s after the start; {moved_kb} kB moved (minimum "
          f"{minimum} kB; the kernel's numa_pages_migrated of the two {knuma * 4} kB, the daemon's MigratedBytes "
          f"{res.get('converged.migrated')}), {steady_kb - global_kb} kB in the steady {STEADY_SEC} s; numa_pte_updates "
          f"{res.get('pte')}, numa_hint_faults {res.get('hint')}; daemon CPU ticks {res.get('daemon.cpu')}; "
          f"states {res.get('states')}")


@scenario("converge-nb", script=NB_SCRIPT.replace("@RESET@", "--reset-policy").replace("@STEADY@", str(STEADY_SEC)),
          timeout=900,
          cmdline=["numa_balancing=enable"])
def check_converge_nb(t, res):
    check_nb(t, res, "converge-nb", "kernel")


@scenario("interleave-nb", script=NB_SCRIPT.replace("@RESET@", "").replace("@STEADY@", str(STEADY_SEC)),
          timeout=900,
          cmdline=["numa_balancing=enable"])
def check_interleave_nb(t, res):
    check_nb(t, res, "interleave-nb", "numaplaced")
    for i, (st, nodes) in enumerate(final_states(res)):
        t.eq((st, len(nodes)), ("placed", 1), f"interleave-nb: {'ab'[i]} placed by the daemon on one node")


# numa02's shape (autonuma-benchmark): one process, four busy threads each on
# its own slice of 320 MB first touched on node 0. On four one-CPU nodes the
# scheduler keeps moving the threads and the kernel's balancing their pages
# after them (about 1.1 GB a minute here, tests/bench/README.md): the daemon
# keeps each busy thread on a node of its own, and the kernel moves each
# slice to its thread's node once.
NUMA02_SCRIPT = r"""
np_result nb $(cat /proc/sys/kernel/numa_balancing)
slow_logged() { logged "$@" && return 0; sleep 0.9; return 1; }
affinities() { for _t in /proc/$a/task/*; do np_result $1 ${_t##*/} $(awk '/^Cpus_allowed_list/ { print $2 }' $_t/status); done; }
t0=$(now)
a=$(np_start_workload /tmp/a --mb 320 --threads 4 --bind 0 --reset-policy --no-thp --sweep --duty 60 --no-pin --report) || exit 1
np_result pid.a $a
np_wait_for 120 slow_logged "Keeping the busy threads of $a " 1 || { np_result homes.timeout 1; exit 0; }
np_result homes.after $(awk -v a="$(now)" -v b="$t0" 'BEGIN { print a - b }')
np_result homes.pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
# the kernel moves each slice to its thread's node
sleep @SETTLE@
g0=$(np_vmstat pgmigrate_success)
u0=$(np_vmstat numa_pte_updates)
f0=$(np_vmstat numa_hint_faults)
sleep @STEADY@
np_result steady.pgmigrate $(( $(np_vmstat pgmigrate_success) - g0 ))
np_result steady.pte $(( $(np_vmstat numa_pte_updates) - u0 ))
np_result steady.hint $(( $(np_vmstat numa_hint_faults) - f0 ))
np_result all.pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
kill -USR1 $a
np_wait_for 10 sh -c "grep -q SLICES /tmp/a.out"
np_result slices "$(grep SLICES /tmp/a.out | tail -n 1)"
affinities task
# each thread's NUMA hinting faults by the node of the page (the kernel's
# own view of where the memory it works on is)
for _t in /proc/$a/task/*; do np_result faults ${_t##*/} $(sed -n 's/^numa_faults node=\([0-9]*\) task_private=\([0-9]*\) .*/\1:\2/p' $_t/sched); done
np_result a.cgroup $(cgroup_of $a)
np_result all.cpus $(cat /sys/devices/system/cpu/online)
for n in /sys/devices/system/node/node[0-9]*; do np_result node.cpus ${n##*node} $(cat $n/cpulist); done
np_result decision "$(pprop $a Decision)"
np_result state "$(pprop $a State) $(pprop $a TargetNodes)"
np_result daemon.migrated $(mprop MigratedBytes)
np_result homes.lines $(grep -c "Keeping the busy threads of $a " /tmp/numaplaced.log)
# a stop puts every thread back
np_stop_numaplaced
affinities released
"""


@scenario("numa02-nb", script=NUMA02_SCRIPT.replace("@STEADY@", str(NUMA02_STEADY_SEC)).replace(
          "@SETTLE@", str(NUMA02_SETTLE_SEC)), timeout=600, cmdline=["numa_balancing=enable"])
def check_numa02_nb(t, res):
    t.eq(res.get("nb"), "1", "numa02-nb: the kernel's NUMA balancing is on")
    a = res.get("pid.a")
    log = res.all("numaplaced.log")
    homes = [x for x in log if f"Keeping the busy threads of {a} " in x]
    t.check(res.get("homes.timeout") is None,
            f"numa02-nb: the daemon kept its busy threads on their own nodes within 120 s ({homes})")
    for line in homes:
        print(f"  ..   {line}")
    m = re.search(r"each on its own node: ([0-9 ,on]+);", homes[-1] if homes else "")
    # tid -> node
    pins = dict(x.split(" on ") for x in m.group(1).split(", ")) if m else {}
    t.eq(len(pins), 4, f"numa02-nb: four busy threads homed ({pins})")
    t.eq(len(set(pins.values())), 4, "numa02-nb: each on a node of its own")
    node_cpus = dict(x.split(None, 1) for x in res.all("node.cpus"))
    tasks = dict(x.split(None, 1) for x in res.all("task"))
    for tid, node in pins.items():
        t.eq(tasks.get(tid), node_cpus.get(node), f"numa02-nb: thread {tid} may run on node {node}'s CPUs only")
    others = {tid: c for tid, c in tasks.items() if tid not in pins}
    t.check(others and all(c == res.get("all.cpus") for c in others.values()),
            f"numa02-nb: its other threads keep every CPU ({others})")
    # either left spread from the start (its homes are all the daemon holds
    # of it), or placed whole on too few nodes before its threads' faults
    # were counted, and that placement widened to the nodes they need
    placed = [x for x in log if f"Placed {a} " in x]
    widened = [x for x in log if f"Widening the placement of {a} " in x]
    if placed:
        t.check(widened and "0 bytes moved" in placed[-1],
                f"numa02-nb: placed first, then widened for its threads with no page moved ({placed}, {widened})")
        target = [int(x) for x in (res.get("state") or "").split()[2:]]
        t.eq(res.get("a.cgroup"), "/numaplaced/nodes-" + npvm.nodelist(target).replace(",", "_"),
             "numa02-nb: in the daemon's cpuset of its nodes")
    else:
        t.eq(res.get("a.cgroup"), "/", "numa02-nb: in no cpuset of the daemon's")
        t.eq(res.get("daemon.migrated"), "0", "numa02-nb: the daemon moved no page itself")
    # where each homed thread's pages are: its private hinting faults by
    # node, the kernel's own view (np-workload's SLICES is printed: it
    # counts the pages move_pages(2) tells the node of, and after the
    # kernel's scan of a slice it tells few of them)
    faults = {x.split()[0]: dict(f.split(":") for f in x.split()[1:]) for x in res.all("faults")}
    for tid, node in pins.items():
        f = {n: int(c) for n, c in faults.get(tid, {}).items()}
        share = f.get(node, 0) / max(1, sum(f.values()))
        t.check(sum(f.values()) > 0 and share >= 0.95,
                f"numa02-nb: {share:.1%} of thread {tid}'s private faults on pages of its node {node} ({f})")
    steady = res.int("steady.pgmigrate")
    t.check(steady is not None and steady <= 320 * 256 // 100,
            f"numa02-nb: {steady} pages moved in the steady {NUMA02_STEADY_SEC} s (at most 1% of its memory)")
    t.eq(res.get("homes.lines"), "1", "numa02-nb: the homes were not changed")
    decision = (res.get("decision") or "").replace("\\'", "'")
    t.check("each is kept on its own node" in decision, f"numa02-nb: Decision {decision!r}")
    want_nodes = sorted(pins.values(), key=int)
    t.eq(res.get("state"), f"placed {len(want_nodes)} {' '.join(want_nodes)}",
         "numa02-nb: State placed, TargetNodes its threads' nodes")
    released = dict(x.split(None, 1) for x in res.all("released"))
    t.check(released and all(c == res.get("all.cpus") for c in released.values()),
            f"numa02-nb: after the stop every thread has every CPU again ({released})")
    t.check(not any(f"Placing {a} " in x and "without settling" in x for x in log),
            "numa02-nb: its memory was not held for the kernel's moving it back and forth")
    for line in placed + widened:
        print(f"  ..   {line}")
    print(f"  ..   numa02-nb: homes {res.get('homes.after')} s after its start, when the kernel had moved "
          f"{res.int('homes.pgmigrate') or 0} pages ({(res.int('homes.pgmigrate') or 0) / (320 * 256):.2f} times its "
          f"memory); {res.int('all.pgmigrate')} pages moved in all; steady {NUMA02_STEADY_SEC} s: "
          f"{steady} pages moved, numa_pte_updates {res.get('steady.pte')}, numa_hint_faults "
          f"{res.get('steady.hint')}; {res.get('slices')}")


# ---- 3: three processes -------------------------------------------------------

@scenario("three", script=r"""
for x in a b c; do
	p=$(np_start_workload /tmp/$x --mb 300 --interleave 0-3 --no-thp --sweep --duty 30 --no-pin --reset-policy) || exit 1
	np_result pid.$x $p
	eval $x=$p
done
np_wait_for 300 all_placed $a $b $c
states $a $b $c
""", timeout=900)
def check_three(t, res):
    check_placed_alone(t, res, ["a", "b", "c"], "three")
    for line in res.all("meminfo"):
        n, total, used = (int(x) for x in line.split())
        t.check(used <= total * 0.85, f"three: node {n} at {used / total:.0%} of its memory (<= 85%)")


# ---- 5: two threads, memory on two nodes ----------------------------------------

@scenario("threads", script=r"""
a=$(np_start_workload /tmp/a --mb 320 --threads 2 --thread-nodes 1,2 --worker-touch --unpin --no-thp --sweep --duty 30 --busy-threads 1) || exit 1
np_result pid.a $a
kb a.before $a
np_wait_for 240 logged 'Placed ' 1
states $a
kb a.after $a
""", timeout=900)
def check_threads(t, res):
    before = res.node_kb("a.before")
    t.check(before.get(1, 0) > 100 * 1024 and before.get(2, 0) > 100 * 1024,
            f"the threads' memory is on nodes 1 and 2 ({before})")
    targets = check_placed_alone(t, res, ["a"], "threads")
    if targets[0] is not None:
        t.check(targets[0] in (1, 2), f"placed where half of its memory already is (node {targets[0]})")
        share = local_share(res.node_kb("a.after"), targets[0])
        t.check(share >= 0.95, f"threads: {share:.1%} on node {targets[0]}")


# ---- 6: advise ---------------------------------------------------------------------

@scenario("advise", conf="", script=r"""
sed -i 's/^Mode=enforce/Mode=advise/' /etc/np.conf
np_capture reload busctl call $M Reload
a=$(np_start_workload /tmp/a """ + BUSY + r""" --reset-policy) || exit 1
b=$(np_start_workload /tmp/b """ + BUSY + r""" --reset-policy) || exit 1
np_result pid.a $a
np_result pid.b $b
kb a.before $a
np_wait_for 240 logged 'Advice for' 2
# three more scans: the advice is not repeated, nothing moves
s0=$(mprop Scans)
np_wait_for 240 sh -c "[ \$(busctl get-property $M Scans | cut -d' ' -f2) -ge $((s0 + 3)) ]"
states $a $b
kb a.after $a
np_result advice.lines $(grep -c 'Advice for' /tmp/numaplaced.log)
np_result cgroup.a $(cgroup_of $a)
""", timeout=900)
def check_advise(t, res):
    check_placed_alone(t, res, ["a", "b"], "advise", want="advised")
    t.eq(res.get("calls"), "0", "advise: MigrationCalls stays 0")
    t.eq(res.get("pgmigrate"), "0", "advise: no page moved (pgmigrate_success)")
    t.eq(res.node_kb("a.after"), res.node_kb("a.before"), "advise: the process's pages are where they were")
    t.eq(res.get("cgroup.a"), "/", "advise: the process is in its own cpuset still")
    t.eq(res.get("advice.lines"), "2", "advise: one log line per advice, not one per scan")


# ---- 7: foreign, and do no harm -------------------------------------------------------

# the pinned process shares node 1's one CPU with a busy thread of the
# other: it may get less than the default MinProcessCPU (BASE_CONF sets 0.2)
@scenario("foreign", script=r"""
numactl --cpunodebind=1 --membind=1 np-workload --mb 320 --no-thp --sweep --duty 50 --ready-file /tmp/f > /tmp/f.out 2>&1 &
f=$!
np_wait_file /tmp/f 120 || exit 1
w=$(np_start_workload /tmp/w --mb 320 --interleave 0-3 --no-thp --sweep --no-pin --reset-policy --threads 4) || exit 1
np_result pid.f $f
np_result pid.w $w
anon_kb f.before $f
# both significant, then six more scans
np_wait_for 240 sh -c "busctl get-property org.numaplaced1 /org/numaplaced1/process/$w $P State >/dev/null 2>&1 && busctl get-property org.numaplaced1 /org/numaplaced1/process/$f $P State >/dev/null 2>&1"
s0=$(mprop Scans)
np_wait_for 300 sh -c "[ \$(busctl get-property $M Scans | cut -d' ' -f2) -ge $((s0 + 6)) ]"
states $f $w
anon_kb f.after $f
np_result f.cgroup $(cgroup_of $f)
np_result w.cgroup $(cgroup_of $w)
np_result f.decision "$(pprop $f Decision)"
np_result w.decision "$(pprop $w Decision)"
np_result w.cpu "$(pprop $w CPUUsage)"
""", timeout=900)
def check_foreign(t, res):
    states = final_states(res)
    t.check(len(states) == 2 and states[0][0] == "foreign", f"the numactl-pinned process is foreign ({states[:1]})")
    t.check("narrowed by someone else" in (res.get("f.decision") or ""),
            f"its Decision says why ({res.get('f.decision')!r})")
    t.eq(res.node_kb("f.after"), res.node_kb("f.before"), "foreign: its own (anonymous) pages did not move")
    t.check(res.node_kb("f.before").get(1, 0) >= 300 << 10,
            f"foreign: its 320 MB are counted, on node 1 ({res.node_kb('f.before')})")
    t.eq(res.get("f.cgroup"), "/", "foreign: not put in a cpuset")
    # Four busy threads with a busy pinned thread on node 1's CPU use about
    # 3-3.5 CPUs, which is at the edge of "needs every node" (more than the
    # other three nodes hold): left spread, or placed on as many nodes as
    # the CPUs it was measured to use (3.06 CPUs left it spread in one CI
    # run, 2.999 placed it on three nodes in another). Never fewer nodes
    # than that, never one node.
    st, nodes = states[1] if len(states) == 2 else ("?", [])
    try:
        cpu = float((res.get("w.cpu") or "").split()[-1])
    except (ValueError, IndexError):
        cpu = 4.0
    need = max(2, math.ceil(cpu - 0.05))
    t.check(st != "placed" or len(nodes) >= need,
            f"four busy threads: not confined to fewer nodes than they need ({st} {nodes}, need {need}, "
            f"CPUUsage {res.get('w.cpu')}, {res.get('w.decision')!r})")
    cg = res.get("w.cgroup") or "?"
    m = re.fullmatch(r"/numaplaced/nodes-([0-9_-]+)", cg)
    in_cpuset = None
    if m:  # "0_2-3" is the node list "0,2-3"
        in_cpuset = 0
        for part in m.group(1).split("_"):
            lo, _, hi = part.partition("-")
            in_cpuset += int(hi or lo) - int(lo) + 1
    t.check(cg == "/" or (in_cpuset is not None and in_cpuset >= need),
            f"four busy threads: left in their cpuset, or in one of at least {need} nodes ({cg})")
    print(f"  ..   four busy threads: CPUUsage {res.get('w.cpu')}, {res.get('w.decision')!r}")


# ---- 8: the bus answers while the policy moves at MaxRate ---------------------------

@scenario("rate", script=r"""
printf '[Migration]\nMaxRate=16M\n' >> /etc/np.conf
np_capture reload busctl call $M Reload
a=$(np_start_workload /tmp/a """ + BUSY + r""" --reset-policy) || exit 1
b=$(np_start_workload /tmp/b """ + BUSY + r""" --reset-policy) || exit 1
np_result pid.a $a
np_result pid.b $b
# wait for the first move to start (logged), then ask while it runs
np_wait_for 240 logged 'Placing ' 1
np_result during.moves "$(busctl call $M Dump | grep -o 'Moves: pid [0-9]* moving for [0-9.]* s, [0-9]* queued')"
np_capture during.advise busctl call $M Advise dt 1 268435456
np_result during.scans "$(mprop Scans)"
np_result during.placed $(grep -c 'Placed ' /tmp/numaplaced.log)
np_wait_for 300 all_placed $a $b
states $a $b
""", timeout=900)
def check_rate(t, res):
    moves = res.get("during.moves") or ""
    t.check(moves.startswith("Moves: pid"), f"a move was running ({moves!r})")
    adv = res.get("during.advise") or ""
    # how many nodes it names depends on the free memory of the moment (the
    # moving processes hold some of it): that it answers is the point
    t.check(re.match(r"au [1-9][0-9]* [0-9]", adv) is not None and res.get("during.advise.rc") == "0",
            f"Advise() answered during the move ({adv!r})")
    t.check(res.int("during.scans") is not None, "a property read answered during the move")
    t.eq(res.get("during.placed"), "0", "the reads answered before the first placement ended")
    check_placed_alone(t, res, ["a", "b"], "rate")


# ---- hugetlb pages: the pools (issue 24) ------------------------------------

HUGE_POOL = "/sys/devices/system/node/node$n/hugepages/hugepages-2048kB"


def hugetlb_script(node0, setup, alloc, args):
    """The hugetlb scenarios' script: `node0` 2 MB pages on node 0, 170
    (340 MB) on nodes 1-3, so that the workload's 160 pages fit any of 1-3
    and never node 0; then `setup`, and np-workload ARGS under numactl ALLOC."""
    return r"""
for n in 0 1 2 3; do
	if [ $n = 0 ]; then want=""" + str(node0) + r"""; else want=170; fi
	echo $want > """ + HUGE_POOL + r"""/nr_hugepages
done
np_result pools $(for n in 0 1 2 3; do cat """ + HUGE_POOL + r"""/nr_hugepages; done)
""" + setup + r"""
rm -f /tmp/h
numactl """ + alloc + r""" np-workload --ready-file /tmp/h --mb 320 """ + args + r""" --sweep --duty 30 --no-pin \
	> /tmp/h.out 2>&1 &
h=$!
np_wait_file /tmp/h 60 || { cat /tmp/h.out; exit 1; }
np_result pid.h $h
np_result maps "$(grep ' huge ' /proc/$h/numa_maps | head -n 1)"
np_result rss.kb $(awk '/^VmRSS/ { print $2 }' /proc/$h/status)
np_result before.kb $(np_numa_kb $h ' huge ')
np_wait_for 240 all_placed $h
np_result after.kb $(np_numa_kb $h ' huge ')
np_result memory $(pprop $h MemoryBytes)
np_result decision "$(pprop $h Decision)"
np_result pools.free $(for n in 0 1 2 3; do cat """ + HUGE_POOL + r"""/free_hugepages; done)
states $h
"""


# interleaved over the four nodes (40 pages each); node 0's pool (64 pages)
# cannot hold the 160
@scenario("hugetlb", script=hugetlb_script(64, "", "--interleave=all", "--hugetlb"), timeout=600)
def check_hugetlb_anon(t, res):
    before = res.node_kb("before.kb")
    t.check(sum(1 for v in before.values() if v) >= 3, f"allocated interleaved ({before})")
    check_hugetlb(t, res, "64 170 170 170", "file=/anon_hugepage")


# a guest's RAM: a file on hugetlbfs, mapped shared, started preferring node
# 0, whose pool (100 pages) it fills; the other 60 pages come from node 1
# (the nearest). Node 0 holds most of its pages, but its pool cannot take
# the rest: the policy must not choose it (by pages already there it
# would), and picks node 1, which holds the most of the others
@scenario("hugetlb-file", script=hugetlb_script(100, "mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages",
                                                "--preferred=0", "--hugetlb-file /dev/hugepages/guest-ram"),
          timeout=600)
def check_hugetlb_file(t, res):
    before = res.node_kb("before.kb")
    t.eq(before, {0: 200 * 1024, 1: 120 * 1024, 2: 0, 3: 0}, "node 0's pool filled, the rest on node 1")
    target = check_hugetlb(t, res, "100 170 170 170", "file=/dev/hugepages/guest-ram")
    t.eq(target, 1, "placed on node 1: the most of its pages among the nodes whose pools hold it")


def check_hugetlb(t, res, pools, mapping):
    t.eq(res.get("pools"), pools, "the pools were reserved")
    t.check(mapping in (res.get("maps") or ""), f"numa_maps shows {mapping} ({res.get('maps')!r})")
    before = res.node_kb("before.kb")
    t.eq(sum(before.values()), 320 * 1024, "320 MB in huge pages")
    t.check(res.int("rss.kb") < 64 * 1024, f"its huge pages are not resident memory (VmRSS {res.get('rss.kb')} kB)")
    t.check(int((res.get("memory") or "0").split()[-1]) >= 320 << 20,
            f"MemoryBytes counts its huge pages ({res.get('memory')})")
    targets = check_placed_alone(t, res, ["h"], "hugetlb")
    target = targets[0] if targets else None
    t.check(target not in (None, 0), f"placed on a node whose pool holds it, not node 0 ({target})")
    after = res.node_kb("after.kb")
    if target is not None:
        share = local_share(after, target)
        t.check(share >= 0.95, f">= 95% of its huge pages on node {target} ({share:.1%}: {after})")
    pid = res.int("pid.h")
    named = []
    for line in res.all("mon") + res.all("numaplaced.log"):
        if str(pid) not in line:
            continue
        for m in re.finditer(r"(?:place on|on nodes) ([0-9][0-9,-]*)", line):
            named.append(m.group(1))
    t.check(named and all("0" not in re.split(r"[,-]", x) for x in named),
            f"no Decision or placement names node 0 ({sorted(set(named))})")
    print(f"  ..   decision: {res.get('decision')}; free pages after: {res.get('pools.free')}")
    return target


def main(name):
    conf, script, check, timeout, cmdline, daemon_conf = SCENARIOS[name]
    vm = npvm.VM(f"policy-{name}", TOPO, cgroup="v1", cmdline=cmdline)
    vm.add_commands("numactl")
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", BASE_CONF.replace("[Placement]\n", daemon_conf + "[Placement]\n") + conf)
    res = vm.run(COMMON + script + FINISH, timeout=timeout)
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()
    check(t, res)
    placed = [line for line in res.all("numaplaced.log") if re.search(r"Placed |Advice for|Not placing", line)]
    for line in placed:
        print(f"  ..   {line}")
    return t.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        sys.exit("usage: test_policy.py " + "|".join(SCENARIOS))
    npvm.run_test(f"policy-{sys.argv[1]}", lambda: main(sys.argv[1]))
