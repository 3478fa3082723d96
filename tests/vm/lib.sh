# SPDX-License-Identifier: GPL-2.0-or-later
# Helpers for npvm scenarios (busybox sh), sourced before /npvm/scenario.sh.
#
# Reporting: every result goes to the console as `NPVM-R KEY VALUE...`; the
# host parses these (tests/vm/npvm.py Result).  Keys are single words.

# np_result KEY VALUE...: one result line.
np_result() {
	echo "NPVM-R $*"
}

# np_log TEXT: a note for humans (shown with the console on failure).
np_log() {
	echo "npvm: $*"
}

# np_capture KEY CMD...: run CMD, every output line becomes a KEY result
# (leading blanks kept); then `KEY.rc STATUS`.  Returns CMD's status.
np_capture() {
	_k=$1
	shift
	"$@" > /tmp/.np_capture 2>&1
	_rc=$?
	while IFS= read -r _l; do
		echo "NPVM-R $_k $_l"
	done < /tmp/.np_capture
	echo "NPVM-R $_k.rc $_rc"
	return $_rc
}

# np_nodes: the online node ids, one per line.
np_nodes() {
	for _d in /sys/devices/system/node/node[0-9]*; do
		echo "${_d##*node}"
	done | sort -n
}

# np_node_kb PID NODE: kB of PID's memory on NODE, from /proc/PID/numa_maps
# (sum of N<node>=pages * kernelpagesize_kB over all mappings).
np_node_kb() {
	awk -v n="$2" '
	{ ps = 4
	  for (i = 2; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) { split($i, a, "="); ps = a[2] }
	  for (i = 2; i <= NF; i++) if ($i ~ ("^N" n "=")) { split($i, a, "="); s += a[2] * ps } }
	END { print s + 0 }' "/proc/$1/numa_maps"
}

# np_numa_kb PID [REGEX]: "0=kB 1=kB ..." for every online node, summed
# over the mappings in /proc/PID/numa_maps (only lines matching the awk
# REGEX if given, e.g. 'interleave:' or 'bind:2' for np-workload's memory).
np_numa_kb() {
	awk -v nodes="$(np_nodes | tr '\n' ' ')" -v re="${2:-.}" '
	$0 !~ re { next }
	{ ps = 4
	  for (i = 2; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) { split($i, a, "="); ps = a[2] }
	  for (i = 2; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); s[a[1]] += a[2] * ps } }
	END { k = split(nodes, nn, " "); out = ""
	      for (j = 1; j <= k; j++) out = out (j > 1 ? " " : "") nn[j] "=" (s[nn[j]] + 0)
	      print out }' "/proc/$1/numa_maps"
}

# np_vmstat NAME: a /proc/vmstat counter (0 if absent).
np_vmstat() {
	awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' /proc/vmstat
}

# np_wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds;
# returns 1 once SECONDS (wall clock) have passed.
np_wait_for() {
	_end=$(($(date +%s) + $1))
	shift
	while :; do
		"$@" && return 0
		[ "$(date +%s)" -lt "$_end" ] || return 1
		sleep 0.1
	done
}

# np_wait_file FILE SECONDS
np_wait_file() {
	np_wait_for "$2" test -e "$1"
}

# np_check NAME CMD...: `check NAME ok` or `check NAME FAIL` (status kept).
np_check() {
	_name=$1
	shift
	if "$@"; then
		np_result check "$_name" ok
	else
		np_result check "$_name" FAIL
		return 1
	fi
}

# np_start_workload READYFILE ARGS...: start np-workload in the background
# with --ready-file, wait (NP_READY_WAIT seconds, 60 by default) until its
# memory is touched; prints its pid
# (use as pid=$(np_start_workload ...); its output is in READYFILE.out).
np_start_workload() {
	_rf=$1
	shift
	rm -f "$_rf"
	np-workload --ready-file "$_rf" "$@" > "$_rf.out" 2>&1 &
	_wpid=$!
	if ! np_wait_file "$_rf" "${NP_READY_WAIT:-60}"; then
		np_log "np-workload $* did not get ready:" >&2
		cat "$_rf.out" >&2
		return 1
	fi
	echo "$_wpid"
}

# np_mark_daemon NAME: tell the host that the placer under test starts now
# (a guest kernel lockup before this is the emulator's, and the host boots
# the VM again: npvm.VM.run); on the console, also from inside $(...).
np_mark_daemon() {
	echo "NPVM-DAEMON $1" > /dev/console
}

# np_start_dbus: start dbus-daemon on the VM's system bus socket
# (needs VM.add_dbus()); waits until it answers (the socket file exists
# from its bind(), a connection before its listen() is refused).
np_bus_answers() {
	busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetId >/dev/null 2>&1
}
np_start_dbus() {
	export DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus/system_bus_socket
	mkdir -p /run/dbus
	dbus-daemon --config-file=/etc/npvm-dbus.conf --nofork --nopidfile > /tmp/dbus.log 2>&1 &
	if ! np_wait_for 30 np_bus_answers; then
		np_log "dbus-daemon did not start:"
		cat /tmp/dbus.log
		return 1
	fi
}

# np_bus_has_owner NAME: NAME is owned on the system bus.
# np_wait_bus_name NAME SECONDS: wait until NAME is owned on the system bus.
np_bus_has_owner() {
	busctl --system call org.freedesktop.DBus /org/freedesktop/DBus \
		org.freedesktop.DBus NameHasOwner s "$1" 2>/dev/null | grep -q true
}
np_wait_bus_name() {
	np_wait_for "$2" np_bus_has_owner "$1"
}

# np_start_numaplaced CONFIG [ARGS...]: start the daemon (VM.add_daemon())
# in the foreground mode, in the background of this script, on the system
# bus (np_start_dbus first); waits (60 s) until it owns org.numaplaced1.
# Its output goes to /tmp/numaplaced.log (printed if it does not come up).
np_start_numaplaced() {
	_conf=$1
	shift
	np_mark_daemon numaplaced
	numaplaced --config "$_conf" "$@" > /tmp/numaplaced.log 2>&1 &
	NP_DAEMON_PID=$!
	if ! np_wait_bus_name org.numaplaced1 60; then
		np_log "numaplaced did not take org.numaplaced1 within 60 s; its output:"
		cat /tmp/numaplaced.log
		return 1
	fi
}

# np_start_placer WAY: start the placer a benchmark compares: numaplaced
# (WAY numaplaced or both: np_start_numaplaced /etc/np.conf on the system
# bus), numad (Debian's, at its defaults) or none (kernel); sets PLACER to
# its pid ("" for none) and the kernel's counters at the start: m0
# (pgmigrate_success), u0 (numa_pte_updates), f0 (numa_hint_faults), and
# the result line `balancing`.
np_start_placer() {
	case $1 in
	numaplaced|both)
		np_start_dbus || return 1
		np_start_numaplaced /etc/np.conf || return 1
		PLACER=$NP_DAEMON_PID ;;
	numad)
		mkdir -p /var/log /var/run
		np_mark_daemon numad
		numad > /tmp/numad.out 2>&1
		np_wait_file /var/run/numad.pid 30 || return 1
		PLACER=$(cat /var/run/numad.pid) ;;
	*)
		PLACER= ;;
	esac
	np_result balancing $(cat /proc/sys/kernel/numa_balancing)
	m0=$(np_vmstat pgmigrate_success)
	u0=$(np_vmstat numa_pte_updates)
	f0=$(np_vmstat numa_hint_faults)
}

# np_stop_numaplaced: SIGTERM the daemon, wait (30 s), result
# `numaplaced.stop exited|killed`; its log lines become `numaplaced.log`.
np_stop_numaplaced() {
	[ -n "$NP_DAEMON_PID" ] || return 0
	kill "$NP_DAEMON_PID" 2>/dev/null
	if np_wait_for 30 sh -c "! kill -0 $NP_DAEMON_PID 2>/dev/null"; then
		np_result numaplaced.stop exited
	else
		kill -9 "$NP_DAEMON_PID"
		np_result numaplaced.stop killed
	fi
	while IFS= read -r _l; do
		echo "NPVM-R numaplaced.log $_l"
	done < /tmp/numaplaced.log
	NP_DAEMON_PID=
}

# np_host_memadd NODE MB: ask the host to hot-add MB of memory to NODE
# (VM(hotplug_mb=...)); the kernel onlines it one memory block at a time.
# Waits (60 s) until NODE's MemTotal grew by the whole MB; 1 if it did not.
np_host_memadd() {
	_before=$(awk '/MemTotal/ { print $4 }' /sys/devices/system/node/node$1/meminfo)
	echo "NPVM-HOST memadd $1 $2"
	np_wait_for 60 sh -c "[ \$(awk '/MemTotal/ { print \$4 }' /sys/devices/system/node/node$1/meminfo) -ge $((_before + $2 * 1024)) ]"
}
