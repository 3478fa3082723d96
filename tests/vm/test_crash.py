#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""vm suite: SIGKILL the daemon at chosen and random moments while it places
and migrates, restart it, and check that nothing is lost (issue 10).
`test_crash.py v1|v2 [ROUNDS]`, one boot.

4 nodes. Two np-workload processes that live through every round
(--verify: every word of every page holds a pattern derived from its
position; SIGUSR2 checks them all and prints the count of pages that
changed and a checksum), each in a cpuset of its own ("orig1", "orig2"),
4 MB bound on each node, and in each round a fresh one (W3, in the root
cpuset, 4 MB on each node: whatever was moved before, there is always
something to move). The daemon runs with Mode=advise and MaxRate=4M, so
Place() moves take seconds. Each round:

  1. start the daemon (it recovers from the previous round's kill);
  2. check: both workloads are back in their own cpuset with every node and
     CPU allowed, the daemon's cpuset directory is gone, the runtime
     directory holds nothing (no state file, no temporary file), the log
     says nothing is damaged; SIGUSR2 to all workloads: no page changed
     and the checksum is the one of their first fill; the previous round's
     fresh workload is then stopped;
  3. Place() the fresh workload, then the two others, on node sets that
     change from round to round, in the background, and kill the daemon with tests/tools/np-crash at a moment that depends
     on the round:
       migrate   inside migrate_pages(2) (a few ms after its entry; a
                 call that returned sooner passes the kill on to the next,
                 at half the delay),
       pair2     at the entry of the second migrate_pages() (between pairs),
       write     at the entry of the Nth write() to the state file's
                 temporary file (the new file exists, empty),
       rename    at the entry of the Nth rename() of the temporary file (it
                 is complete but not yet in place),
       random    plain SIGKILL after a random delay;
  4. keep what the kill left: the runtime directory, the state file (host:
     every line must be key-file syntax with Version=1 and whole records).

After the last round: one more start (recovery), the same checks, a clean
SIGTERM, and the workloads must be where they started.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

TOPO = npvm.Topology(4, mem_mb=256, cpus=1)
MODES = ["migrate", "write", "rename", "random", "pair2"]
TARGETS = ["2,3", "0", "1,3", "3", "0,1", "1"]  # at most 2 nodes: from 0-3, at least 2 pairs move

CONFIG = """[Daemon]
Mode=advise
ScanIntervalSec=5
MaxScanIntervalSec=10
LogLevel=info
[Migration]
MaxRate=4M
"""

SCRIPT = r"""
M="org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager"
CG=/sys/fs/cgroup
[ "$NPVM_CGROUP" = v1 ] && CG=/sys/fs/cgroup/cpuset
RT=/run/numaplaced
STATE=/numaplaced/state.

status_field() { awk -v k="$2:" '$1 == k { print $2 }' /proc/$1/status; }
cgroup_of() { sed -n 's/^[0-9]*:\(cpuset\)\{0,1\}:\(.*\)$/\2/p' /proc/$1/cgroup | head -n 1; }
where() { echo "$(cgroup_of $1) mems=$(status_field $1 Mems_allowed_list) cpus=$(status_field $1 Cpus_allowed_list)"; }
place() {        # place PID LIST(comma)
	_p=$1
	set -- $(echo "$2" | tr ',' ' ')
	busctl --timeout=120 call $M Place uau $_p $# "$@"
}
# verify N KEY: SIGUSR2 to workload N, wait for its new VERIFY line
verify() {
	_f=/tmp/w$1.out
	_n=$(grep -c VERIFY $_f)
	kill -USR2 $(eval echo \$W$1)
	np_wait_for 60 sh -c "[ \$(grep -c VERIFY $_f) -gt $_n ]"
	np_result $2 $(grep VERIFY $_f | tail -n 1)
}
start_daemon() {
	np_mark_daemon numaplaced
	numaplaced --config /etc/np.conf > /tmp/np.$1.log 2>&1 &
	NP_DAEMON_PID=$!
	if ! np_wait_bus_name org.numaplaced1 60; then
		np_log "numaplaced did not come up:"
		cat /tmp/np.$1.log
		return 1
	fi
}
# after a (re)start: where everything is
check_recovered() {
	_k=$1
	for i in 1 2; do
		np_result $_k.W$i.where $(where $(eval echo \$W$i))
		verify $i $_k.W$i.verify
	done
	np_result $_k.dir $([ -e $CG/numaplaced ] && echo present || echo gone)
	np_result $_k.rt $(ls $RT 2>/dev/null | tr '\n' ' ')
	np_result $_k.damaged $(grep -c -e "is damaged" -e "ignoring malformed" /tmp/np.$_k.log)
	np_result $_k.temporaries $(grep -c "temporary state file" /tmp/np.$_k.log)
	np_result $_k.found $(grep -c "Found state file" /tmp/np.$_k.log)
}

np_start_dbus || exit 1
for i in 1 2; do
	mkdir $CG/orig$i
	if [ "$NPVM_CGROUP" = v1 ]; then
		cat $CG/cpuset.cpus > $CG/orig$i/cpuset.cpus
		cat $CG/cpuset.mems > $CG/orig$i/cpuset.mems
	fi
	pid=$(np_start_workload /tmp/w$i --per-node 0-3 --mb-per-node 4 --no-thp --verify --threads 2) || exit 1
	echo $pid > $CG/orig$i/cgroup.procs
	eval W$i=$pid
	np_result W$i.pid $pid
	np_result W$i.verify0 $(grep VERIFY /tmp/w$i.out | head -n 1)
	np_result W$i.where0 $(where $pid)
done

r=1
while [ $r -le $ROUNDS ]; do
	start_daemon R$r || exit 1
	check_recovered R$r
	if [ -n "$W3" ]; then   # the previous round's fresh workload
		np_result R$r.W3.where $(where $W3)
		verify 3 R$r.W3.verify
		kill $W3
		np_wait_for 20 sh -c "! kill -0 $W3 2>/dev/null"
	fi
	mode=$(echo $MODES | cut -d' ' -f$(( (r - 1) % 5 + 1 )))
	t1=$(echo $TARGETS | cut -d' ' -f$(( (r - 1) % 6 + 1 )))
	t2=$(echo $TARGETS | cut -d' ' -f$(( r % 6 + 1 )))
	nth=$(( (r - 1) / 5 % 3 + 1 ))
	np_result R$r.mode $mode $t1 $t2 $nth
	# a fresh workload with 4 MB on every node, placed first: whatever
	# the kill, there are pages to move
	W3=$(np_start_workload /tmp/w3 --per-node 0-3 --mb-per-node 4 --no-thp --verify --threads 2) || exit 1
	np_result R$r.W3.pid $W3
	np_result R$r.W3.verify0 $(grep VERIFY /tmp/w3.out | head -n 1)
	m0=$(np_vmstat pgmigrate_success)
	case $mode in
	migrate) np-crash --pid $NP_DAEMON_PID --syscall migrate_pages --nth 1 --delay-us $(( 1000 + r * 300 )) --timeout 30 > /tmp/crash.out 2>&1 & ;;
	pair2) np-crash --pid $NP_DAEMON_PID --syscall migrate_pages --nth 2 --timeout 30 > /tmp/crash.out 2>&1 & ;;
	write) np-crash --pid $NP_DAEMON_PID --syscall write --path $STATE --nth $nth --timeout 30 > /tmp/crash.out 2>&1 & ;;
	rename) np-crash --pid $NP_DAEMON_PID --syscall rename,renameat,renameat2 --path $STATE --nth $nth --timeout 30 > /tmp/crash.out 2>&1 & ;;
	random) : > /tmp/crash.out ;;
	esac
	crash=$!
	sleep 0.3
	(place $W3 $t1; place $W1 $t2; place $W2 $t1) > /tmp/place.out 2>&1 &
	placer=$!
	if [ $mode = random ]; then
		usleep $(( (r * 389) % 3000 * 1000 + 200000 ))
		kill -9 $NP_DAEMON_PID
		echo "np-crash: killed $NP_DAEMON_PID at random: $(( (r * 389) % 3000 + 200 )) ms" > /tmp/crash.out
	else
		wait $crash
	fi
	np_wait_for 30 sh -c "! kill -0 $NP_DAEMON_PID 2>/dev/null"
	np_result R$r.kill $(cat /tmp/crash.out)
	np_result R$r.daemon_gone $(kill -0 $NP_DAEMON_PID 2>/dev/null && echo no || echo yes)
	np_result R$r.migrated_pages $(( $(np_vmstat pgmigrate_success) - m0 ))
	wait $placer
	np_result R$r.after_kill.rt $(ls $RT 2>/dev/null | tr '\n' ' ')
	np_result R$r.after_kill.W1 $(where $W1)
	if [ -f $RT/state ]; then
		while IFS= read -r l; do np_result R$r.state "$l"; done < $RT/state
		np_result R$r.state_end
	fi
	r=$((r + 1))
done

start_daemon F || exit 1
check_recovered F
np_result F.W3.where $(where $W3)
verify 3 F.W3.verify
kill $W3
np_capture F.place place $W1 2,3
np_result F.placed $(where $W1)
kill $NP_DAEMON_PID
np_wait_for 60 sh -c "! kill -0 $NP_DAEMON_PID 2>/dev/null"
np_result F.stopped $(kill -0 $NP_DAEMON_PID 2>/dev/null && echo no || echo yes)
for i in 1 2; do
	np_result F.W$i.end $(where $(eval echo \$W$i))
	verify $i F.W$i.verify_end
done
np_result F.dir_end $([ -e $CG/numaplaced ] && echo present || echo gone)
np_result F.rt_end $(ls $RT 2>/dev/null | tr '\n' ' ')
"""


def check_state_file(lines):
    """The state file as the kill left it: key-file syntax, Version=1 in
    [numaplaced], every [process N] with Pid=N, StartTime and Backend.
    Returns (ok, why, pids)."""
    group = None
    groups = {}
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[([^\[\]]+)\]", line)
        if m:
            group = m.group(1)
            groups.setdefault(group, {})
            continue
        if group is None or "=" not in line:
            return False, "not key-file syntax: %r" % line, []
        k, _, v = line.partition("=")
        groups[group][k.strip()] = v.strip()
    if groups.get("numaplaced", {}).get("Version") != "1":
        return False, "no Version=1 in [numaplaced]", []
    pids = []
    for g, keys in groups.items():
        if g == "numaplaced":
            continue
        m = re.fullmatch(r"process (\d+)", g)
        if not m:
            return False, "unexpected group [%s]" % g, []
        if keys.get("Pid") != m.group(1) or "StartTime" not in keys or keys.get("Backend") != "cpuset":
            return False, "incomplete record [%s]: %s" % (g, keys), []
        pids.append(int(m.group(1)))
    return True, "", pids


def main(cg, rounds):
    name = f"crash-4-{cg}"
    vm = npvm.VM(name, TOPO, cgroup=cg)
    vm.add_workload()
    vm.add_dbus()
    vm.add_daemon()
    crash = os.environ.get("NPVM_CRASH") or os.path.join(npvm.build_root(), "tests", "tools", "np-crash")
    if not os.path.isfile(crash):
        raise npvm.HarnessError(f"np-crash not built ({crash}); run meson compile")
    vm.add_binary(crash, "usr/bin/np-crash")
    vm.add_file("etc/np.conf", CONFIG)
    script = (f"ROUNDS={rounds}\nMODES='{' '.join(MODES)}'\nTARGETS='{' '.join(TARGETS)}'\n") + SCRIPT
    res = vm.run(script, timeout=300 + 40 * rounds)
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()

    pids = {i: res.get(f"W{i}.pid") for i in (1, 2)}
    v0 = {i: res.kv(f"W{i}.verify0") for i in (1, 2)}
    where0 = {i: res.get(f"W{i}.where0") for i in (1, 2)}
    for i in (1, 2):
        t.eq(where0[i], f"/orig{i} mems=0-3 cpus=0-3", f"[{cg}] W{i} starts in its own cpuset, every node allowed")
        t.eq(v0[i].get("bad"), 0, f"[{cg}] W{i} filled")

    def check_recovered(key, what):
        for i in (1, 2):
            t.eq(res.get(f"{key}.W{i}.where"), where0[i], f"{what}: W{i} back where it was")
            v = res.kv(f"{key}.W{i}.verify")
            t.check(v.get("bad") == 0 and v.get("sum") == v0[i].get("sum") and v.get("pages") == v0[i].get("pages"),
                    f"{what}: W{i}: every page intact ({v} vs {v0[i]})")
        t.eq(res.get(f"{key}.dir"), "gone", f"{what}: no numaplaced cgroup left")
        t.eq(res.get(f"{key}.rt", ""), "", f"{what}: runtime directory empty (no state file, no temporary)")
        t.eq(res.get(f"{key}.damaged"), "0", f"{what}: the log reports no damaged state file")

    modes = {}
    inside = 0
    mid_write = 0
    pages = 0
    for r in range(1, rounds + 1):
        key = f"R{r}"
        mode = (res.get(f"{key}.mode") or "?").split()[0]
        kill = res.get(f"{key}.kill") or ""
        modes[mode] = modes.get(mode, 0) + 1
        what = f"[{cg}] round {r} ({mode}: {kill})"
        print(f"  ..   {what}; migrated {res.get(key + '.migrated_pages')} pages; left "
              f"{res.get(key + '.after_kill.rt', '')!r}")
        t.eq(res.get(f"{key}.daemon_gone"), "yes", f"{what}: the daemon was killed")
        t.check(kill.startswith("np-crash: killed"), f"{what}: killed as planned")
        if mode == "migrate":
            t.check(kill.endswith(")") and ": inside (" in kill, f"{what}: killed inside migrate_pages()")
            inside += ": inside (" in kill
        if mode in ("write", "rename"):
            t.check(f"at {mode}" in kill or "at renameat" in kill, f"{what}: killed at the {mode}")
            left = (res.get(f"{key}.after_kill.rt") or "").split()
            temps = [f for f in left if re.fullmatch(r"state\.\w{6}", f)]
            t.eq(len(temps), 1, f"{what}: a temporary state file was left ({left})")
            mid_write += len(temps) == 1
        pages += int(res.get(f"{key}.migrated_pages") or 0)
        if res.all(f"{key}.state_end"):
            ok, why, held = check_state_file(res.all(f"{key}.state"))
            t.check(ok, f"{what}: the state file the kill left is whole: {why}")
            t.check(set(map(str, held)) <= set(pids.values()) | {res.get(f"{key}.W3.pid")},
                    f"{what}: it names only the workloads ({held})")
        # the next start recovered
        nxt = f"R{r + 1}" if r < rounds else "F"
        check_recovered(nxt, f"[{cg}] start after round {r}")
        w3 = res.kv(f"{key}.W3.verify0")
        v = res.kv(f"{nxt}.W3.verify")
        t.eq(res.get(f"{nxt}.W3.where"), "/ mems=0-3 cpus=0-3", f"[{cg}] start after round {r}: round {r}'s "
             "fresh workload is back where it was")
        t.check(v.get("bad") == 0 and v.get("sum") == w3.get("sum") and v.get("pages") == w3.get("pages"),
                f"[{cg}] start after round {r}: round {r}'s fresh workload: every page intact ({v} vs {w3})")
        temps_left = [f for f in (res.get(f"{key}.after_kill.rt") or "").split() if f.startswith("state.")]
        t.eq(res.get(f"{nxt}.temporaries"), "1" if temps_left else "0",
             f"[{cg}] start after round {r}: the temporary file was removed and logged")
    t.eq(res.get("F.place.rc"), "0", f"[{cg}] after all rounds Place() works")
    t.check((res.get("F.placed") or "").startswith("/numaplaced/nodes-2-3 mems=2-3"), f"[{cg}] and places")
    t.eq(res.get("F.stopped"), "yes", f"[{cg}] SIGTERM stops it")
    for i in (1, 2):
        t.eq(res.get(f"F.W{i}.end"), where0[i], f"[{cg}] at the end W{i} is where it started")
        v = res.kv(f"F.W{i}.verify_end")
        t.check(v.get("bad") == 0 and v.get("sum") == v0[i].get("sum"), f"[{cg}] at the end W{i}'s pages are intact")
    t.eq(res.get("F.dir_end"), "gone", f"[{cg}] no numaplaced cgroup at the end")
    t.eq(res.get("F.rt_end", ""), "", f"[{cg}] no state file at the end")
    print(f"  ..   [{cg}] {rounds} rounds {modes}: {inside} kills inside migrate_pages(), {mid_write} in the middle "
          f"of a state-file write, {pages} pages migrated in all; every page verified after every round")
    return t.finish()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "v1"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    if mode not in ("v1", "v2"):
        sys.exit("usage: test_crash.py v1|v2 [ROUNDS]")
    npvm.run_test(f"crash-4-{mode}", lambda: main(mode, rounds))
