# SPDX-License-Identifier: GPL-2.0-or-later
"""Fill the vm suite's cache ahead of the suite: Debian's kernel for the
busybox VMs (npvm.fetch_kernel()) and the Debian image of the systemd VMs
(sysvm.base_image(), about four minutes of mmdebstrap on a fresh cache).

run-tests.sh starts this in the background, at the lowest CPU and I/O
priority, while the sanitizer and valgrind runs leave a core idle, and waits
for it before the vm suite, so that the suite's VMs never share the machine
with it. The tests take the same locks (.kernel.lock, .sysvm.lock) and find
what it made, or make it themselves when it failed. Run alone it is
harmless: a cache that holds both does nothing.

Usage: NPVM_CACHE=<builddir>/tests/vm/cache python3 tests/vm/prefetch.py
Exit status 0 when both are in the cache, 1 with the harness's message when
one could not be made.
"""

import sys
import time

import npvm
import sysvm


def main():
    t0 = time.monotonic()
    try:
        npvm.log(f"kernel in the cache: {npvm.fetch_kernel()}")
        tarball, _, _ = sysvm.base_image()
        npvm.log(f"Debian image in the cache: {tarball}")
    except npvm.HarnessError as e:
        print(f"prefetch: {e}", file=sys.stderr)
        return 1
    npvm.log(f"prefetch done in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
