#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Real podman containers under real systemd: the default Groups= globs
against the cgroups podman really makes, the systemd backend on a libpod
scope, and a container pinned with --cpuset-cpus left alone.

A Debian 12 system (tests/vm/sysvm.py: systemd as PID 1, cgroup v2, 4 NUMA
nodes) with Debian's podman, crun and conmon; numaplaced runs under its
installed unit with the shipped /etc/numaplaced.conf and one drop-in:
MinProcessCPU=0.3 (the workloads sweep at --duty 45, 0.45 CPUs: with one
vCPU a node under TCG, a busier one plus what busctl, journald and podman
cost may not fit one node at TargetUtilization=85) and Include=np-joiner
(step 3's small process, significant however small it is). No image is
pulled: the containers run from a root filesystem made in the VM
(np-workload, the libraries ldd lists and the loader) with
`podman run -d --network none ... --rootfs DIR COMMAND`, systemd cgroup
manager, crun.

Steps, each checked on the host:
 1. podman's version, its runtime and cgroup manager are printed.
 2. Container B, `--cpuset-cpus 2 --cpuset-mems 2`, a busy 320 MB
    workload: crun writes the cpuset into its cgroup
    /machine.slice/libpod-<id>.scope/container (the scope's own
    AllowedCPUs/AllowedMemoryNodes stay empty). It is significant, State
    foreign, its Decision names the narrowing and that cgroup, the journal
    says it is left alone; nothing of it changes: the cgroup's
    cpuset.cpus/cpuset.mems, the scope's properties, its Cpus_allowed_list
    and Mems_allowed_list (2), its pages on node 2, also after the stop.
 3. Container A, a busy 320 MB workload interleaved over 0-3, started
    while the daemon is paused (its scope and lists are read as they were,
    then Resume()): its cgroup (/proc/PID/cgroup) is below
    /machine.slice/libpod-<id>.scope, which the default glob
    `libpod-*.scope` matches; the policy places it
    (ManagedProcesses, State placed) on one node, not B's node 2, with
    >= 95% of its pages there, through its scope: the scope's
    AllowedCPUs/AllowedMemoryNodes/EffectiveMemoryNodes are the target
    while it is placed, the journal says it was confined by the systemd
    backend, the state file records the scope. A second process started in the
    container with `podman exec` joins it there, and the Decisions then
    begin `with the 2 processes of its group /machine.slice/libpod-<id>.scope`
    (a group of one significant process is not named in its Decision; its
    Process property Group names the scope all the same).
    The group's memory per node is its scope's memory.numa_stat (anon +
    shmem): Dump() shows PAGES_FROM numa_stat for its processes, its
    count of memory.numa_stat reads grows while A is decided, and the
    MiB the journal's Placing line has A move are what numa_stat showed
    off the target node before Resume().
 4. systemctl stop numaplaced: A's scope has its original (empty)
    AllowedCPUs/AllowedMemoryNodes back, its processes' Cpus_allowed_list
    and Mems_allowed_list are the whole machine again; B is still as crun
    made it.
"""
import fnmatch
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402
import sysvm  # noqa: E402

SCRIPT = r"""
set -u
R() { echo "NPVM-R $*"; }
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
prop() { busctl get-property $M "$1" 2>&1 | tr '\n' ' '; }
pprop() { busctl get-property org.numaplaced1 /org/numaplaced1/process/$1 org.numaplaced1.Process "$2" 2>&1 |
    tr '\n' ' '; }
# a property of the Group object of process $1
gprop() { busctl get-property org.numaplaced1 "$(pprop $1 Group | cut -d'"' -f2)" org.numaplaced1.Group "$2" 2>&1 |
    tr '\n' ' '; }
scope() { systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value "$1" | tr '\n' ' '; }
lists() { awk '/^(Cpus|Mems)_allowed_list/ {printf "%s ", $2}' /proc/$1/status; }
numa() { awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); s[a[1]] += a[2] * 4 } }
    END { for (n in s) printf "%s=%d ", n, s[n] }' /proc/$1/numa_maps; }
managed() { busctl get-property $M ManagedProcesses | tr '\n' ' ' | grep -qw "$1"; }
wait_active() {
    for i in $(seq 1 120); do
        [ "$(systemctl is-active numaplaced)" = active ] && busctl get-property $M Scans >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    return 1
}
wait_file() { for i in $(seq 1 $(( $2 * 2 ))); do [ -e "$1" ] && return 0; sleep 0.5; done; return 1; }
# Dump()'s text, one line a line; its row of process $1; its numa_stat count
dump() { busctl call $M Dump | sed 's/^s "//; s/"$//; s/\\n/\n/g'; }
drow() { dump | awk -v p="$1" '$1 == p' | tr -s ' '; }
# (busctl escapes its apostrophe)
dreads() { dump | sed -n "s/^Cgroup groups.* memory.numa_stat read: \([0-9]*\) times/\1/p"; }
# anon + shmem of cgroup $1's memory.numa_stat, kB per node
nstat() { awk '$1 == "anon" || $1 == "shmem" { for (i = 2; i <= NF; i++) { split(substr($i, 2), a, "=");
    s[a[1]] += a[2] / 1024 } } END { for (n in s) printf "%s=%d ", n, s[n] }' /sys/fs/cgroup$1/memory.numa_stat; }

R kernel "$(uname -r)"
R cgroup "$(stat -fc %T /sys/fs/cgroup)"
R pid1 "$(cat /proc/1/comm)"

# 1. podman
P="podman --cgroup-manager=systemd --runtime=crun"
R podman-version "$(podman version --format '{{.Client.Version}}' 2>/dev/null)"
F='{{.Host.OCIRuntime.Name}} {{.Host.OCIRuntime.Path}} {{.Host.CgroupManager}} cgroup{{.Host.CgroupsVersion}}'
R podman-info "$($P info --format "$F {{.Store.GraphDriverName}}" 2>&1 | tr '\n' ' ')"
R crun-version "$(crun --version | head -1)"
R conmon-version "$(conmon --version | head -1)"

# the containers' root filesystem: np-workload (and a copy named np-joiner),
# the libraries ldd lists, the loader. (`--rootfs` is a flag: the first
# argument after the options is the directory, everything after it the
# command, so every option of podman run comes before it)
RF=/var/lib/npvm-rootfs
mkdir -p $RF/usr/local/bin $RF/npvm /run/npvm
cp /usr/local/bin/np-workload $RF/usr/local/bin/np-workload
cp /usr/local/bin/np-workload $RF/usr/local/bin/np-joiner
for l in $(ldd /usr/local/bin/np-workload | grep -o '/[^ ]*'); do
    mkdir -p "$RF$(dirname "$l")"; cp -L "$l" "$RF$l"
done
R rootfs "$(cd $RF && find . -type f | sort | tr '\n' ' ')"

mkdir -p /etc/numaplaced.conf.d
printf '[Placement]\nMinProcessCPU=0.3\nInclude=np-joiner\n' > /etc/numaplaced.conf.d/40-podman.conf
systemctl start numaplaced; R start-rc $?
wait_active; R start-active $(systemctl is-active numaplaced)
R backend $(prop Backend)

W="/usr/local/bin/np-workload --mb 320 --no-thp --sweep --duty 45 --no-pin"
# 2. container B, pinned by its own --cpuset-cpus/--cpuset-mems
t0=$(date +%s)
$P run -d --name b --network none -v /run/npvm:/npvm --cpuset-cpus 2 --cpuset-mems 2 --rootfs $RF \
    $W --ready-file /npvm/b.ready >/tmp/b.out 2>&1
R b-run-rc $? "$(tr '\n' ' ' </tmp/b.out)"
R b-run-s $(( $(date +%s) - t0 ))
wait_file /run/npvm/b.ready 120; R b-ready $?
read -r BP BID BRT <<<"$($P inspect -f '{{.State.Pid}} {{.Id}} {{.OCIRuntime}}' b 2>/dev/null)"
BP=${BP:-0}
R b-pid $BP
R b-id ${BID:-}
R b-runtime "${BRT:-}"
R b-cgroup "$(cat /proc/$BP/cgroup)"
R b-unit "$(ps -o unit= -p $BP)"
BS=libpod-$BID.scope
R b-scope-before "$(scope $BS)"
R b-lists-before $(lists $BP)
R b-numa-before $(numa $BP)
# (crun writes B's cpuset into its container cgroup, below the scope)
BCG=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/$BP/cgroup)
bcpuset() { echo $(cat $BCG/cpuset.cpus $BCG/cpuset.mems 2>&1); }
R b-cpuset-before "$(bcpuset)"

# 3. container A: busy, 320 MB interleaved over every node. The daemon is
# paused until its scope and process have been read as they were (it once
# confined A during the podman inspect after A's memory was touched)
busctl call $M Pause; R pause-rc $?
$P run -d --name a --network none -v /run/npvm:/npvm --rootfs $RF \
    $W --interleave 0-3 --ready-file /npvm/a.ready >/tmp/a.out 2>&1
R a-run-rc $? "$(tr '\n' ' ' </tmp/a.out)"
wait_file /run/npvm/a.ready 120; R a-ready $?
read -r AP AID <<<"$($P inspect -f '{{.State.Pid}} {{.Id}}' a 2>/dev/null)"
AP=${AP:-0}
AS=libpod-$AID.scope
R a-pid $AP
R a-id $AID
R a-cgroup "$(cat /proc/$AP/cgroup)"
R a-unit "$(ps -o unit= -p $AP)"
R a-scope-before "$(scope $AS)"
R a-lists-before $(lists $AP)
R a-numa-before $(numa $AP)
R a-scope-delegate "$(systemctl show -p Delegate -p Slice --value $AS | tr '\n' ' ')"
R a-numastat-before $(nstat /machine.slice/$AS)
R a-numastat-file "$(grep -E '^(anon|file|shmem) ' /sys/fs/cgroup/machine.slice/$AS/memory.numa_stat | tr '\n' ' ')"
R numastat-reads-paused "$(dreads)"
R conmon-cgroup "$(for p in $(pgrep -x conmon); do sed -n 's/^0:://p' /proc/$p/cgroup; done | tr '\n' ' ')"
t0=$(date +%s)
busctl call $M Resume; R resume-rc $?
for i in $(seq 1 480); do managed $AP && break; sleep 0.5; done
R a-placed-after-s $(( $(date +%s) - t0 ))
R a-decision-managed "$(pprop $AP Decision)"
# managed from the moment its move is queued: the move has ended when the
# systemd backend sets the scope's AllowedMemoryNodes (after the pages moved)
for i in $(seq 1 240); do
    [ -n "$(systemctl show -p AllowedMemoryNodes --value $AS)" ] && ! pprop $AP Decision | grep -q '"moving' && break
    sleep 0.5
done
R a-moved-after-s $(( $(date +%s) - t0 ))
R a-managed $(prop ManagedProcesses)
R a-state $(pprop $AP State)
R a-target $(pprop $AP TargetNodes)
R a-decision "$(pprop $AP Decision)"
R a-bus-cgroup "$(pprop $AP Cgroup)"
R a-bus-unit "$(pprop $AP Unit)"
R a-bus-group $(pprop $AP Group)
R a-group-name "$(gprop $AP Name)"
R a-group-kind "$(gprop $AP Kind)"
R a-group-members "$(gprop $AP Members)"
R a-numa $(numa $AP)
R a-scope-placed "$(scope $AS)"
R a-lists-placed $(lists $AP)
R a-effective-mems "$(systemctl show -p EffectiveMemoryNodes --value $AS)"
R a-dump-placed "$(drow $AP)"
R numastat-reads-placed "$(dreads)"

# B meanwhile (significant: it is on the bus)
R b-state $(pprop $BP State)
R b-decision "$(pprop $BP Decision)"
R b-target $(pprop $BP TargetNodes)

# a second process in container A: joins its group there
$P exec -d a /usr/local/bin/np-joiner --mb 16 --no-thp --sleep --ready-file /npvm/j.ready >/tmp/j.out 2>&1
R j-exec-rc $? "$(tr '\n' ' ' </tmp/j.out)"
wait_file /run/npvm/j.ready 60; R j-ready $?
JP=$(pgrep -x np-joiner | head -1); JP=${JP:-0}
R j-pid $JP
R j-cgroup "$(cat /proc/$JP/cgroup)"
for i in $(seq 1 240); do managed $JP && break; sleep 0.5; done
R j-state $(pprop $JP State)
R j-target $(pprop $JP TargetNodes)
R j-decision "$(pprop $JP Decision)"
for i in $(seq 1 120); do pprop $AP Decision | grep -q 'processes of its group' && break; sleep 0.5; done
R a-decision-group "$(pprop $AP Decision)"
R a-state-group $(pprop $AP State)
R a-target-group $(pprop $AP TargetNodes)
R a-scope-group "$(scope $AS)"
R g-name "$(gprop $AP Name)"
R g-members "$(gprop $AP Members)"
R g-target $(gprop $AP TargetNodes)
R g-state $(gprop $AP State)
R g-decision "$(gprop $AP Decision)"
R g-memory "$(gprop $AP MemoryBytes)"
R g-locality "$(gprop $AP Locality)"
R j-group $(pprop $JP Group)
R j-lists $(lists $JP)
R a-dump-group "$(drow $AP)"
R j-dump-group "$(drow $JP)"
R numastat-reads-group "$(dreads)"
R a-numastat-group $(nstat /machine.slice/$AS)
grep -E '^(\[process|Unit|SystemdAllowed|Backend)' /run/numaplaced/state | tr '\n' ' ' | { read -r l; R state-file "$l"; }

# B after all that
R b-state-after $(pprop $BP State)
R b-decision-after "$(pprop $BP Decision)"
R b-scope-after "$(scope $BS)"
R b-cpuset-after "$(bcpuset)"
R b-lists-after $(lists $BP)
R b-numa-after $(numa $BP)

# 4. stop
systemctl stop numaplaced; R stop-rc $?
R stop-result $(systemctl show -p Result --value numaplaced)
R a-scope-stopped "$(scope $AS)"
R a-lists-stopped $(lists $AP)
R j-lists-stopped $(lists $JP)
R b-scope-stopped "$(scope $BS)"
R b-cpuset-stopped "$(bcpuset)"
R b-lists-stopped $(lists $BP)
R a-alive $([ -d /proc/$AP ] && echo 1 || echo 0) $([ -d /proc/$BP ] && echo 1 || echo 0)
journalctl -u numaplaced --no-pager -o cat | grep -E 'Placing|Placed|Confined|Leaving|Not placing|systemd|warn|rror' |
    tail -30 | while read -r l; do R journal "$l"; done
exit 0
"""


def node_kb(text):
    return {int(k): int(v) for k, v in (x.split("=") for x in (text or "").split())}


def default_globs():
    """The default Groups= globs, as np-group.h lists them."""
    h = os.path.join(os.path.dirname(os.path.dirname(npvm.HERE)), "daemon", "np-group.h")
    with open(h) as f:
        text = f.read()
    m = re.search(r"#define NP_GROUP_DEFAULT_GLOBS(.*?)/\* clang-format on", text, re.S)
    # string literals, left to right, skipping comments ("/docker/*" holds a "/*")
    return [s for s, c in re.findall(r'"([^"]*)"|(/\*.*?\*/)', m.group(1) if m else "", re.S) if not c]


def glob_match(path, globs):
    """(glob, cgroup) of the outermost ancestor of path a glob matches, as
    np_group_cgroup_match() does (`/` never matched by a wildcard, a
    relative glob against the trailing components); None when none does."""
    parts = path.strip("/").split("/")
    for i in range(1, len(parts) + 1):
        prefix = parts[:i]
        for g in globs:
            gparts = g.strip("/").split("/")
            if g.startswith("/"):
                ok = len(gparts) == len(prefix) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(prefix, gparts))
            else:
                ok = len(gparts) <= len(prefix) and all(
                    fnmatch.fnmatchcase(a, b) for a, b in zip(prefix[-len(gparts):], gparts))
            if ok:
                return g, "/" + "/".join(prefix)
    return None


def dump_row(text):
    """Dump()'s row of a process: (MAPS_READS, PAGES_FROM), or None."""
    f = (text or "").split()
    # PID COMM CPU MEM_MIB LOCALITY STATE TARGET MAPS_READS PAGES_FROM MIB_PER_NODE...
    return (int(f[7]), f[8]) if len(f) >= 9 and f[7].isdigit() else None


def check_numa_stat(t, res, ap, jp, node):
    """A's group took its memory per node from its scope's memory.numa_stat:
    Dump() says so for its processes, the daemon's count of numa_stat reads
    grew while it was decided, and what the policy had A move (the journal's
    Placing line) is what numa_stat showed off the target node before."""
    print(f"  ..   A's scope's memory.numa_stat before Resume(): {res.get('a-numastat-file')}")
    print(f"  ..   anon+shmem kB per node: before {res.get('a-numastat-before')}, "
          f"with the joiner {res.get('a-numastat-group')}")
    print(f"  ..   Dump(): A placed {res.get('a-dump-placed')!r}; A in the group {res.get('a-dump-group')!r}; "
          f"joiner {res.get('j-dump-group')!r}")
    reads = [res.get(k) or "" for k in ("numastat-reads-paused", "numastat-reads-placed", "numastat-reads-group")]
    print(f"  ..   memory.numa_stat reads: paused {reads[0]}, A placed {reads[1]}, with the joiner {reads[2]}")
    for what, key in (("A placed", "a-dump-placed"), ("A in its group of 2", "a-dump-group"),
                      ("the joiner", "j-dump-group")):
        row = dump_row(res.get(key))
        t.check(row is not None and row[1] == "numa_stat",
                f"Dump(): the policy takes the pages of {what} from its group's memory.numa_stat: {row}")
    t.check(all(r.isdigit() for r in reads) and int(reads[1]) > int(reads[0]) and int(reads[2]) > int(reads[1]),
            f"the daemon read memory.numa_stat while deciding A's group: {reads}")
    before = node_kb(res.get("a-numastat-before"))
    placing = [j for j in res.all("journal") if j.startswith(f"Placing {ap} (")]
    m = re.search(r"place on (\d+) \((\d+) MiB to move\)", placing[0]) if placing else None
    want = (sum(before.values()) - before.get(node, 0)) / 1024
    print(f"  ..   Placing line: {placing[0] if placing else None}; numa_stat off node {node}: {want:.0f} MiB")
    t.check(m is not None and int(m.group(1)) == node and abs(int(m.group(2)) - want) <= max(4, 0.03 * want),
            f"the MiB A's group had to move are numa_stat's off node {node} ({want:.0f}): "
            f"{m.group(0) if m else placing}")


def body():
    topo = npvm.Topology(4, mem_mb=512, cpus=1)
    vm = sysvm.SysVM("service-podman-4", topo)
    vm.add_workload()
    res = vm.run(SCRIPT, timeout=900)
    t = sysvm.checked(res)
    # 1
    print(f"  ..   podman {res.get('podman-version')}; {res.get('podman-info')}; {res.get('crun-version')}; "
          f"{res.get('conmon-version')}")
    t.check((res.get("podman-info") or "").startswith("crun ") and " systemd " in (res.get("podman-info") or ""),
            f"podman runs crun with the systemd cgroup manager: {res.get('podman-info')}")
    t.eq(res.get("start-active"), "active", "numaplaced is active under its unit")
    t.eq(res.get("backend"), 's "systemd"', "Backend=auto picked the systemd backend")
    # 2: B
    t.eq((res.get("b-run-rc") or "").split()[:1], ["0"], f"podman run B (--cpuset-cpus 2): {res.get('b-run-rc')}")
    t.eq(res.get("b-ready"), "0", "B's memory is touched")
    t.eq(res.get("b-runtime"), "crun", "B runs under crun")
    bcg = res.get("b-cgroup") or ""
    print(f"  ..   B: cgroup {bcg!r}, unit {res.get('b-unit')}, scope AllowedCPUs/AllowedMemoryNodes "
          f"{res.get('b-scope-before')!r}, its cgroup's cpuset.cpus/cpuset.mems {res.get('b-cpuset-before')!r}")
    t.eq(res.get("b-cpuset-before"), "2 2", "B's cgroup's cpuset.cpus and cpuset.mems (crun's) are 2")
    t.eq(res.get("b-cpuset-after"), "2 2", "B's cgroup's cpuset.cpus and cpuset.mems unchanged")
    t.eq(res.get("b-cpuset-stopped"), "2 2", "B's cgroup's cpuset.cpus and cpuset.mems unchanged after the stop")
    t.eq(res.get("b-lists-before"), "2 2", "B's Cpus_allowed_list and Mems_allowed_list are 2")
    t.eq(res.get("b-state"), 's "foreign"', f"B is foreign ({res.get('b-decision')})")
    bdec = res.get("b-decision") or ""
    bid = res.get("b-id") or "?"
    t.check("narrowed by someone else" in bdec and f"(cgroup /machine.slice/libpod-{bid}.scope" in bdec,
            f"B's Decision names the narrowing and its container's cgroup: {bdec}")
    bp = res.get("b-pid") or "0"
    t.check(any(j.startswith(f"Leaving {bp} (np-workload): ") for j in res.all("journal")),
            f"the journal says B's workload {bp} is left alone")
    t.eq(res.get("b-state-after"), 's "foreign"', "B is still foreign at the end")
    t.eq(res.get("b-scope-after"), res.get("b-scope-before"), "B's scope's AllowedCPUs/AllowedMemoryNodes unchanged")
    t.eq(res.get("b-lists-after"), "2 2", "B's Cpus_allowed_list and Mems_allowed_list still 2")
    t.eq(res.get("b-scope-stopped"), res.get("b-scope-before"), "B's scope unchanged after the stop")
    t.eq(res.get("b-lists-stopped"), "2 2", "B's lists still 2 after the stop")
    bb, ba = node_kb(res.get("b-numa-before")), node_kb(res.get("b-numa-after"))
    for name, kb in (("before", bb), ("after", ba)):
        total = sum(kb.values())
        share = kb.get(2, 0) / total if total else 0.0
        t.check(share >= 0.95, f"B {name}: {share:.3f} of its {total} kB on node 2")
    # 3: A
    t.eq((res.get("a-run-rc") or "").split()[:1], ["0"], f"podman run A: {res.get('a-run-rc')}")
    t.eq(res.get("a-ready"), "0", "A's memory is touched")
    aid = res.get("a-id") or "?"
    acg = (res.get("a-cgroup") or "").split("::", 1)[-1]
    scope_cg = f"/machine.slice/libpod-{aid}.scope"
    print(f"  ..   A: cgroup {acg!r}, unit {res.get('a-unit')}, scope Delegate/Slice "
          f"{res.get('a-scope-delegate')!r}; conmon in {res.get('conmon-cgroup')!r}")
    t.check(acg == scope_cg or acg.startswith(scope_cg + "/"), f"A's cgroup {acg!r} is in {scope_cg}")
    m = glob_match(acg, default_globs())
    t.check(m is not None and m[1] == scope_cg,
            f"a default Groups= glob matches A's scope: {m} (globs {default_globs()})")
    t.eq(res.get("a-unit"), f"libpod-{aid}.scope", "A's unit is its libpod scope")
    t.eq((res.get("a-bus-unit") or "").strip(), f's "libpod-{aid}.scope"', "the daemon's Unit of A")
    t.check((res.get("a-bus-group") or "").startswith('o "/org/numaplaced1/group/'),
            f"A's Group is an object path: {res.get('a-bus-group')}")
    t.eq((res.get("a-group-name") or "").strip(), f's "/machine.slice/libpod-{aid}.scope"',
         "its Group object's Name, A alone: the scope the default Groups= glob matched")
    t.eq((res.get("a-group-kind") or "").strip(), 's "cgroup"', "its Kind")
    t.eq((res.get("a-group-members") or "").split(), ["au", "1", res.get("a-pid") or "?"], "its Members: A")
    t.eq(res.get("a-scope-before"), "  ", "A's scope had no AllowedCPUs/AllowedMemoryNodes before")
    t.eq(res.get("a-lists-before"), "0-3 0-3", "A ran on the whole machine before")
    managed = (res.get("a-managed") or "").split()
    ap = res.get("a-pid") or "0"
    print(f"  ..   A managed {res.get('a-placed-after-s')} s after Resume() ({res.get('a-decision-managed')}), "
          f"its move ended by {res.get('a-moved-after-s')} s; Decision {res.get('a-decision')}")
    t.eq((res.get("pause-rc"), res.get("resume-rc")), ("0", "0"), "Pause() and Resume() around A's start")
    t.check(ap != "0" and ap in managed, f"the policy manages A's workload {ap} (ManagedProcesses {managed})")
    t.eq(res.get("a-state"), 's "placed"', "A's State")
    tgt = (res.get("a-target") or "").split()
    t.check(len(tgt) == 3 and tgt[:2] == ["au", "1"], f"A on one node: {tgt}")
    node = int(tgt[2]) if len(tgt) == 3 else -1
    kb = node_kb(res.get("a-numa"))
    total = sum(kb.values())
    share = kb.get(node, 0) / total if total else 0.0
    t.check(share >= 0.95, f"A: {share:.3f} of its {total} kB on node {node}")
    t.check(node != 2, f"A is not placed on node 2, B's pinned node ({node})")
    # one vCPU per node: node N's CPU is N
    t.eq(res.get("a-scope-placed"), f"{node} {node} ", "A's scope's AllowedCPUs/AllowedMemoryNodes while placed")
    t.eq(res.get("a-lists-placed"), f"{node} {node}", "A's Cpus_allowed_list/Mems_allowed_list while placed")
    t.eq(res.get("a-effective-mems"), str(node), "A's scope's EffectiveMemoryNodes")
    confined = f"Confined pid {ap} (np-workload) to nodes {node}, CPUs {node} (systemd)"
    t.check(confined in res.all("journal"), f"the journal says: {confined}")
    # the group named once it has two significant processes
    jp = res.get("j-pid") or "0"
    jcg = (res.get("j-cgroup") or "").split("::", 1)[-1]
    t.eq((res.get("j-exec-rc") or "").split()[:1], ["0"], f"podman exec into A: {res.get('j-exec-rc')}")
    t.check(jcg == scope_cg or jcg.startswith(scope_cg + "/"), f"the exec'd process's cgroup {jcg!r} is in {scope_cg}")
    jdec = res.get("j-decision") or ""
    print(f"  ..   joiner {jp}: {res.get('j-state')}, {res.get('j-target')}, {jdec}")
    t.eq(res.get("j-target"), res.get("a-target"), "the exec'd process joins A's node")
    t.check(f"of its group {scope_cg}" in jdec, f"its Decision names A's group {scope_cg}: {jdec}")
    adec = res.get("a-decision-group") or ""
    t.check(adec.startswith(f's "with the 2 processes of its group {scope_cg}:'),
            f"A's Decision then begins with its group: {adec}")
    t.eq(res.get("a-state-group"), 's "placed"', "A still placed")
    t.eq(res.get("a-target-group"), res.get("a-target"), "A still on its node")
    t.eq(res.get("a-scope-group"), f"{node} {node} ", "A's scope still carries the target")
    t.eq(res.get("j-lists"), f"{node} {node}", "the exec'd process runs on the target")
    # the group on the bus
    t.eq(res.get("j-group"), res.get("a-bus-group"), "the exec'd process points to A's Group object")
    t.eq((res.get("g-name") or "").strip(), f's "{scope_cg}"', "the Group object's Name")
    t.eq(sorted((res.get("g-members") or "").split()[2:], key=int), sorted([ap, jp], key=int),
         f"its Members: A and the exec'd process ({res.get('g-members')})")
    t.eq(res.get("g-target"), res.get("a-target"), "its TargetNodes: A's node")
    t.eq(res.get("g-state"), 's "placed"', "its State")
    gdec = res.get("g-decision") or ""
    t.check(gdec.startswith('s "') and not gdec.startswith('s "with the'),
            f"its Decision, without the members' prefix: {gdec}")
    print(f"  ..   the group: MemoryBytes {res.get('g-memory')}, Locality {res.get('g-locality')}")
    t.check(f"libpod-{aid}.scope" in (res.get("state-file") or ""),
            f"the state file records A's scope: {res.get('state-file')}")
    # the group's memory per node came from its scope's memory.numa_stat
    check_numa_stat(t, res, ap, jp, node)
    # 4
    t.eq(res.get("stop-rc"), "0", "systemctl stop numaplaced")
    t.eq(res.get("stop-result"), "success", "it stopped cleanly")
    t.eq(res.get("a-scope-stopped"), res.get("a-scope-before"), "A's scope's original AllowedCPUs/AllowedMemoryNodes")
    t.eq(res.get("a-lists-stopped"), "0-3 0-3", "A's Cpus_allowed_list/Mems_allowed_list the whole machine again")
    t.eq(res.get("j-lists-stopped"), "0-3 0-3", "the exec'd process's too")
    t.eq(res.get("a-alive"), "1 1", "both containers' workloads still run")
    for line in res.all("journal"):
        print(f"  ..   {line}")
    return t.finish()


if __name__ == "__main__":
    npvm.run_test("service-podman-4", body)
