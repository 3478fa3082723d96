#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install everything the tests need, build (gcc and clang, warnings are
# errors), and run every suite: unit, integration (real dbus-daemon, busctl,
# cgroups) and vm (real multi-node kernels under QEMU). Run as root.
# Usage: ./run-tests.sh [--no-vm] [extra meson test arguments]
set -euo pipefail
cd "$(dirname "$0")"

if [ "$(id -u)" != 0 ]; then
        echo "run-tests.sh: run as root (apt-get, cgroups, setpriv)" >&2
        exit 1
fi
vm=yes
if [ "${1:-}" = "--no-vm" ]; then vm=no; shift; fi

start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
        meson ninja-build pkg-config gcc clang libc6-dev \
        libnuma-dev libcgroup-dev libsystemd-dev libglib2.0-dev \
        dbus-daemon systemd util-linux python3 mandoc groff-base clang-format \
        numactl numad qemu-system-x86 busybox-static valgrind \
        polkitd libxml2-utils dbus-bin mmdebstrap e2fsprogs
# the real Prometheus tools for the metrics file (test_observe): node_exporter
# and promtool; and the real libvirt that runs numad -w (test_libvirt:
# libvirtd, its QEMU driver and virsh, without libvirt-daemon-system, whose
# services and users the test does not need). No service may start here
# (policy-rc.d says so for the installation only)
made_policy=no
if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        made_policy=yes
fi
pr=0
apt-get install -y -q --no-install-recommends prometheus prometheus-node-exporter \
        libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients || pr=$?
if [ "$made_policy" = yes ]; then rm -f /usr/sbin/policy-rc.d; fi
[ "$pr" = 0 ] || exit "$pr"

# gcc: the build that is tested
[ -f build-ci/build.ninja ] || meson setup build-ci --werror -Dvm_tests=true
meson compile -C build-ci
# clang: must build warning-free too
[ -f build-ci-clang/build.ninja ] || CC=clang meson setup build-ci-clang --werror -Dvm_tests=false
meson compile -C build-ci-clang

# the same unit and integration tests under AddressSanitizer (leaks at the
# daemon's exit included) and UndefinedBehaviorSanitizer
[ -f build-ci-asan/build.ninja ] || meson setup build-ci-asan --werror -Db_sanitize=address,undefined \
        -Db_lundef=false -Dvm_tests=false
meson compile -C build-ci-asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        meson test -C build-ci-asan --print-errorlogs --num-processes 1 --suite unit --suite integration \
        || { echo "run-tests.sh: sanitizer run failed" >&2; exit 1; }

# the unit suite under valgrind (leaks, invalid accesses; the integration
# suite's test_valgrind runs a whole daemon under it too); test-mover is left
# out: valgrind does not implement migrate_pages(2)
meson test -C build-ci --setup valgrind --print-errorlogs --num-processes 2 --suite unit --no-suite no-valgrind \
        || { echo "run-tests.sh: valgrind run failed" >&2; exit 1; }

suites=(--suite unit --suite integration)
[ "$vm" = yes ] && suites+=(--suite vm)
rc=0
meson test -C build-ci --print-errorlogs --num-processes 1 "${suites[@]}" "$@" || rc=$?

# an unexpected skip is a failure: every test here can run on this machine
if grep -qE '^ok .*# SKIP|^[0-9]+/[0-9]+ .* SKIP ' build-ci/meson-logs/testlog.txt; then
        echo "run-tests.sh: some tests were skipped (see build-ci/meson-logs/testlog.txt):" >&2
        grep -E '^ok .*# SKIP|^[0-9]+/[0-9]+ .* SKIP ' build-ci/meson-logs/testlog.txt >&2 || true
        rc=1
fi
# the plain closing line: N passed, N failed (, N skipped)
python3 - build-ci/meson-logs/testlog.json <<'PY' || true
import json, sys
res = [json.loads(l)["result"] for l in open(sys.argv[1]) if l.strip()]
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in res)
skip = sum(r == "SKIP" for r in res)
print("%d passed, %d failed, %d skipped" % (ok, len(res) - ok - skip, skip))
PY
echo "run-tests.sh: total wall time $(( $(date +%s) - start )) s"
exit $rc
