#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""PostgreSQL 15 from Debian's packages under the real systemd, placed by
numaplaced as one group (service-pg-4): the Debian 12 system of sysvm.py
(systemd as PID 1, cgroup v2) on 4 NUMA nodes of 768 MB with 2 CPUs each,
numaplaced run by systemd under its installed unit with the shipped
/etc/numaplaced.conf (Backend=auto picks the systemd backend).

The cluster is Debian's own postgresql@15-main.service, created by the
package's postinst when the image was built, with
 - a drop-in giving it NUMAPolicy=interleave and NUMAMask=all, so that
   every process of the cluster, and so its shared memory, starts spread
   over the four nodes;
 - shared_buffers=320MB in conf.d (and wal_level=minimal,
   max_wal_senders=0, max_wal_size=256MB: the initial load writes no WAL
   and the WAL stays small on the 2 GB disk).

Steps, each checked on the host:
 1. pgbench -i at scale 22 (pgbench_accounts and its index, 345 MB, are
    bigger than the buffers). The cluster is restarted (the load left the
    buffers full of pages mapped by no live process, which nothing can
    move: migrate_pages(2) and the kernel's cpuset migration go by page
    tables), then a session, the "holder", reads the table and its index
    with pg_prewarm (a bulk load or a sequential scan goes through a small
    ring of buffers) and stays connected, idle: pg_buffercache shows every
    buffer used, and the holder's backend maps every page of the buffers,
    so its numa_maps line of the main shared memory segment
    (MAP_SHARED|MAP_ANONYMOUS, `file=/dev/zero\\040(deleted)`) counts the
    buffers' pages per node. Before the daemon runs they are spread evenly.
 2. systemctl start numaplaced, with the shipped MinProcessMemory=300M
    and MinProcessCPU=0.12 in a drop-in;
    pgbench -c 4 -j 2 -R 8 -T 100 (8 transactions a second: unthrottled,
    the four backends take
    1.5 CPUs under TCG, more than one node has, and the daemon rightly
    spreads them).
 3. Twice, 10 s apart, every process of the cluster is sampled (VmRSS,
    RssShmem, RssAnon, CPU ticks, and the daemon's State, MemoryBytes,
    CPUUsage and Decision when it has a Process object) and printed with
    its CPU: none passes both thresholds alone (a backend holds the part
    of the buffers it touched plus ~12 MB, the holder the buffers at no
    CPU); the sum the daemon makes (its private pages, the segment once,
    the backends' CPU: np_classify_groups()) is printed, as these samples
    see it.
 4. The cluster becomes significant as one group and the policy places it:
    the unit's cgroup gets a cpuset.mems; every process of the cluster the
    daemon has an object for is "placed", all with the same TargetNodes,
    one node, each Decision saying it was decided with the other processes
    of its unit (or joined them); the unit's AllowedCPUs and
    AllowedMemoryNodes are that node's.
 5. At least 95% of the segment's pages (the holder's numa_maps) are on
    that node right after the placement and in every sample until 10 s
    before pgbench's end (its backends exit then and the daemon lets the
    unit go, unless it holds another of its processes: the postmaster
    became significant in one run of five); pgbench exits 0 with no
    failed transaction and no error (its tps line is printed).
 6. systemctl stop numaplaced: the unit's AllowedCPUs/AllowedMemoryNodes
    are exactly what they were before the daemon ran (empty), and every
    process of the cluster has Cpus_allowed_list and Mems_allowed_list of
    the whole machine again.
Printed only: the journal's placements, pgmigrate_success against the
daemon's MigratedBytes, what the daemon does once pgbench's backends are
gone, and the processes' memory policy after the stop.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402
import sysvm  # noqa: E402

NAME = "service-pg-4"
NODES = 4
NODE_MB = 768
CPUS = 2
SCALE = 22
BENCH_SEC = 100
RATE = 8

# The thresholds, which no process of the cluster passes alone: a backend's
# resident memory is the part of the shared buffers it touched plus about
# 12 MB (20 to 65 MB), the holder's (the buffers) comes with no CPU. The
# shipped MinProcessMemory=300M; MinProcessCPU= lowered in a drop-in from the
# shipped 0.5: a transaction costs the backends 0.05 to 0.09 CPU seconds
# under TCG, so at 8 a second the four took 0.73 CPU in one run and 0.48 in
# another (at 0.5 the group then passed at some scans only: placed 105 s
# after the start at 10 a second); more transactions are no way out (at 12
# a second, beside another test run, pgbench fell behind and the backends
# took 1.76 CPU, more than a node's 1.7 at 85%). With 256 MB of buffers and
# 4 transactions a second the group fell short of the memory too (290 MiB).
# On another machine the four took 0.07 to 0.09 CPU each, the group 0.3:
# at 0.25 it was placed only 148 s after the start, so the bar is 0.12,
# which a backend alone (0.05 to 0.18) may pass but never with its memory.
MIN_MEMORY_MIB = 300
MIN_CPU = 0.12

PG_CONF = """# service-pg-4 (tests/vm/test_service_pg.py)
shared_buffers = 320MB
# pgbench -i writes no WAL for the tables it creates, and the WAL stays
# small on the test's 2 GB disk
wal_level = minimal
max_wal_senders = 0
max_wal_size = 256MB
"""

PG_DROPIN = """# service-pg-4 (tests/vm/test_service_pg.py): the cluster's memory starts
# spread over every node
[Service]
NUMAPolicy=interleave
NUMAMask=all
"""

SCRIPT = r"""
set -u
R() { echo "NPVM-R $*"; }
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
U=postgresql@15-main.service
CG=/sys/fs/cgroup/system.slice/system-postgresql.slice/$U
BIN=/usr/lib/postgresql/15/bin
PGDATA=/var/lib/postgresql/15/main
pg() { runuser -u postgres -- "$@"; }
sql() { pg psql -XAtq -c "$1"; }
wait_active() {
    for i in $(seq 1 120); do
        [ "$(systemctl is-active numaplaced)" = active ] && busctl get-property $M Scans >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    return 1
}
pg_pids() { tr '\n' ' ' <$CG/cgroup.procs 2>/dev/null; }
# "0=kB 1=kB ..." of the numa_maps lines of PID matching REGEX
numa_kb() {
    awk -v re="$2" '$0 ~ re { ps = 4; for (i = 2; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) ps = substr($i, 19)
        for (i = 2; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); s[a[1]] += a[2] * ps } }
        END { for (n in s) printf "%s=%d ", n, s[n] }' /proc/$1/numa_maps
}
# every process of the cluster: its memory and CPU ticks (one awk), the
# daemon's view of those it has an object for (one busctl each), and the
# holder's pages of the shared memory segment. Cheap: under TCG every fork
# counts.
sample() {
    local up x pids objs files p v
    read -r up x </proc/uptime
    pids=$(pg_pids)
    objs=$(busctl tree --list org.numaplaced1 2>/dev/null | sed -n 's|^/org/numaplaced1/process/||p' | tr '\n' ' ')
    R "sample $1 $up managed $(busctl get-property $M ManagedProcesses 2>/dev/null | cut -d' ' -f3-)"
    files=
    for p in $pids; do files="$files /proc/$p/status /proc/$p/stat"; done
    awk -v tag="$1" '
        FILENAME ~ /status$/ && /^(VmRSS|RssAnon|RssFile|RssShmem):/ { sub(":", "", $1); v[$1] = $2 }
        FILENAME ~ /stat$/ { printf "NPVM-R proc %s pid=%s ticks=%d VmRSS=%s RssAnon=%s RssFile=%s RssShmem=%s\n",
            tag, $1, $14 + $15, v["VmRSS"], v["RssAnon"], v["RssFile"], v["RssShmem"]; delete v }' $files 2>/dev/null
    for p in $objs; do
        case " $pids " in *" $p "*) ;; *) continue ;; esac
        v=$(busctl get-property org.numaplaced1 /org/numaplaced1/process/$p org.numaplaced1.Process \
            State MemoryBytes CPUUsage TargetNodes Decision 2>/dev/null | tr '\n' '|')
        R "obj $1 $p|$v"
    done
    R "shm $1 $(numa_kb $HB dev/zero)"
    R "unit $1 $(cg_cpuset)"
}
# the unit's cgroup cpuset.cpus and cpuset.mems (what systemd wrote for its
# AllowedCPUs/AllowedMemoryNodes; absent while no cpuset is set): read with
# builtins, since systemctl waits for PID 1, which is blocked while the
# kernel moves the unit's pages in its write of cpuset.mems
cg_cpuset() {
    local c= m=
    read -r c 2>/dev/null <$CG/cpuset.cpus
    read -r m 2>/dev/null <$CG/cpuset.mems
    echo "cpus=$c mems=$m"
}
# a cheap sample: the unit's cpuset, the daemon's managed processes and the
# holder's pages of the segment
light() {
    local up x
    read -r up x </proc/uptime
    R "light $1 $up $(cg_cpuset) managed=$(busctl get-property $M ManagedProcesses | cut -d' ' -f3- | tr ' ' ,) \
shm $(numa_kb $HB dev/zero)"
}
# the share (per mille) of the holder's segment pages on the nodes "a b c"
share() {
    numa_kb $HB dev/zero | awk -v nodes="$1" '{ split(nodes, w, " "); for (i = 1; i <= NF; i++) { split($i, a, "=");
        t += a[2]; for (j in w) if (w[j] == a[1]) o += a[2] } } END { print t ? int(1000 * o / t) : 0 }'
}

R kernel "$(uname -r)"
R cgroup "$(stat -fc %T /sys/fs/cgroup)"
R pid1 "$(cat /proc/1/comm)"
R pg-version "$($BIN/postgres --version)"
R mem-nodes "$(for n in 0 1 2 3; do awk '/MemTotal/ {printf "%d ", $4}' /sys/devices/system/node/node$n/meminfo; done)"

# the cluster, as systemd starts it, with the drop-in and conf.d file
systemctl start $U; R pg-start-rc $?
for i in $(seq 1 240); do pg $BIN/pg_isready -q && break; sleep 0.5; done
R pg-ready $(pg $BIN/pg_isready >/dev/null 2>&1; echo $?)
R pg-active $(systemctl is-active $U)
R shared-buffers "$(sql 'SHOW shared_buffers')"
R numa-props "$(systemctl show -p NUMAPolicy -p NUMAMask --value $U | tr '\n' ' ')"
R before-allowed "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value $U | tr '\n' ' ')"

# 1. the data, bigger than the buffers, and the buffers filled
t0=$(date +%s)
pg $BIN/pgbench -i -I dtGvp -s __SCALE__ -q postgres >/tmp/init.out 2>&1; R init-rc $?
R init-sec $(( $(date +%s) - t0 ))
tail -1 /tmp/init.out | while read -r l; do R init-out "$l"; done
R data-bytes "$(sql "SELECT pg_total_relation_size('pgbench_accounts')")"
sql 'CREATE EXTENSION pg_prewarm' >/dev/null; R ext-prewarm $?
sql 'CREATE EXTENSION pg_buffercache' >/dev/null; R ext-buffercache $?
# The load left the buffers full of pages that processes now gone touched:
# pages of the segment no live process maps, which neither migrate_pages(2)
# nor the kernel's cpuset migration can reach (both walk page tables). A
# restart empties the buffers; the holder then reads every one of them.
systemctl restart $U; R pg-restart-rc $?
for i in $(seq 1 240); do pg $BIN/pg_isready -q && break; sleep 0.5; done
PM=$(head -1 $PGDATA/postmaster.pid)
R postmaster $PM $(systemctl show -p MainPID --value $U)
R postmaster-policy "$(grep -m1 -o -E '^[0-9a-f]+ [a-z]+(:[0-9,-]+)?' /proc/$PM/numa_maps | cut -d' ' -f2)"
R pm-shm-maps "$(grep -E 'dev/zero|SYSV' /proc/$PM/maps | tr -s ' ' | tr '\n' ';')"
R before-lists $(awk '/^(Cpus|Mems)_allowed_list/ {print $2}' /proc/$PM/status)
t0=$(date +%s)
( { echo "SELECT pg_backend_pid();"
    echo "SELECT pg_prewarm('pgbench_accounts') + pg_prewarm('pgbench_accounts_pkey');"
    echo "SELECT 'prewarmed';"
    exec sleep 100000; } | runuser -u postgres -- psql -XAtq >/tmp/holder.out 2>&1 ) &
for i in $(seq 1 1200); do grep -q prewarmed /tmp/holder.out && break; sleep 0.5; done
R prewarm-sec $(( $(date +%s) - t0 ))
R holder-out "$(tr '\n' ' ' </tmp/holder.out)"
HB=$(head -1 /tmp/holder.out)
R holder $HB
R buffers "$(sql 'SELECT count(*), count(relfilenode) FROM pg_buffercache' | tr '|' ' ')"
grep -E 'dev/zero|SYSV' /proc/$HB/numa_maps | while read -r l; do R holder-shm-before "$l"; done
grep -E 'dev/zero|SYSV' /proc/$PM/numa_maps | while read -r l; do R pm-shm-before "$l"; done
R holder-kb-before $(numa_kb $HB dev/zero)

# 2. the daemon (MinProcessCPU= lowered in a drop-in), then the load
mkdir -p /etc/numaplaced.conf.d
printf '[Placement]\nMinProcessCPU=__MIN_CPU__\n' >/etc/numaplaced.conf.d/50-service-pg.conf
systemctl start numaplaced; R np-start-rc $?
wait_active; R np-active $(systemctl is-active numaplaced)
R backend $(busctl get-property $M Backend)
R conf-settings "$(grep -E '^[^#].*=' /etc/numaplaced.conf | tr '\n' ' ')"
R conf-dropins "$(ls /etc/numaplaced.conf.d 2>/dev/null | tr '\n' ' ')"
m0=$(awk '/^pgmigrate_success/ {print $2}' /proc/vmstat)
pg $BIN/pgbench -c 4 -j 2 -R __RATE__ -T __BENCH__ -P 20 postgres >/tmp/bench.out 2>&1 &
BP=$!
tb=$SECONDS
R bench-pid $BP
sleep 5

# 3. each process against the thresholds
ps -o pid=,args= -p "$(echo $(pg_pids) | tr ' ' ,)" | while read -r l; do R title "$l"; done
sample shipped
sleep 10
sample shipped
R shipped-managed $(busctl get-property $M ManagedProcesses | cut -d' ' -f3-)

# 4. the cluster placed as one group (counted from pgbench's start)
tr=$tb
# placed: the unit's cpuset.mems set (systemd sets it after the last move of
# the unit's processes) and at least two processes of the cluster managed
# (the holder's Decision, each time it changes, says what the daemon waited for)
placed=
dl=
while [ $(( SECONDS - tr )) -lt 150 ] && kill -0 $BP 2>/dev/null; do
    d=$(busctl get-property org.numaplaced1 /org/numaplaced1/process/$HB org.numaplaced1.Process Decision 2>/dev/null) ||
        d="(no object: not significant)"
    [ "$d" != "$dl" ] && { R decision $(( SECONDS - tr )) "$d"; dl=$d; }
    mems=
    read -r mems 2>/dev/null <$CG/cpuset.mems
    if [ -n "$mems" ]; then
        pids=" $(pg_pids) "
        k=0
        for p in $(busctl get-property $M ManagedProcesses | cut -d' ' -f3-); do
            case "$pids" in *" $p "*) k=$((k + 1)) ;; esac
        done
        [ $k -ge 2 ] && { placed=1; break; }
    fi
    sleep 2
done
R placed-after-start-s ${placed:+$(( SECONDS - tr ))}
R placed-mems $mems
# 5. the segment follows (the kernel moved the shared pages when the unit's
# memory nodes narrowed; the daemon moves only the private pages of the
# processes it placed)
if [ -n "$placed" ]; then
    tgt=$(echo "$mems" | tr ',' ' ')
    for i in $(seq 1 30); do
        [ $(share "$tgt") -ge 950 ] && break
        sleep 2
    done
    R settled-after-start-s $(( SECONDS - tr ))
    R shm-placed $(numa_kb $HB dev/zero)
fi
# the cluster's processes as the daemon placed them
for p in $(pg_pids); do
    v=$(busctl get-property org.numaplaced1 /org/numaplaced1/process/$p org.numaplaced1.Process \
        State TargetNodes Decision 2>/dev/null | tr '\n' '|')
    # (one that exited while read is not the cluster's any more)
    [ -n "$v" ] && [ -d /proc/$p ] && R "placed-proc $p|$v"
done
R placed-managed $(busctl get-property $M ManagedProcesses | cut -d' ' -f3-)
R placed-allowed "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value $U | tr '\n' ' ')"
R placed-effective "$(systemctl show -p EffectiveCPUs -p EffectiveMemoryNodes --value $U | tr '\n' ' ')"
sample placed
# while pgbench runs (its backends exit at its end, and the daemon lets go
# of the unit then: the last sample begins 10 s before)
while kill -0 $BP 2>/dev/null && [ $(( SECONDS - tb )) -lt $(( __BENCH__ - 10 )) ]; do
    light during
    sleep 5
done
wait $BP; R bench-rc $?
grep -v '^progress' /tmp/bench.out | while read -r l; do R bench-out "$l"; done
grep '^progress' /tmp/bench.out | while read -r l; do R bench-progress "$l"; done
R bench-errors $(grep -ci 'error\|fatal\|abort' /tmp/bench.out)
R migrated-pages $(( $(awk '/^pgmigrate_success/ {print $2}' /proc/vmstat) - m0 ))
R migrated-bytes-daemon $(busctl get-property $M MigratedBytes | cut -d' ' -f2)
# the backends of pgbench are gone: what the daemon does with the unit then
sleep 10
light after-bench
grep -E 'dev/zero|SYSV' /proc/$HB/numa_maps | while read -r l; do R holder-shm-after "$l"; done
journalctl -u numaplaced --no-pager -o cat | grep -E 'Placing|Placed|Not placing|Not moving|released|Releas|Reload' | tail -30 |
    while read -r l; do R journal "$l"; done

# 6. stop
systemctl stop numaplaced; R np-stop-rc $?
R stop-result $(systemctl show -p Result --value numaplaced)
R after-allowed "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value $U | tr '\n' ' ')"
# (a process that ended since the cgroup was listed, an autovacuum worker
# say, has no status left to read: counted apart)
for p in $(pg_pids); do
    l=$(awk '/^(Cpus|Mems)_allowed_list/ {print $2}' /proc/$p/status 2>/dev/null)
    if [ -n "$l" ]; then R after-lists $p $l; else R after-gone $p; fi
done
R after-policy $PM "$(grep -m1 -o -E '^[0-9a-f]+ [a-z]+(:[0-9,-]+)?' /proc/$PM/numa_maps | cut -d' ' -f2)"
R after-policy $HB "$(grep -m1 -o -E '^[0-9a-f]+ [a-z]+(:[0-9,-]+)?' /proc/$HB/numa_maps | cut -d' ' -f2)"
R leftover $(find /sys/fs/cgroup -name 'numaplaced*' | wc -l)
systemctl stop $U
exit 0
"""


def script():
    return (SCRIPT.replace("__SCALE__", str(SCALE)).replace("__BENCH__", str(BENCH_SEC))
            .replace("__RATE__", str(RATE)).replace("__MIN_CPU__", str(MIN_CPU)))


def node_kb(text):
    """"0=kB 1=kB ..." as {node: kB}."""
    return {int(k): int(v) for k, v in (x.split("=") for x in (text or "").split())}


def share(kb, nodes):
    total = sum(kb.values())
    return sum(kb.get(n, 0) for n in nodes) / total if total else 0.0


def samples(res, tag):
    """The samples of one phase: [(uptime, {pid: proc fields}, {pid: obj fields}, shm kB, unit)]."""
    out = []
    for k, v in res.items:
        if k == "sample" and v.split()[0] == tag:
            out.append([float(v.split()[1]), {}, {}, {}, ""])
        elif not out or not v.startswith(tag + " "):
            continue
        elif k == "proc":
            f = dict(x.split("=", 1) for x in v.split()[1:])
            out[-1][1][int(f["pid"])] = f
        elif k == "obj":
            parts = v.split(" ", 1)[1].split("|")
            out[-1][2][int(parts[0])] = parts[1:]
        elif k == "shm":
            out[-1][3] = node_kb(v.split(" ", 1)[1] if " " in v else "")
        elif k == "unit":
            out[-1][4] = v.split(" ", 1)[1] if " " in v else ""
    return out


def lights(res, tag):
    """The cheap samples of one phase: [(uptime, cpus, mems, managed pids, shm kB)]."""
    out = []
    for v in res.all("light"):
        head, _, shm = v.partition(" shm ")
        f = head.split()
        if f[0] != tag:
            continue
        kv = dict(x.split("=", 1) for x in f[2:])
        out.append((float(f[1]), kv.get("cpus", ""), kv.get("mems", ""),
                    [x for x in kv.get("managed", "").split(",") if x], node_kb(shm)))
    return out


def print_shipped(res, t):
    """Step 3: each process of the cluster against the thresholds, with
    its CPU over the ten seconds between the two samples."""
    sh = samples(res, "shipped")
    titles = {}
    for v in res.all("title"):
        pid, _, title = v.partition(" ")
        titles[int(pid)] = title.replace("postgres: 15/main: ", "")
    if len(sh) < 2:
        t.check(False, "two samples of the cluster")
        return
    (u0, p0, _, _, _), (u1, p1, o1, _, _) = sh[0], sh[1]
    print(f"  ..   against MinProcessMemory={MIN_MEMORY_MIB}M, MinProcessCPU={MIN_CPU}:")
    print("  ..     pid  VmRSS MiB  RssShmem MiB  CPU   daemon   process")
    alone = []
    private = shared = cpus = 0.0
    for pid in sorted(p1):
        f = p1[pid]
        cpu = (int(f["ticks"]) - int(p0[pid]["ticks"])) / 100 / (u1 - u0) if pid in p0 else 0.0
        rss = int(f["VmRSS"]) / 1024
        print(f"  ..   {pid:5d}  {rss:9.1f}  {int(f['RssShmem']) / 1024:12.1f}  {cpu:4.2f}"
              f"  {'object' if pid in o1 else 'none':7s}  {titles.get(pid, '?')}")
        if rss >= MIN_MEMORY_MIB and cpu >= MIN_CPU:
            alone.append(pid)
        # the daemon's sum (np_classify_groups()): members from 1/16 of
        # MinProcessMemory, their private pages, the largest shared set once
        if rss >= MIN_MEMORY_MIB / 16:
            sh_mib = (int(f["RssFile"]) + int(f["RssShmem"])) / 1024
            private += rss - sh_mib
            shared = max(shared, sh_mib)
            cpus += cpu
    print(f"  ..   significant there: {sorted(o1)}; managed: {res.get('shipped-managed')!r}")
    t.check(not alone, f"no process of the cluster passes both thresholds alone ({alone})")
    # (the daemon's own samples decide; these are 10 s of the test's)
    print(f"  ..   the cluster together, as these samples see it: {private:.0f} MiB private + {shared:.0f} MiB "
          f"shared once, {cpus:.2f} CPU")


def body():
    topo = npvm.Topology(NODES, mem_mb=NODE_MB, cpus=CPUS)
    vm = sysvm.SysVM(NAME, topo)
    vm.add_file("etc/postgresql/15/main/conf.d/50-service-pg.conf", PG_CONF)
    vm.add_file("etc/systemd/system/postgresql@15-main.service.d/50-numa.conf", PG_DROPIN)
    res = vm.run(script(), timeout=1200)
    return check(res)


def check(res):
    t = sysvm.checked(res)
    # the cluster
    t.eq(res.get("pg-start-rc"), "0", f"systemctl start postgresql@15-main ({res.get('pg-version')})")
    t.eq(res.get("pg-ready"), "0", "pg_isready")
    t.eq(res.get("shared-buffers"), "320MB", "SHOW shared_buffers")
    t.eq((res.get("numa-props") or "").split(), ["interleave", "0-3"], "the unit's NUMAPolicy and NUMAMask")
    t.eq(res.get("postmaster-policy"), "interleave:0-3", "the postmaster's memory policy (numa_maps)")
    print(f"  ..   the postmaster's shared mappings: {res.get('pm-shm-maps')}")
    # 1
    t.eq(res.get("init-rc"), "0", f"pgbench -i -s {SCALE} ({res.get('init-out')})")
    data = res.int("data-bytes", 0)
    t.check(data > 320 << 20, f"pgbench_accounts with its index ({data >> 20} MiB) is bigger than the buffers")
    print(f"  ..   pgbench -i took {res.get('init-sec')} s, the prewarm {res.get('prewarm-sec')} s")
    t.eq((res.get("buffers") or "").split(), ["40960", "40960"],
         "pg_buffercache: all 40960 buffers hold a page after pg_prewarm")
    for k in ("holder-shm-before", "pm-shm-before"):
        for line in res.all(k):
            print(f"  ..   {k}: {line}")
    before = node_kb(res.get("holder-kb-before"))
    total = sum(before.values())
    t.check(total >= 310 << 10, f"the holder's backend maps {total >> 10} MiB of the segment (the buffers)")
    t.check(len(before) == NODES and max(before.values()) <= 0.4 * total,
            f"before the daemon the segment is spread over the nodes: {before}")
    # 2
    t.eq(res.get("np-start-rc"), "0", "systemctl start numaplaced")
    t.eq(res.get("backend"), 's "systemd"', "Backend=auto picked the systemd backend")
    t.eq(res.get("conf-dropins"), "50-service-pg.conf ", "the test's drop-in (MinProcessCPU=) beside the shipped file")
    # 3
    print_shipped(res, t)
    # 4
    for x in res.all("decision"):
        print(f"  ..   the holder's Decision at {x}")
    t.check(res.get("placed-after-start-s"),
            f"the cluster placed {res.get('placed-after-start-s')} s after pgbench started")
    procs = {}
    for v in res.all("placed-proc"):
        parts = v.split("|")
        procs[int(parts[0])] = parts[1:]
    managed = (res.get("placed-managed") or "").split()
    t.check(len(procs) >= 2, f"at least two processes of the cluster significant ({sorted(procs)})")
    targets = {tuple(f[1].split()[2:]) for f in procs.values() if len(f) >= 3}
    t.check(len(targets) == 1, f"one TargetNodes for all of them: {targets}")
    tgt = [int(x) for x in next(iter(targets))] if len(targets) == 1 else []
    t.check(len(tgt) == 1, f"placed on one node: {tgt}")
    together = 0
    for pid, f in sorted(procs.items()):
        state, dec = (f[0], f[2]) if len(f) >= 3 else ("", "")
        t.check(state == 's "placed"' and str(pid) in managed, f"{pid}: State {state}, in ManagedProcesses")
        # decided with the others, or (significant later) joined them
        m = re.match(r's "with the (\d+) processes of its unit [^:]+: ', dec)
        together += bool(m and int(m.group(1)) >= 2)
        t.check((m and int(m.group(1)) >= 2) or "its unit's other processes are placed on" in dec,
                f"{pid}: placed with the other processes of its unit: {dec}")
    t.check(together >= 2, f"{together} of them decided as one unit")
    allowed = (res.get("placed-allowed") or "").split()
    if len(tgt) == 1:
        cpus = list(range(tgt[0] * CPUS, (tgt[0] + 1) * CPUS))
        t.check(len(allowed) == 2 and sysvm.expand(allowed[0]) == cpus and sysvm.expand(allowed[1]) == tgt,
                f"the unit's AllowedCPUs/AllowedMemoryNodes are node {tgt[0]}'s: {allowed}")
        placed = node_kb(res.get("shm-placed"))
        t.check(share(placed, tgt) >= 0.95,
                f"{share(placed, tgt):.3f} of the segment's {sum(placed.values()) >> 10} MiB on node {tgt[0]} "
                f"{res.get('settled-after-start-s')} s after pgbench started: {placed}")
        during = lights(res, "during")
        # (a late placement leaves none: the message says when it came
        # and what the holder's Decision said until then)
        t.check(during, f"samples while pgbench ran after the placement, "
                f"{res.get('placed-after-start-s')} s after its start (the holder's Decisions: "
                f"{'; '.join(res.all('decision'))})")
        for up, c, m, _, kb in during:
            t.check(sysvm.expand(c) == cpus and sysvm.expand(m) == tgt and share(kb, tgt) >= 0.95,
                    f"at {up:.0f} s: the unit's cgroup still on CPUs {c} and nodes {m}, "
                    f"{share(kb, tgt):.3f} of the segment on {tgt}")
    # 5
    t.eq(res.get("bench-rc"), "0", "pgbench exits 0")
    t.eq(res.get("bench-errors"), "0", "pgbench prints no error")
    out = res.all("bench-out")
    t.check("number of failed transactions: 0 (0.000%)" in out, "pgbench: no failed transaction")
    tps = [x for x in out if x.startswith("tps = ")]
    t.check(tps, f"pgbench's tps line: {tps}")
    for x in res.all("bench-progress"):
        print(f"  ..   {x}")
    print(f"  ..   pages migrated (pgmigrate_success) {res.get('migrated-pages')}, "
          f"by the daemon's own moves {res.get('migrated-bytes-daemon')} bytes")
    for x in res.all("journal"):
        print(f"  ..   journal: {x}")
    for up, c, m, man, kb in lights(res, "after-bench"):
        print(f"  ..   10 s after pgbench ended (its backends gone): managed {man}, the unit's cgroup cpus={c} "
              f"mems={m}, the segment {kb}")
    # 6
    t.eq(res.get("np-stop-rc"), "0", "systemctl stop numaplaced")
    t.eq(res.get("stop-result"), "success", "it stopped cleanly")
    t.eq(res.get("after-allowed"), res.get("before-allowed"),
         "the unit's AllowedCPUs/AllowedMemoryNodes after the stop are as before the daemon")
    whole = [f"0-{NODES * CPUS - 1}", f"0-{NODES - 1}"]
    lists = res.all("after-lists")
    t.check(len(lists) >= 7, f"the cluster's processes after the stop ({len(lists)}; "
            f"{len(res.all('after-gone'))} more ended while they were read)")
    for x in lists:
        t.eq(x.split()[1:], whole, f"process {x.split()[0]}: Cpus_allowed_list/Mems_allowed_list")
    for x in res.all("after-policy"):
        print(f"  ..   memory policy after the stop: {x}")
    t.eq(res.get("leftover"), "0", "nothing named numaplaced left in /sys/fs/cgroup")
    return t.finish()


if __name__ == "__main__":
    npvm.run_test(NAME, body)
