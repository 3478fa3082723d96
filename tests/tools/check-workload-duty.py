#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""np-workload --sweep --duty 20 uses about a fifth of a CPU, natively too.

The VM tests size workloads by --duty (a 15% workload is significant at
MinProcessCPU=0.1, but not busy). Natively a sweep of 64 MB takes a few
milliseconds, and a busy clock restarted at each sweep never reached the
duty: the workload ran at a whole CPU. A loaded machine can only give it
less CPU, so the bound below cannot fail by load.

Usage: check-workload-duty.py NP-WORKLOAD
"""
import os
import subprocess
import sys
import time


def main():
    exe = sys.argv[1]
    t0 = time.monotonic()
    before = os.times()
    r = subprocess.run([exe, "--mb", "16", "--no-thp", "--sweep", "--duty", "20", "--duration", "3"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = os.times()
    wall = time.monotonic() - t0
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    print(f"--duty 20: {cpu:.2f} s of CPU in {wall:.2f} s ({cpu / wall:.2f} CPUs), exit {r.returncode}")
    if r.returncode != 0:
        print(r.stderr)
        return 1
    # 0.2 CPUs, plus touching 16 MB at the start; 0.5 leaves room for both
    if cpu / wall > 0.5:
        print("FAIL: --duty 20 used more than half a CPU")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
