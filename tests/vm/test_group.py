#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Placement groups by shared memory (issue 23) in a 4-node VM (4 x 768 MB,
two CPUs per node), numaplaced at its defaults but for MinProcessCPU=0.08
(the workers are light: four of them together must fit one node).

  shared-v1 / shared-v2  a parent maps 400 MB of shared anonymous memory
              (MAP_SHARED|MAP_ANONYMOUS) interleaved over 0-3, touches it
              and forks four workers that each read all of it and then
              sweep it (np-workload --share-mb 400 --share-children 4
              --share-busy --sleep); each worker has little memory of its
              own. Checked: the four workers are one group (their Decisions
              begin "with the 4 processes of its group shm:<inode>"), all on
              one node, at least 95% of the shared pages there (the parent's
              view of the mapping: every page), pages moved (pgmigrate_success)
              at most 1.05 times the minimum (the shared pages outside that
              node, plus the workers' and the parent's own pages outside it),
              with the default MoveSharedPages=no. On v1 the pages of the
              shared libraries (file mappings of /lib and /usr/lib that no
              one wrote to) are where they were; on v2, where the kernel
              migrates every page of a process whose cpuset.mems narrow,
              their moves are printed.

  numa01      autonuma-benchmark's numa01 shape at the defaults (cgroup v1):
              a process and its child, both busy (0.6 CPUs) on 320 MB of
              shared memory first touched on node 0, 16 MB private to the
              first (np-workload --share-mb 320 --share-busy --bind 0
              --reset-policy). The test puts the first's thread on node 0
              and the child's on node 2 (taskset, then every CPU again), as
              the scheduler does on an idle machine, and its own shell on
              node 3 (so that no load of its own makes the scheduler take
              the first off node 0). All of the pair's
              memory is on the nodes it runs on, but the child reaches it
              remotely, and node 0 holds both: checked, the pair is placed
              on node 0 as one group (the Placing lines say "its processes
              run on nodes 0,2, but fewer hold its demand", or the nodes
              the scheduler moved them to since), and pages
              moved at most the minimum (the pages outside node 0) plus
              1 MB. Before that rule the pair stayed apart.

  numa01-nb   the same, booted with numa_balancing=enable: the kernel's
              balancing does not scan shared anonymous memory without a
              policy of its own, so it never moves the pair's, and
              numaplaced takes the pair: the same checks (the pages moved
              by the kernel and the daemon together), and both Decisions
              say "the kernel's NUMA balancing cannot move most of its
              memory (...); its processes run on nodes".

  numa01-homes  numa01's pair on four one-CPU nodes (4 x 512 MB), the
              kernel's balancing on, numaplaced at its defaults. The pair
              needs two nodes' CPUs; left to the scheduler, the two were
              swapped between their nodes, and each swap restarted the
              kernel's scanning of the first's private pages and moved
              them again. Two phases, each with a new pair and numaplaced
              started anew: the test puts the first on node 1 and the
              child on node 3 for a second (apart from their memory on
              node 0), then a pair on nodes 0 and 2 (together), then every
              CPU again. numaplaced places the pair on node 0 and one more,
              or keeps it where it runs when one of them already runs on
              node 0 (the scheduler or the kernel's balancing brings it
              there within seconds, so either can come of either start;
              printed). Checked in each phase: the group's busy threads
              get a node each, node 0 and one more (each Decision lists
              "the 2 busy threads of its group ... each is kept on its own
              node"), both processes are in state placed, the threads'
              affinities are their nodes' CPUs, the homes are given once
              and kept for 20 s (placed: the pair waits for its threads'
              faults, and the Placing lines list the same homes, given
              when the moves end), pages moved in those 20 s at most the
              first's 16 MB once plus 1 MB (before the homes, the kernel
              may have moved its pages after it already, and a placement
              back); with numaplaced stopped, each thread has every CPU
              again.

  numa01-threads  the same rule for the threads of one process (numa01's
              THREAD_ALLOC variant; no group): one process, two busy
              threads (0.6 CPUs each) on 320 MB first touched on node 0
              (np-workload --threads 2 --bind 0 --reset-policy), the test
              puts one thread on node 0 and the other on node 2 as above:
              placed on node 0 alone, its Placing line saying "its threads
              run on nodes 0,2, but fewer hold its demand", pages moved at
              most the minimum plus 1 MB. Before that rule it stayed apart.

Run one: python3 tests/vm/test_group.py shared-v1
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=768, cpus=2)

CONF = """[Daemon]
Mode=enforce
[Placement]
MinProcessCPU=0.08
"""

# the library pages nobody wrote to: file mappings of libraries whose
# numa_maps line has no anon= (no private copy), which would come right
# after the path (the initramfs's files are on tmpfs: dirty=)
LIBS = r"file=[^ ]*/lib[^ ]* (dirty=[0-9]+ )?(mapped=[0-9]+ )?(mapmax=[0-9]+ )?(active=[0-9]+ )?N[0-9]"

SCRIPT = r"""
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
P=org.numaplaced1.Process
mprop() { busctl get-property $M "$1" 2>/dev/null | cut -d' ' -f2-; }
pprop() { busctl get-property org.numaplaced1 /org/numaplaced1/process/$1 $P "$2" 2>/dev/null | cut -d' ' -f2- | tr -d '"'; }
placed_all() { for _p in "$@"; do grep -q "Placed $_p " /tmp/numaplaced.log || return 1; done; }
np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
m0=$(np_vmstat pgmigrate_success)
# (five processes fault in 400 MB each under TCG: longer than 60 s on a busy host)
NP_READY_WAIT=300
w=$(np_start_workload /tmp/w --mb 8 --share-mb 400 --share-children 4 --share-busy --sleep --duty 12 \
    --interleave 0-3 --no-thp --no-pin) || exit 1
kids=$(sed -n 's/^CHILD pid=//p' /tmp/w.out | tr '\n' ' ')
np_result parent $w
np_result children $kids
np_result shared.before $(np_numa_kb $w 'zero')
np_result own.before $(np_numa_kb $w '^[0-9a-f]+ [^ ]+ (heap |stack )?anon=')
for c in $kids; do
	np_result child.own.before $c $(np_numa_kb $c '^[0-9a-f]+ [^ ]+ (heap |stack )?anon=')
done
set -- $kids
grep 'lib' /proc/$1/numa_maps | head -n 4 | while IFS= read -r l; do np_result libline "$l"; done
np_result libs.before $(np_numa_kb $1 '""" + LIBS + r"""')
np_wait_for 300 placed_all $kids
# (each Placed line is logged when that move ended)
sleep 5
for c in $kids; do
	np_result child $c "$(pprop $c State)" "$(pprop $c TargetNodes | tr ' ' ,)"
	np_result decision $c "$(pprop $c Decision)"
done
np_result shared.after $(np_numa_kb $w 'zero')
np_result libs.after $(np_numa_kb $1 '""" + LIBS + r"""')
np_result pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
np_result migrated $(mprop MigratedBytes)
np_result failed $(mprop MigrationFailedPages)
grep -E "Placing|Placed|group" /tmp/numaplaced.log | while IFS= read -r l; do np_result log "$l"; done
np_stop_numaplaced
"""

# numa01's pair (as tests/bench/bench-policy.py's scenario 3): a and b, and
# where their memory is before anything moves it (result keys prefixed by
# $T, empty but in numa01-homes)
NUMA01_PAIR = r"""
a=$(np_start_workload /tmp/a --mb 16 --share-mb 320 --share-busy --bind 0 --reset-policy --no-thp --sweep \
    --duty 60 --no-pin) || exit 1
b=$(sed -n 's/^CHILD pid=//p' /tmp/a.out)
np_result ${T}pair $a $b
"""
# ... and where the pair is, its Decisions, what the kernel did since m0, u0
NUMA01_AFTER = r"""
for p in $a $b; do
	np_result ${T}proc $p "$(pprop $p State)" "$(pprop $p TargetNodes | tr ' ' ,)"
	np_result ${T}decision $p "$(pprop $p Decision)"
done
np_result ${T}shared.after $(np_numa_kb $a 'zero')
np_result ${T}pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
np_result ${T}pte $(( $(np_vmstat numa_pte_updates) - u0 ))
np_result ${T}nb $(cat /proc/sys/kernel/numa_balancing)
"""
NUMA01_BEFORE = r"""
np_result ${T}shared.before $(np_numa_kb $a 'zero')
for p in $a $b; do
	np_result ${T}own.before $p $(np_numa_kb $p '^[0-9a-f]+ [^ ]+ (heap |stack )?anon=')
done
"""

# numa01 (as tests/bench/bench-policy.py's scenario 3): the child's thread
# put on node 2 (CPU 4), the parent's on node 0 (CPU 0), then both free to
# run on every CPU again: on an idle machine the scheduler leaves them
# there
NUMA01 = r"""
P=org.numaplaced1.Process
pprop() { busctl get-property org.numaplaced1 /org/numaplaced1/process/$1 $P "$2" 2>/dev/null | cut -d' ' -f2- | tr -d '"'; }
placed_all() { for _p in "$@"; do grep -q "Placed $_p " /tmp/numaplaced.log || return 1; done; }
np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
# this shell and what it starts (busctl, the checks) on node 3's CPUs: no
# load of the test's on node 0 for the scheduler to balance away from
taskset -p -c 6-7 $$ > /dev/null || exit 1
m0=$(np_vmstat pgmigrate_success) u0=$(np_vmstat numa_pte_updates)
""" + NUMA01_PAIR + r"""taskset -a -p -c 0 $a > /dev/null && taskset -a -p -c 4 $b > /dev/null || exit 1
sleep 1
taskset -a -p -c 0-7 $a > /dev/null && taskset -a -p -c 0-7 $b > /dev/null || exit 1
""" + NUMA01_BEFORE + r"""np_wait_for 120 placed_all $a $b
sleep 2
""" + NUMA01_AFTER + r"""grep -E "Placing|Placed|Leaving" /tmp/numaplaced.log | while IFS= read -r l; do np_result log "$l"; done
np_stop_numaplaced
"""

# numa01's THREAD_ALLOC variant: one process, its two busy threads put on
# node 0 (CPU 0) and node 2 (CPU 4), then free again
NUMA01_THREADS = r"""
P=org.numaplaced1.Process
pprop() { busctl get-property org.numaplaced1 /org/numaplaced1/process/$1 $P "$2" 2>/dev/null | cut -d' ' -f2- | tr -d '"'; }
np_start_dbus || exit 1
np_start_numaplaced /etc/np.conf || exit 1
taskset -p -c 6-7 $$ > /dev/null || exit 1
m0=$(np_vmstat pgmigrate_success)
a=$(np_start_workload /tmp/a --mb 320 --threads 2 --bind 0 --reset-policy --no-thp --sweep --duty 60 --no-pin) || exit 1
set -- $(ls /proc/$a/task | grep -vx $a | sort -n)
np_result threads $a "$@"
[ $# -eq 2 ] || exit 1
# (it started on this shell's CPUs: every CPU for all its threads first)
taskset -a -p -c 0-7 $a > /dev/null || exit 1
taskset -p -c 0 $1 > /dev/null && taskset -p -c 4 $2 > /dev/null || exit 1
sleep 1
taskset -p -c 0-7 $1 > /dev/null && taskset -p -c 0-7 $2 > /dev/null || exit 1
np_result own.before $(np_numa_kb $a '^[0-9a-f]+ [^ ]+ (heap |stack )?anon=')
np_wait_for 120 grep -q "Placed $a " /tmp/numaplaced.log
sleep 2
np_result proc $a "$(pprop $a State)" "$(pprop $a TargetNodes | tr ' ' ,)"
np_result decision $a "$(pprop $a Decision)"
np_result own.after $(np_numa_kb $a '^[0-9a-f]+ [^ ]+ (heap |stack )?anon=')
np_result pgmigrate $(( $(np_vmstat pgmigrate_success) - m0 ))
grep -E "Placing|Placed|Leaving" /tmp/numaplaced.log | while IFS= read -r l; do np_result log "$l"; done
np_stop_numaplaced
"""


# numa01 on one-CPU nodes, the kernel's balancing on: its pair on node 0
# and one more, and its busy threads homed there
NUMA01_HOMES = r"""
P=org.numaplaced1.Process
pprop() { busctl get-property org.numaplaced1 /org/numaplaced1/process/$1 $P "$2" 2>/dev/null | cut -d' ' -f2- | tr -d '"'; }
homed() { for _p in "$@"; do grep -q "Keeping the busy threads of $_p " /tmp/numaplaced.log || return 1; done; }
# affinity PID: each thread's tid and its CPUs
affinity() {
	for _t in /proc/$1/task/*; do
		echo "${_t##*/}=$(awk '/^Cpus_allowed_list/ { print $2 }' $_t/status 2>/dev/null)"
	done
}
np_start_dbus || exit 1
# phase T CPU_A CPU_B: numaplaced and a pair started, the first put on
# CPU_A and the child on CPU_B for a second (then every CPU again), the
# homes waited for and kept 20 s; numaplaced stopped, the pair ended
phase() {
T=$1
np_start_numaplaced /etc/np.conf || exit 1
# (together: this shell and what it starts on node 3's CPU, no load of
# the test's beside the pair for the scheduler to balance away from)
[ $T = together. ] && { taskset -p -c 3 $$ > /dev/null || exit 1; }
m0=$(np_vmstat pgmigrate_success) u0=$(np_vmstat numa_pte_updates)
""" + NUMA01_PAIR + r"""taskset -a -p -c $2 $a > /dev/null && taskset -a -p -c $3 $b > /dev/null || exit 1
sleep 1
taskset -a -p -c 0-3 $a > /dev/null && taskset -a -p -c 0-3 $b > /dev/null || exit 1
""" + NUMA01_BEFORE + r"""np_wait_for 150 homed $a $b || np_result ${T}homes.timeout 1
np_result ${T}pgmigrate.homes $(( $(np_vmstat pgmigrate_success) - m0 ))
sleep 20
for p in $a $b; do
	np_result ${T}aff $p $(affinity $p)
done
""" + NUMA01_AFTER + r"""grep -E "Placing|Placed|Keeping|No longer keeping" /tmp/numaplaced.log |
	while IFS= read -r l; do np_result ${T}log "$l"; done
np_stop_numaplaced
for p in $a $b; do
	np_result ${T}aff.after $p $(affinity $p)
done
kill $a $b
np_wait_for 30 sh -c "! kill -0 $a 2>/dev/null && ! kill -0 $b 2>/dev/null"
taskset -p -c 0-3 $$ > /dev/null
}
# away from their memory's node 0, then on it and another node
phase apart. 1 3
phase together. 0 2
"""


def kb_of(words):
    return {int(k): int(v) for k, v in (x.split("=") for x in words)}


def run_at_defaults(name, script, cmdline=None, topo=TOPO):
    """Boot NAME (cgroup v1, numaplaced at its defaults, cmdline added to
    the kernel's), run script: the Checker and the results, or None for the
    results when it did not complete."""
    vm = npvm.VM(name, topo, cgroup="v1", cmdline=cmdline)
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", "[Daemon]\nMode=enforce\n")
    res = vm.run(script, timeout=600)
    t = npvm.Checker(res)
    return t, (res if t.require_completed() else None)


def pair_results(t, res):
    """numa01's pair (checked: two), each one's state and nodes, and each
    one's Decision, by pid."""
    pair = (res.get("pair") or "").split()
    t.eq(len(pair), 2, f"a process and its child ({pair})")
    procs = {}
    for line in res.all("proc"):
        f = line.split()
        if len(f) >= 3 and f[0].isdigit():
            procs[f[0]] = (f[1], [int(x) for x in f[2].split(",")[1:]])
    decisions = dict(line.partition(" ")[::2] for line in res.all("decision"))
    return pair, procs, decisions


def placed_apart(t, res, n, what):
    """Checked: n Placing lines in the log, each for the rule that its
    `what` (threads, processes) ran on more nodes than its demand needs."""
    placing = [x for x in res.all("log") if "Placing" in x]
    t.check(len(placing) == n and all(re.search(rf"its {what} run on nodes [0-9,-]+, but fewer hold its demand", x)
                                      for x in placing), f"placed because its {what} ran apart ({placing})")


def numa01(balancing=False):
    name = "group-numa01-nb" if balancing else "group-numa01"
    t, res = run_at_defaults(name, NUMA01, ["numa_balancing=enable"] if balancing else None)
    if res is None:
        return t.finish()
    t.eq(res.get("nb"), "1" if balancing else "0", f"the kernel's NUMA balancing is {'on' if balancing else 'off'}")
    pair, procs, decisions = pair_results(t, res)
    for p in pair:
        st, nodes = procs.get(p, ("?", []))
        t.eq((st, nodes), ("placed", [0]), f"process {p} is placed on node 0")
        d = decisions.get(p, "")
        t.check(d.startswith("with the 2 processes of its group shm:"), f"process {p}: one group of two ({d!r})")
        # beside the kernel's balancing: it never scans shmem, the Decision
        # says numaplaced takes the pair for that
        cannot = "the kernel's NUMA balancing cannot move most of its memory (a memory policy, huge pages, " \
            "shared memory or files mapped read-only); its processes run on nodes"
        if balancing:  # (busctl escapes the apostrophes)
            t.check(cannot in d.replace("\\'", "'"), f"process {p}: the kernel cannot move its shared memory ({d!r})")
    placed_apart(t, res, 2, "processes")
    after = kb_of((res.get("shared.after") or "").split())
    total = sum(after.values())
    t.check(total >= 320 * 1024 * 0.99 and after.get(0, 0) >= 0.95 * total,
            f"the shared memory on node 0 ({after})")
    minimum = sum(v for n, v in kb_of((res.get("shared.before") or "").split()).items() if n != 0)
    for line in res.all("own.before"):
        minimum += sum(v for n, v in kb_of(line.split()[1:]).items() if n != 0)
    moved = (res.int("pgmigrate") or 0) * 4
    t.check(moved <= minimum + 1024, f"pages moved {moved} kB, at most the minimum {minimum} kB plus 1 MB")
    print(f"  ..   numa_pte_updates {res.get('pte')}, pages moved {moved} kB (minimum {minimum} kB)")
    for line in res.all("log"):
        print(f"  ..   {line}")
    return t.finish()


def numa01_homes():
    t, res = run_at_defaults("group-numa01-homes", NUMA01_HOMES, ["numa_balancing=enable"],
                             npvm.Topology(4, mem_mb=512, cpus=1))
    if res is None:
        return t.finish()
    for tag in ("apart.", "together."):
        homes_phase(t, res.prefixed(tag), tag[:-1])
    return t.finish()


def homes_phase(t, res, phase):
    """numa01-homes, one phase: `apart` (the pair put on nodes 1 and 3),
    `together` (on nodes 0 and 2)."""
    t.eq(res.get("nb"), "1", f"{phase}: the kernel's NUMA balancing is on")
    pair, procs, decisions = pair_results(t, res)
    t.check(res.get("homes.timeout") is None, f"{phase}: the busy threads of both got homes within 150 s")
    targets = {tuple(procs.get(p, ("?", []))[1]) for p in pair}
    target = next(iter(targets)) if len(targets) == 1 else ()
    t.check(len(target) == 2 and 0 in target, f"{phase}: the pair on node 0 and one more ({targets})")
    placing = [x for x in res.all("log") if "Placing" in x]
    print(f"  ..   {phase}: the pair was {'placed' if placing else 'kept where it ran'}")
    homes = {}
    for p in pair:
        t.eq(procs.get(p, ("?",))[0], "placed", f"{phase}: process {p} is placed")
        d = decisions.get(p, "").replace("\\'", "'")
        t.check(d.startswith("with the 2 processes of its group shm:"),
                f"{phase}: process {p}: one group of two ({d!r})")
        m = re.search(r"the 2 busy threads of its group work on their own pages: each is kept on its own node "
                      r"\(([0-9]+) on ([0-9]+), ([0-9]+) on ([0-9]+)\)", d)
        t.check(m is not None, f"{phase}: process {p}: its Decision lists the group's homes ({d!r})")
        if m:
            homes.update({m.group(1): int(m.group(2)), m.group(3): int(m.group(4))})
    t.check(len(homes) == 2 and set(homes.values()) == set(target),
            f"{phase}: the two busy threads on the group's two nodes, one each ({homes}, nodes {target})")
    # placed: the pair waited for its threads' faults, and its move gave
    # the homes (the same ones), so that no thread changed node between
    for line in placing:
        m = re.search(r"each is kept on its own node \(([0-9]+) on ([0-9]+), ([0-9]+) on ([0-9]+)\)", line)
        got = {m.group(1): int(m.group(2)), m.group(3): int(m.group(4))} if m else None
        t.eq(got, homes, f"{phase}: the Placing line lists the group's homes ({line!r})")
    # each homed thread's affinity is its node's CPU (one CPU per node, CPU
    # n on node n); numaplaced stopped, every CPU again
    aff = {}
    for key in ("aff", "aff.after"):
        for line in res.all(key):
            for x in line.split()[1:]:
                tid, _, cpus = x.partition("=")
                aff.setdefault(key, {})[tid] = cpus
    for tid, node in homes.items():
        t.eq(aff.get("aff", {}).get(tid), str(node), f"{phase}: thread {tid} kept on node {node}'s CPU")
        t.eq(aff.get("aff.after", {}).get(tid), "0-3",
             f"{phase}: thread {tid} has every CPU again after numaplaced stopped")
    keeping = [x for x in res.all("log") if "Keeping the busy threads of" in x]
    t.eq(len(keeping), 2, f"{phase}: homes given once, one line per process, and kept ({keeping})")
    minimum = sum(v for n, v in kb_of((res.get("shared.before") or "").split()).items() if n not in target)
    for line in res.all("own.before"):
        minimum += sum(v for n, v in kb_of(line.split()[1:]).items() if n not in target)
    moved = (res.int("pgmigrate") or 0) * 4
    since = moved - (res.int("pgmigrate.homes") or 0) * 4
    t.check(since <= 17 * 1024, f"{phase}: pages moved since the homes were given {since} kB, at most the first's "
            f"16 MB once plus 1 MB")
    print(f"  ..   {phase}: numa_pte_updates {res.get('pte')}, pages moved {moved} kB in all (minimum {minimum} kB)")
    for line in res.all("log"):
        print(f"  ..   {phase}: {line}")


def numa01_threads():
    t, res = run_at_defaults("group-numa01-threads", NUMA01_THREADS)
    if res is None:
        return t.finish()
    threads = (res.get("threads") or "").split()
    t.eq(len(threads), 3, f"a process and its two workers ({threads})")
    f = (res.get("proc") or "").split()
    state = (f[1], [int(x) for x in f[2].split(",")[1:]]) if len(f) >= 3 else ("?", [])
    t.eq(state, ("placed", [0]), f"the process is placed on node 0 ({res.get('decision')!r})")
    placed_apart(t, res, 1, "threads")
    after = kb_of((res.get("own.after") or "").split())
    total = sum(after.values())
    t.check(total >= 320 * 1024 * 0.99 and after.get(0, 0) >= 0.95 * total, f"its memory on node 0 ({after})")
    minimum = sum(v for n, v in kb_of((res.get("own.before") or "").split()).items() if n != 0)
    moved = (res.int("pgmigrate") or 0) * 4
    t.check(moved <= minimum + 1024, f"pages moved {moved} kB, at most the minimum {minimum} kB plus 1 MB")
    for line in res.all("log"):
        print(f"  ..   {line}")
    return t.finish()


def main(cg):
    vm = npvm.VM(f"group-shared-{cg}", TOPO, cgroup=cg)
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    vm.add_file("etc/np.conf", CONF)
    res = vm.run(SCRIPT, timeout=600)
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()
    kids = (res.get("children") or "").split()
    t.eq(len(kids), 4, f"four workers forked ({kids})")
    children = {}
    for line in res.all("child"):
        f = line.split()
        if len(f) >= 3 and f[0].isdigit():
            children[f[0]] = (f[1], [int(x) for x in f[2].split(",")[1:]])
    decisions = {}
    for line in res.all("decision"):
        pid, _, text = line.partition(" ")
        decisions[pid] = text
    targets = set()
    for c in kids:
        st, nodes = children.get(c, ("?", []))
        t.eq(st, "placed", f"worker {c} is placed")
        t.eq(len(nodes), 1, f"worker {c} on one node ({nodes})")
        targets.add(tuple(nodes))
        d = decisions.get(c, "")
        t.check(d.startswith("with the 4 processes of its group shm:"), f"worker {c}: one group of four ({d!r})")
    t.eq(len(targets), 1, f"one target for the group ({sorted(targets)})")
    node = next(iter(targets))[0] if len(targets) == 1 and next(iter(targets)) else None
    before = kb_of((res.get("shared.before") or "").split())
    after = kb_of((res.get("shared.after") or "").split())
    total = sum(after.values())
    share = after.get(node, 0) / total if total and node is not None else 0.0
    t.check(total >= 400 * 1024 * 0.99 and share >= 0.95,
            f"{share:.1%} of the {total} kB of shared memory on node {node}")
    minimum = sum(v for n, v in before.items() if n != node)
    minimum += sum(v for n, v in kb_of((res.get("own.before") or "").split()).items() if n != node)
    for line in res.all("child.own.before"):
        minimum += sum(v for n, v in kb_of(line.split()[1:]).items() if n != node)
    moved = (res.int("pgmigrate") or 0) * 4
    ratio = moved / minimum if minimum else float("nan")
    t.check(minimum > 0 and moved <= minimum * 1.05,
            f"pages moved {moved} kB, at most 1.05 times the minimum {minimum} kB (ratio {ratio:.3f})")
    lb, la = kb_of((res.get("libs.before") or "").split()), kb_of((res.get("libs.after") or "").split())
    if cg == "v1":
        t.check(sum(lb.values()) > 0 and lb == la,
                f"the shared libraries' pages did not move ({lb} -> {la})")
    else:
        print(f"  ..   v2: the shared libraries' pages {lb} -> {la} (the kernel migrates a process's every page "
              f"when its cpuset.mems narrow)")
    print(f"  ..   moved {moved} kB, minimum {minimum} kB (ratio {ratio:.3f}); MigratedBytes "
          f"{res.get('migrated')}, MigrationFailedPages {res.get('failed')}")
    for line in res.all("libline"):
        print(f"  ..   {line}")
    for line in res.all("log"):
        print(f"  ..   {line}")
    return t.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("shared-v1", "shared-v2", "numa01", "numa01-nb", "numa01-homes",
                                                 "numa01-threads"):
        sys.exit("usage: test_group.py shared-v1|shared-v2|numa01|numa01-nb|numa01-homes|numa01-threads")
    if sys.argv[1] == "numa01":
        npvm.run_test("group-numa01", numa01)
    elif sys.argv[1] == "numa01-nb":
        npvm.run_test("group-numa01-nb", lambda: numa01(balancing=True))
    elif sys.argv[1] == "numa01-homes":
        npvm.run_test("group-numa01-homes", numa01_homes)
    elif sys.argv[1] == "numa01-threads":
        npvm.run_test("group-numa01-threads", numa01_threads)
    else:
        npvm.run_test(f"group-{sys.argv[1]}", lambda: main(sys.argv[1].split("-")[1]))
