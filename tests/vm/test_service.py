#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The operator's day on a real Debian 12 system (issue 12): systemd as PID
1, cgroup v2, 4 NUMA nodes, numaplaced installed with `meson install
--destdir` and run by systemd under exactly its installed unit.

Steps, each checked on the host:
 1. systemctl start: active; NodeIds 0-3 and four node objects over busctl;
    the main process has exactly the unit's capabilities and NoNewPrivs
    (the hardening lines did not keep it from starting or scanning).
 2. ScanIntervalSec edited in /etc/numaplaced.conf, systemctl reload: the
    new value is in force.
 3. A broken drop-in: systemctl reload fails, the daemon stays active with
    the old value, the journal names the file and line; removed, the next
    reload succeeds.
 5. polkit: an unprivileged user reads properties but Pause() is refused;
    a rules.d rule granting org.numaplaced1.manage to that user lets it
    through; another user is still refused.
 6. systemctl stop: a transient unit's AllowedCPUs/AllowedMemoryNodes are
    as before, nothing of the daemon's is left in /sys/fs/cgroup, and it
    stopped cleanly.
 7. With the workload placed on node 1 by Place(), kill -9 of the main process: systemd
    restarts it (NRestarts + 1), it is on the bus, and the unit is either
    put back or managed by the new instance; after the last stop it is as
    it was.
 8. A service holding two significant 150 MB processes is placed as one:
    both get the same target (the unit's summed demand), >= 95% of each
    one's pages are there, the unit's AllowedCPUs/AllowedMemoryNodes are
    that target, the state file records both. Once MinSecondsBetweenMoves=
    (10 s here) has passed, the policy's Decision does not count the pages
    the kernel moved when the unit's memory nodes were set (after the last
    of the two moves) as left outside. A third process started in the
    placed unit joins its nodes and is recorded under the unit. One of the pair killed:
    the unit keeps the daemon's values; the other killed too: the unit,
    still running, is put back.
 9. A process in the root cgroup (no unit the daemon may change): Place()
    falls back to the affinity mechanism (its state record says so), and
    the stop puts its affinity back. PID 1 (init.scope), included with
    Include(1), is left alone: State excluded.
 4. A busy (0.45 CPUs, with MinProcessCPU=0.3 in a drop-in) 320 MB
    interleaved workload started as a transient service (systemd-run) is
    placed by the policy through the systemd backend
    (Backend=auto): the unit's AllowedCPUs/AllowedMemoryNodes and
    EffectiveMemoryNodes are the one target node, >= 95% of its pages are
    there, the state file records the unit and its originals; after the
    stop the unit's properties are the originals again.
"""
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
as_user() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --init-groups "$@"; }
wait_active() {
    for i in $(seq 1 120); do
        [ "$(systemctl is-active numaplaced)" = active ] && busctl get-property $M Scans >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    return 1
}

R kernel "$(uname -r)"
R cgroup "$(stat -fc %T /sys/fs/cgroup)"
R pid1 "$(cat /proc/1/comm)"
R boot-usec "$(systemctl show -p UserspaceTimestampMonotonic --value)"

# a transient unit whose cpuset properties must come out of the day unchanged
systemd-run --unit=work --property=AllowedCPUs=0-3 sleep 100000 >/dev/null 2>&1
R work-before "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value work | tr '\n' ' ')"

R phase 1 $(cut -d' ' -f1 /proc/uptime)
# 1. start
systemctl start numaplaced; R start-rc $?
wait_active; R start-active $(systemctl is-active numaplaced)
R nodeids $(prop NodeIds)
R tree-nodes $(busctl tree --list org.numaplaced1 | grep -c '^/org/numaplaced1/node/[0-9]*$')
R backend $(prop Backend)
journalctl -u numaplaced --no-pager -o cat | grep -m3 -i "backend" | while read -r l; do R backend-log "$l"; done
MP=$(systemctl show -p MainPID --value numaplaced)
R capeff $(awk '/^CapEff/ {print $2}' /proc/$MP/status)
R nonewprivs $(awk '/^NoNewPrivs/ {print $2}' /proc/$MP/status)
R seccomp $(awk '/^Seccomp:/ {print $2}' /proc/$MP/status)
s0=$(busctl get-property $M Scans | awk '{print $2}')
# (a quiet machine's interval stretches to MaxScanIntervalSec=15 s, and a
# loaded host slows the VM: wait for the next scan, at most a minute)
for i in $(seq 1 120); do
    [ "$(busctl get-property $M Scans | awk '{print $2}')" -gt "$s0" ] && break
    sleep 0.5
done
R scans-advance $s0 $(busctl get-property $M Scans | awk '{print $2}')

R phase 2 $(cut -d' ' -f1 /proc/uptime)
# 2. reload with an edited ScanIntervalSec
R interval-before $(prop ScanIntervalUSec)
# (the upper bound too, so that quiet scans do not stretch the interval)
sed -i -e 's/^#\?ScanIntervalSec=.*/ScanIntervalSec=7/' -e 's/^#\?MaxScanIntervalSec=.*/MaxScanIntervalSec=7/' \
    /etc/numaplaced.conf
R conf "$(grep -E '^(Max)?ScanIntervalSec=' /etc/numaplaced.conf | tr '\n' ' ')"
systemctl reload numaplaced; R reload-rc $?
R interval-after $(prop ScanIntervalUSec)

R phase 3 $(cut -d' ' -f1 /proc/uptime)
# 3. a broken drop-in
mkdir -p /etc/numaplaced.conf.d
printf '[Daemon]\nScanIntervalSec=banana\n' > /etc/numaplaced.conf.d/50-broken.conf
systemctl reload numaplaced; R broken-reload-rc $?
R broken-active $(systemctl is-active numaplaced)
R broken-interval $(prop ScanIntervalUSec)
R broken-journal $(journalctl -u numaplaced --no-pager | grep -c '50-broken.conf:2')
journalctl -u numaplaced --no-pager | grep '50-broken.conf:2' | tail -2 | while read -r l; do R journal-line "$l"; done
rm /etc/numaplaced.conf.d/50-broken.conf
systemctl reload numaplaced; R fixed-reload-rc $?
R fixed-interval $(prop ScanIntervalUSec)

R phase 4 $(cut -d' ' -f1 /proc/uptime)
# 4. a busy 320 MB interleaved workload as a transient service: the policy
# places it (by the affinity backend until the systemd backend lands), so
# its pages move under the unit's sandbox (seccomp, capabilities, ProtectProc);
# --duty 45: 0.45 CPUs, significant at MinProcessCPU=0.3. With one vCPU a
# node, the CPU use of everything else (TCG makes busctl and journald
# dear) must stay within 0.85 - 0.45 of a node for it to fit one node; at
# --duty 70 it once took 0.15 and the workload got two nodes
printf '[Placement]\nMinProcessCPU=0.3\n' > /etc/numaplaced.conf.d/40-busy.conf
systemctl reload numaplaced; R busy-reload-rc $?
systemd-run --unit=busy /usr/local/bin/np-workload --mb 320 --interleave 0-3 --no-thp --sweep --duty 45 \
    --no-pin >/dev/null 2>&1
sleep 1
BP=$(systemctl show -p MainPID --value busy)
R busy-pid $BP
R busy-before "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value busy | tr '\n' ' ')"
t0=$(date +%s)
for i in $(seq 1 480); do
    busctl get-property $M ManagedProcesses | grep -qw "$BP" && break
    sleep 0.5
done
R busy-managed $(prop ManagedProcesses)
R busy-placed-after-s $(( $(date +%s) - t0 ))
PO="org.numaplaced1 /org/numaplaced1/process/$BP org.numaplaced1.Process"
R busy-state $(busctl get-property $PO State)
R busy-target $(busctl get-property $PO TargetNodes)
R busy-decision "$(busctl get-property $PO Decision)"
R busy-numa $(awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); s[a[1]] += a[2] * 4 } }
    END { for (n in s) printf "%s=%d ", n, s[n] }' /proc/$BP/numa_maps)
# the mover's thread gave up CAP_SYS_NICE under the unit's system call filter
R busy-capset-warnings $(journalctl -u numaplaced --no-pager | grep -c 'cannot drop CAP_SYS_NICE')
R busy-affinity "$(taskset -pc $BP)"
R busy-effective-mems "$(systemctl show -p EffectiveMemoryNodes --value busy)"
R busy-allowed "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value busy | tr '\n' ' ')"
grep -E '^(Unit|SystemdAllowed)' /run/numaplaced/state | tr '\n' ' ' | { read -r l; R busy-state-file "$l"; }

R phase 5 $(cut -d' ' -f1 /proc/uptime)
# 5. polkit
as_user alice busctl get-property $M Scans >/dev/null 2>&1; R alice-read $?
as_user alice busctl call $M Pause >/dev/null 2>/tmp/e; R alice-pause-norule $? "$(tr '\n' ' ' </tmp/e)"
cat > /etc/polkit-1/rules.d/50-numaplaced-test.rules <<'EOF'
polkit.addRule(function(action, subject) {
    if (action.id == "org.numaplaced1.manage" && subject.user == "alice")
        return polkit.Result.YES;
});
EOF
sleep 2  # polkitd reloads its rules when the directory changes
as_user alice busctl call $M Pause >/dev/null 2>/tmp/e; R alice-pause-rule $? "$(tr '\n' ' ' </tmp/e)"
R paused $(prop Paused)
as_user bob busctl call $M Resume >/dev/null 2>/tmp/e; R bob-resume-rule $? "$(tr '\n' ' ' </tmp/e)"
busctl call $M Resume; R root-resume $?
rm /etc/polkit-1/rules.d/50-numaplaced-test.rules

R phase 6 $(cut -d' ' -f1 /proc/uptime)
# 6. stop
systemctl stop numaplaced; R stop-rc $?
R stopped $(systemctl is-active numaplaced)
R stop-result $(systemctl show -p Result --value numaplaced)
R leftover $(find /sys/fs/cgroup -name 'numaplaced*' | wc -l)
R work-after "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value work | tr '\n' ' ')"
R busy-affinity-after "$(taskset -pc $BP)"
R busy-after "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value busy | tr '\n' ' ')"
R busy-lists-after $(awk '/^(Cpus|Mems)_allowed_list/ {print $2}' /proc/$BP/status)

R phase 7 $(cut -d' ' -f1 /proc/uptime)
# 7. kill -9: systemd restarts it
systemctl start numaplaced; wait_active
# (its pages are all on one node already, so the policy leaves it: pin it)
# (the restarted daemon may be moving it back or deciding it: Place() then
# fails with a message, printed; tried again for up to 30 s)
for i in $(seq 1 15); do
    busctl --timeout=300 call $M Place uau $BP 1 1 >/dev/null 2>/tmp/e; rc=$?
    [ $rc = 0 ] && break
    R busy-pin-error "$(tr '\n' ' ' </tmp/e)"
    sleep 2
done
R busy-pin-rc $rc
R busy-replaced "$(systemctl show -p AllowedMemoryNodes --value busy)"
n0=$(systemctl show -p NRestarts --value numaplaced)
MP=$(systemctl show -p MainPID --value numaplaced)
kill -9 $MP
sleep 1
for i in $(seq 1 60); do
    NP=$(systemctl show -p MainPID --value numaplaced)
    [ "$NP" != 0 ] && [ "$NP" != "$MP" ] && wait_active && break
    sleep 0.5
done
R restart $n0 $(systemctl show -p NRestarts --value numaplaced) $MP $NP $(systemctl is-active numaplaced)
R after-restart-nodes $(busctl tree --list org.numaplaced1 | grep -c '^/org/numaplaced1/node/[0-9]*$')
R after-restart-busy "$(systemctl show -p AllowedMemoryNodes --value busy)" $(busctl get-property $M ManagedProcesses | grep -cw "$BP")
journalctl -u numaplaced --no-pager -o cat | grep -i -m3 "recover\|state file" | while read -r l; do R recovery-log "$l"; done
systemctl stop numaplaced
R busy-final "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value busy | tr '\n' ' ')"
systemctl stop numaplaced
systemctl stop busy

R phase 8 $(cut -d' ' -f1 /proc/uptime)
# 8. a unit holding two significant processes is placed as one: two 150 MB
# interleaved workloads in one service (significant from 100 MB here). The
# daemon is paused until both are significant, so that the policy sees them
# together (one that becomes significant later joins the placed unit with a
# move of its own, unit test /policy/unit-member-joins; but by then the
# first move's AllowedMemoryNodes= had the kernel move its pages)
printf '[Placement]\nMinProcessMemory=100M\nMinProcessCPU=0.1\nMinSecondsBetweenMoves=10\n' \
    > /etc/numaplaced.conf.d/60-pair.conf
systemctl start numaplaced; wait_active
busctl call $M Pause
W="/usr/local/bin/np-workload --mb 150 --interleave 0-3 --no-thp --sweep --duty 15 --no-pin --reset-policy"
# a third starts in the unit once the pair is placed (/run/pair-third)
W3="/usr/local/bin/np-workload --mb 150 --no-thp --sweep --duty 15 --no-pin"
systemd-run --unit=pair sh -c "$W & $W & (while [ ! -e /run/pair-third ]; do sleep 0.5; done; exec $W3) &
    exec sleep 100000" >/dev/null 2>&1
PP=
for i in $(seq 1 120); do
    PP=$(for p in $(cat /sys/fs/cgroup/system.slice/pair.service/cgroup.procs 2>/dev/null); do
        [ "$(cat /proc/$p/comm 2>/dev/null)" = np-workload ] && echo $p; done | tr '\n' ' ')
    [ "$(echo $PP | wc -w)" = 2 ] && break
    sleep 0.5
done
set -- $PP; PA=${1:-0}; PB=${2:-0}
R pair-pids $PA $PB
seen=0
for i in $(seq 1 240); do
    seen=1
    for p in $PA $PB; do
        busctl get-property org.numaplaced1 /org/numaplaced1/process/$p org.numaplaced1.Process State \
            >/dev/null 2>&1 || seen=0
    done
    [ $seen = 1 ] && break
    sleep 0.5
done
R pair-both-significant $seen
# (read while paused: once resumed, the daemon may place the pair before
# the next command runs)
R pair-before "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value pair | tr '\n' ' ')"
busctl call $M Resume
for i in $(seq 1 480); do
    m=$(busctl get-property $M ManagedProcesses)
    echo "$m" | grep -qw "$PA" && echo "$m" | grep -qw "$PB" && break
    sleep 0.5
done
R pair-managed $(prop ManagedProcesses)
for x in a b; do
    [ $x = a ] && p=$PA || p=$PB
    PO="org.numaplaced1 /org/numaplaced1/process/$p org.numaplaced1.Process"
    R pair-target-$x $(busctl get-property $PO TargetNodes)
    R pair-decision-$x "$(busctl get-property $PO State) $(busctl get-property $PO Decision)"
    R pair-numa-$x $(awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); s[a[1]] += a[2] * 4 } }
        END { for (n in s) printf "%s=%d ", n, s[n] }' /proc/$p/numa_maps)
done
R pair-allowed "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value pair | tr '\n' ' ')"
# once MinSecondsBetweenMoves= (10 s here) has passed, the policy decides on the
# pair again: from where their pages are after the kernel moved what the
# daemon's plans had left (the pages the two share) when the unit's memory
# nodes were set after the last move
for i in $(seq 1 60); do
    busctl get-property "org.numaplaced1" "/org/numaplaced1/process/$PA" org.numaplaced1.Process Decision |
        grep -q '"with the 2 processes of its unit pair.service: placed on' && break
    sleep 2
done
for x in a b; do
    [ $x = a ] && p=$PA || p=$PB
    R pair-decision-later-$x "$(busctl get-property org.numaplaced1 /org/numaplaced1/process/$p \
        org.numaplaced1.Process Decision)"
done
R pair-state-units $(grep -c '^Unit=pair.service' /run/numaplaced/state)
R pair-log $(journalctl -u numaplaced --no-pager -o cat | grep -c 'Placing .*with the 2 processes of its unit pair.service: ')
journalctl -u numaplaced --no-pager -o cat | grep 'Placing .*of its unit' | tail -2 | while read -r l; do R pair-log-line "$l"; done
for x in a b; do
    [ $x = a ] && p=$PA || p=$PB
    journalctl -u numaplaced --no-pager -o cat | grep "^Placed $p " | tail -1 | { read -r l; R pair-placed-$x "$l"; }
done
gone_from_managed() {
    for i in $(seq 1 120); do
        busctl get-property $M ManagedProcesses | grep -qw "$1" || return 0
        sleep 0.5
    done
    return 1
}
# a third process of the placed unit becomes significant: it joins the
# unit's nodes and is placed (recorded under the unit) too
touch /run/pair-third
PC=
for i in $(seq 1 60); do
    PC=$(for p in $(cat /sys/fs/cgroup/system.slice/pair.service/cgroup.procs 2>/dev/null); do
        [ "$(cat /proc/$p/comm 2>/dev/null)" = np-workload ] && [ $p != $PA ] && [ $p != $PB ] && echo $p
    done | head -1)
    [ -n "$PC" ] && break
    sleep 0.5
done
R pair-c-pid ${PC:-0}
for i in $(seq 1 120); do
    busctl get-property $M ManagedProcesses | grep -qw "${PC:-x}" && break
    sleep 0.5
done
PO="org.numaplaced1 /org/numaplaced1/process/${PC:-0} org.numaplaced1.Process"
R pair-c-target $(busctl get-property $PO TargetNodes)
R pair-c-decision "$(busctl get-property $PO State) $(busctl get-property $PO Decision)"
# (the Decision may be the next scan's by now: the join is in the journal)
R pair-c-joined $(journalctl -u numaplaced --no-pager -o cat | grep -c "Placing ${PC:-x} .*it joins them there")
# (or, when the scan that found it saw it grown past the unit's room, the
# unit was decided again with it as a member)
R pair-c-with-unit $(journalctl -u numaplaced --no-pager -o cat | grep -c "Placing ${PC:-x} .*with the 3 processes of its unit pair.service: ")
# (the unit's demand grew by the third: the policy may have grown it onto
# a neighbour meanwhile, so the pair's target is read again)
R pair-c-unit-target $(busctl get-property org.numaplaced1 /org/numaplaced1/process/$PA org.numaplaced1.Process \
    TargetNodes)
R pair-c-state-units $(grep -c '^Unit=pair.service' /run/numaplaced/state)
[ -n "$PC" ] && kill $PC; gone_from_managed ${PC:-x}; R pair-c-gone $?
R pair-target-now $(busctl get-property org.numaplaced1 /org/numaplaced1/process/$PB org.numaplaced1.Process \
    TargetNodes)
# the placed processes die while their unit lives on: the unit keeps the
# daemon's values while one of them is placed, and is put back with the last
kill $PA; gone_from_managed $PA; R pair-one-gone $?
R pair-one-gone-allowed "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value pair | tr '\n' ' ')"
kill $PB; gone_from_managed $PB; R pair-both-gone $?
R pair-both-gone-allowed "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value pair | tr '\n' ' ')"
R pair-both-gone-active $(systemctl is-active pair)
rm -f /etc/numaplaced.conf.d/60-pair.conf

R phase 9 $(cut -d' ' -f1 /proc/uptime)
# 9. a process no unit of its own can hold (moved into the root cgroup,
# which systemd calls -.slice): Place() falls back to the affinity mechanism
/usr/local/bin/np-workload --mb 8 --no-thp --sweep --duty 5 --no-pin >/dev/null 2>&1 &
RP=$!
sleep 1
echo $RP > /sys/fs/cgroup/cgroup.procs; R root-move $?
R root-cgroup "$(cat /proc/$RP/cgroup)"
busctl --timeout=120 call $M Place uau $RP 1 2 >/tmp/e 2>&1; R root-place $? "$(tr '\n' ' ' </tmp/e)"
R root-affinity "$(taskset -pc $RP)"
awk -v p=$RP '$0 == "[process " p "]" { f = 1; next } /^\[/ { f = 0 } f && /^Backend=/' /run/numaplaced/state | { read -r l; R root-state "$l"; }
# PID 1 (init.scope) included by hand: still left alone, as excluded
busctl call $M Include u 1; R include1 $?
s0=$(busctl get-property $M Scans | awk '{print $2}')
for i in $(seq 1 60); do
    [ $(busctl get-property $M Scans | awk '{print $2}') -ge $((s0 + 2)) ] && break
    sleep 0.5
done
R pid1-state "$(busctl get-property org.numaplaced1 /org/numaplaced1/process/1 org.numaplaced1.Process State 2>&1)"
systemctl stop numaplaced
R root-affinity-after "$(taskset -pc $RP)"
kill $RP
R pair-after "$(systemctl show -p AllowedCPUs -p AllowedMemoryNodes --value pair | tr '\n' ' ')"
systemctl stop work pair
# the daemon's placements over the day, for the log of a failed run
journalctl -u numaplaced --no-pager -o cat | grep -E 'Placing|Placed|Not placing|released|exited|fall' | tail -40 |
    while read -r l; do R journal-placement "$l"; done
exit 0
"""

# CAP_SYS_NICE (23), CAP_SYS_PTRACE (19), CAP_DAC_OVERRIDE (1): the unit's
# CapabilityBoundingSet
UNIT_CAPS = (1 << 23) | (1 << 19) | (1 << 1)


def body():
    topo = npvm.Topology(4, mem_mb=512, cpus=1)
    vm = sysvm.SysVM("service-4", topo)
    vm.add_workload()
    res = vm.run(SCRIPT, timeout=900)
    t = sysvm.checked(res)
    # the uptime at which each step of the script began
    print("  ..   steps began at (uptime s): " + ", ".join(res.all("phase")))
    # 1
    t.eq(res.get("start-rc"), "0", "systemctl start numaplaced")
    t.eq(res.get("start-active"), "active", "numaplaced is active")
    t.eq((res.get("nodeids") or "").split(), ["au", "4", "0", "1", "2", "3"], "NodeIds over busctl")
    t.eq(res.get("tree-nodes"), "4", "four node objects in busctl tree")
    caps = int(res.get("capeff") or "0", 16)
    t.eq(caps, UNIT_CAPS, "the main process has exactly the unit's capabilities (CapEff %x)" % caps)
    t.eq(res.get("nonewprivs"), "1", "NoNewPrivs")
    t.eq(res.get("seccomp"), "2", "a system call filter is in force")
    s0, s1 = (int(x) for x in (res.get("scans-advance") or "0 0").split())
    t.check(s1 > s0, f"it scans under the unit's sandbox ({s0} -> {s1} within a minute)")
    # 2
    t.eq(res.get("reload-rc"), "0", "systemctl reload after editing ScanIntervalSec")
    t.eq((res.get("interval-after") or "").split(), ["t", "7000000"], "ScanIntervalUSec after the reload")
    # 3
    t.check(res.get("broken-reload-rc") not in (None, "0"),
            f"systemctl reload fails with a broken drop-in (exit {res.get('broken-reload-rc')})")
    t.eq(res.get("broken-active"), "active", "the daemon stays active")
    t.eq((res.get("broken-interval") or "").split(), ["t", "7000000"], "the old ScanIntervalUSec stays")
    t.check(int(res.get("broken-journal") or "0") >= 1, "journalctl -u numaplaced names 50-broken.conf:2")
    t.eq(res.get("fixed-reload-rc"), "0", "reload succeeds once the drop-in is gone")
    # 4
    bp = res.get("busy-pid")
    t.check(bp and bp in (res.get("busy-managed") or "").split(), f"the policy placed the busy service's process {bp}")
    t.eq(res.get("busy-capset-warnings"), "0", "the mover could drop CAP_SYS_NICE (capset allowed by the unit's filter)")
    t.eq(res.get("busy-state"), 's "placed"', "its State")
    tgt = (res.get("busy-target") or "").split()
    t.eq(res.get("busy-reload-rc"), "0", "systemctl reload with MinProcessCPU=0.3")
    t.check(len(tgt) == 3 and tgt[:2] == ["au", "1"], f"one target node: {tgt} ({res.get('busy-decision')})")
    kb = {int(k): int(v) for k, v in (x.split("=") for x in (res.get("busy-numa") or "").split())}
    total = sum(kb.values())
    if len(tgt) == 3 and total:
        share = kb.get(int(tgt[2]), 0) / total
        t.check(share >= 0.95, f"{share:.3f} of its {total} kB on node {tgt[2]} (pages moved under the sandbox)")
    t.eq(res.get("backend"), 's "systemd"', "Backend=auto picked the systemd backend (systemd owns the v2 tree)")
    t.eq(res.get("busy-before"), "  ", "the busy unit had no AllowedCPUs/AllowedMemoryNodes before")
    if len(tgt) == 3:
        # one vCPU per node here: node N's CPU is N
        t.eq(res.get("busy-allowed"), f"{tgt[2]} {tgt[2]} ", "the unit's AllowedCPUs and AllowedMemoryNodes")
        t.eq(res.get("busy-effective-mems"), tgt[2], "systemctl show -p EffectiveMemoryNodes: one node")
    t.check("Unit=busy.service" in (res.get("busy-state-file") or ""),
            f"the state file records the unit and its originals: {res.get('busy-state-file')}")
    t.eq(res.get("busy-after"), "  ", "the unit's original (empty) AllowedCPUs/AllowedMemoryNodes after the stop")
    t.eq((res.get("busy-lists-after") or "").split(), ["0-3", "0-3"],
         "its Cpus_allowed_list and Mems_allowed_list are the whole machine again")
    t.check((res.get("busy-affinity-after") or "").endswith(": 0-3"),
            f"its CPU affinity is back to 0-3 after stop: {res.get('busy-affinity-after')}")
    # 5
    t.eq(res.get("alice-read"), "0", "an unprivileged user reads properties")
    t.check((res.get("alice-pause-norule") or "").startswith("1 "),
            f"Pause() refused to alice without a rule: {res.get('alice-pause-norule')}")
    t.eq((res.get("alice-pause-rule") or "").strip(), "0", "Pause() allowed to alice by a rules.d rule")
    t.eq((res.get("paused") or "").split(), ["b", "true"], "and the daemon is paused")
    t.check((res.get("bob-resume-rule") or "").startswith("1 "),
            f"Resume() still refused to bob: {res.get('bob-resume-rule')}")
    t.eq(res.get("root-resume"), "0", "root resumes")
    # 6
    t.eq(res.get("stop-rc"), "0", "systemctl stop numaplaced")
    t.eq(res.get("stop-result"), "success", "it stopped cleanly")
    t.eq(res.get("leftover"), "0", "nothing named numaplaced left in /sys/fs/cgroup")
    t.eq(res.get("work-after"), res.get("work-before"), "the work unit's AllowedCPUs/AllowedMemoryNodes")
    # 7
    rs = (res.get("restart") or "").split()
    t.check(len(rs) == 5 and int(rs[1]) == int(rs[0]) + 1 and rs[2] != rs[3] and rs[4] == "active",
            f"kill -9: systemd restarted it (NRestarts, old and new MainPID, state: {rs})")
    t.eq(res.get("after-restart-nodes"), "4", "the restarted daemon is on the bus")
    for e in res.all("busy-pin-error"):
        print(f"  ..   Place() before the kill, tried again: {e}")
    t.eq(res.get("busy-pin-rc"), "0", "Place() of the workload on node 1 before the kill")
    t.eq(res.get("busy-replaced"), "1", "its unit's AllowedMemoryNodes then")
    ar = (res.get("after-restart-busy") or "").split()
    # the new instance put the unit back (empty) or holds it (managed): never
    # a unit left narrowed that no one manages
    t.check(ar in (["0"], ["1"]) or (len(ar) == 2 and ar[1] == "1"),
            f"after kill -9 and restart, the unit is restored or managed: {ar}")
    t.eq(res.get("busy-final"), "  ", "after the final stop the unit is as it was")
    # 8
    pa, pb = (res.get("pair-pids") or "0 0").split()
    t.check(pa != "0" and pb != "0", f"the pair service runs two workloads ({pa}, {pb})")
    t.eq(res.get("pair-both-significant"), "1", "both workloads of the pair became significant while paused")
    managed = (res.get("pair-managed") or "").split()
    t.check(pa in managed and pb in managed, f"both placed by the policy (ManagedProcesses {managed})")
    ta, tb = (res.get("pair-target-a") or "").split(), (res.get("pair-target-b") or "").split()
    t.check(len(ta) >= 3 and ta == tb, f"one target for the unit's two processes ({ta}, {tb}; "
            f"{res.get('pair-decision-a')}; {res.get('pair-decision-b')})")
    nodes = [int(x) for x in ta[2:]] if len(ta) >= 3 else []
    for x in ("a", "b"):
        kb = {int(k): int(v) for k, v in (y.split("=") for y in (res.get(f"pair-numa-{x}") or "").split())}
        total = sum(kb.values())
        share = sum(kb.get(n, 0) for n in nodes) / total if total else 0.0
        t.check(share >= 0.95, f"pair {x}: {share:.3f} of its {total} kB on the unit's nodes {nodes}")
    if nodes:
        # one vCPU per node here: node N's CPU is N
        got = (res.get("pair-allowed") or "").split()
        t.check(len(got) == 2 and all(sysvm.expand(g) == nodes for g in got),
                f"the unit's AllowedCPUs/AllowedMemoryNodes are the target ({got}, target {nodes})")
    t.eq(res.get("pair-before"), "  ", "the pair unit had no AllowedCPUs/AllowedMemoryNodes before")
    t.eq(res.get("pair-state-units"), "2", "the state file records both processes under Unit=pair.service")
    # the unit's memory nodes wait for the last move: each process's pages
    # were moved by the daemon's own plan (what of its 150 MB interleaved
    # over 4 nodes is off the target: three quarters for one node, half for
    # two, which the unit gets when other load sits on its node; a full CI
    # run placed it on 2-3 and moved 78.7 MB each), not by the kernel when
    # the first one's move set AllowedMemoryNodes (then the second moves
    # next to nothing)
    off_target = 150 * (4 - max(1, len(nodes))) // 4
    least = min(80, off_target * 8 // 10)
    for x in ("a", "b"):
        line = res.get(f"pair-placed-{x}") or ""
        m = re.search(r": (\d+) bytes moved", line)
        moved = int(m.group(1)) if m else 0
        t.check(moved >= least << 20,
                f"pair {x}: its own move moved {moved} bytes, at least {least} MiB of the {off_target} MiB "
                f"off the unit's nodes {nodes} ({line!r})")
    for x in ("a", "b"):
        later = res.get(f"pair-decision-later-{x}") or ""
        t.check("placed on" in later and "could not move" not in later,
                f"pair {x}: later, the policy knows the kernel moved the pages its move left ({later!r})")
    t.check(int(res.get("pair-log") or "0") >= 2,
            f"the journal says each was placed with the unit's two processes: {res.all('pair-log-line')}")
    pc = res.get("pair-c-pid") or "0"
    t.check(pc != "0", f"a third workload started in the placed unit ({pc})")
    tc = (res.get("pair-c-target") or "").split()
    tu = (res.get("pair-c-unit-target") or "").split()
    dc = res.get("pair-c-decision") or ""
    # it joins the unit where it is placed, or, seen already grown past the
    # unit's room, the unit (three processes now) is decided again as one
    joined = int(res.get("pair-c-joined") or "0") + int(res.get("pair-c-with-unit") or "0")
    t.check(len(tu) >= 3 and tc == tu and dc.startswith('s "placed"') and joined >= 1,
            f"the third joins the unit's nodes and is placed ({tc}, unit {tu}; {dc}; "
            f"{res.get('pair-c-joined')} 'it joins them there' journal lines, "
            f"{res.get('pair-c-with-unit')} 'with the 3 processes of its unit pair.service')")
    t.eq(res.get("pair-c-state-units"), "3", "the state file records the third under Unit=pair.service too")
    t.eq(res.get("pair-c-gone"), "0", "the third killed: the daemon lets go of it")
    t.eq(res.get("pair-one-gone"), "0", "one of the pair killed: the daemon lets go of it")
    now = (res.get("pair-target-now") or "").split()
    now_nodes = [int(x) for x in now[2:]] if len(now) >= 3 else []
    got = (res.get("pair-one-gone-allowed") or "").split()
    t.check(now_nodes and len(got) == 2 and all(sysvm.expand(g) == now_nodes for g in got),
            f"the unit keeps the daemon's values while its other process is placed ({got}, target {now_nodes})")
    t.eq(res.get("pair-both-gone"), "0", "the other killed: the daemon lets go of it too")
    t.eq(res.get("pair-both-gone-allowed"), "  ",
         "the unit, still running, is put back when its last placed process is gone")
    t.eq(res.get("pair-both-gone-active"), "active", "(the pair unit was still active)")
    t.eq(res.get("pair-after"), "  ", "after the stop the pair unit is as it was")
    # 9
    t.eq(res.get("root-move"), "0", "a workload moved into the root cgroup")
    t.eq(res.get("root-cgroup"), "0::/", "its cgroup is the root")
    t.eq((res.get("root-place") or "").split()[:1], ["0"], f"Place() of it: {res.get('root-place')}")
    t.check((res.get("root-affinity") or "").endswith(": 2"),
            f"placed by the affinity mechanism: CPU affinity 2 ({res.get('root-affinity')})")
    t.eq(res.get("root-state"), "Backend=affinity", "the state file records the affinity mechanism for it")
    for line in res.all("journal-placement"):
        print(f"  ..   {line}")
    t.eq(res.get("include1"), "0", "Include(1)")
    t.eq(res.get("pid1-state"), 's "excluded"', "PID 1, in init.scope, is left alone although included")
    t.check((res.get("root-affinity-after") or "").endswith(": 0-3"),
            f"its affinity is back to 0-3 after the stop ({res.get('root-affinity-after')})")
    return t.finish()


if __name__ == "__main__":
    npvm.run_test("service-4", body)
