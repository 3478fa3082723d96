#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# /init of the npvm initramfs (PID 1, busybox sh).  Mounts the basics, sets
# up the cgroup mode, runs /npvm/scenario.sh between the NPVM-BEGIN and
# NPVM-END markers, then powers off.  If anything here dies, the kernel
# panics, panic=-1 reboots and QEMU (-no-reboot) exits: the host never hangs.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
# no pagers, colours or terminal queries from systemd tools (busctl)
export SYSTEMD_PAGER=cat PAGER=cat SYSTEMD_COLORS=0 TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null || mount -t tmpfs -o mode=0755 tmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts 2>/dev/null
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mkdir -p /run/dbus
[ -e /dev/console ] || mknod /dev/console c 5 1
[ -e /dev/null ] || mknod /dev/null c 1 3
# keep kernel messages off the result lines
echo 1 > /proc/sys/kernel/printk
. /npvm/env

case "$NPVM_CGROUP" in
v1)
	mount -t tmpfs -o mode=0755 cgroup_root /sys/fs/cgroup
	mkdir -p /sys/fs/cgroup/cpuset
	mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset ||
		echo "npvm: mounting the v1 cpuset hierarchy failed"
	;;
v2)
	mount -t cgroup2 cgroup2 /sys/fs/cgroup &&
		echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control ||
		echo "npvm: setting up cgroup2 with +cpuset failed"
	;;
esac

cd /root
echo "NPVM-BEGIN $NPVM_NAME"
sh -c '. /npvm/lib.sh; . /npvm/scenario.sh' </dev/null
rc=$?
echo "NPVM-END rc=$rc"
if [ "$NPVM_SHELL" = 1 ]; then
	echo "npvm: interactive shell; exit to power off"
	setsid cttyhack sh -l
fi
sync
poweroff -f
