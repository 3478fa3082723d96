#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""vm suite bookends.  `summary.py start` runs first (meson priority) and
stamps the start; `summary.py end` runs last and prints each vm test's wall
time from this run, the checks that failed in each failing test (so that the
end of a CI log says why) and the suite's wall time."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402


def main(mode):
    tdir = os.path.join(npvm.vm_build_dir(), "times")
    os.makedirs(tdir, exist_ok=True)
    stamp = os.path.join(tdir, ".suite-start")
    if mode == "start":
        with open(stamp, "w") as f:
            f.write(f"{time.time():.3f}\n")
        print("npvm: vm suite started")
        return 0
    try:
        with open(stamp) as f:
            t0 = float(f.read())
    except (OSError, ValueError):
        print("npvm: no suite start stamp (run the whole suite: meson test --suite vm)")
        return 0
    now = time.time()
    rows = []
    for name in sorted(os.listdir(tdir)):
        if not name.endswith(".txt"):
            continue
        with open(os.path.join(tdir, name)) as f:
            parts = f.read().split()
        if len(parts) == 3 and float(parts[0]) >= t0:
            rows.append((float(parts[0]), name[:-4], float(parts[1]) - float(parts[0]), parts[2]))
    print("npvm: vm suite wall times")
    for _, name, secs, status in sorted(rows):
        print(f"  {name:28} {secs:7.1f} s  {status}")
    for _, name, _, status in sorted(rows):
        if status == "PASS":
            continue
        try:
            with open(os.path.join(tdir, f"{name}.failed")) as f:
                lines = [line.rstrip("\n") for line in f if line.strip()]
        except OSError:
            lines = []
        print(f"npvm: {name} failed: " + ("; ".join(lines[:12]) if lines else "see its own log above"))
    fails = sum(1 for r in rows if r[3] != "PASS")
    print(f"npvm: vm suite wall time {now - t0:.1f} s for {len(rows)} tests "
          f"({len(rows) - fails} passed, {fails} failed)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("start", "end"):
        sys.exit("usage: summary.py start|end")
    sys.exit(main(sys.argv[1]))
