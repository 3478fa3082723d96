#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install what numaplaced needs, build it, and run it in the foreground on
# this machine with the shipped configuration, on the system bus (a system
# dbus-daemon is started first if none is running). Run as root.
set -euo pipefail
cd "$(dirname "$0")"

if [ "$(id -u)" != 0 ]; then
        echo "run-daemon.sh: run as root (cgroups, migrate_pages, the system bus name)" >&2
        exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends meson ninja-build pkg-config gcc libc6-dev \
        libnuma-dev libcgroup-dev libsystemd-dev libglib2.0-dev dbus-daemon systemd
[ -f build/build.ninja ] || meson setup build
meson compile -C build

# The bus policy lets root own org.numaplaced1 and everyone read it.
install -D -m 0644 systemd/org.numaplaced1.conf /etc/dbus-1/system.d/org.numaplaced1.conf
if [ ! -S /run/dbus/system_bus_socket ]; then
        echo "run-daemon.sh: no system bus running, starting dbus-daemon --system"
        mkdir -p /run/dbus
        getent passwd messagebus >/dev/null || useradd --system --no-create-home messagebus || true
        dbus-daemon --system --fork
else
        busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ReloadConfig >/dev/null || true
fi

cat <<'HELP'
numaplaced is starting in the foreground (Ctrl-C stops it and puts every task back).
Query it from another terminal:
  busctl tree org.numaplaced1
  busctl get-property org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager NodeIds Backend Scans
  busctl introspect org.numaplaced1 /org/numaplaced1/node/0
  busctl call org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager Dump
  busctl call org.numaplaced1 /org/numaplaced1 org.numaplaced1.Manager PlanMigration auau 8 0 1 2 3 4 5 6 7 2 3 4
HELP
export RUNTIME_DIRECTORY=/run/numaplaced
mkdir -p "$RUNTIME_DIRECTORY"
exec build/daemon/numaplaced --config config/numaplaced.conf "$@"
