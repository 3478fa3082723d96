#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""vm suite: the harness's second boot after a hang of the emulated machine
(npvm.VM.run).  A guest soft lockup is a line the kernel prints on the
console; the scenarios here print that line themselves, which is all the
host sees of a real one.

  lockup-before  the line comes before the scenario starts the placer
                 (np_mark_daemon): the boot is killed at once, its console
                 kept in <name>.hung.log, and the second boot runs the
                 scenario to its end.
  lockup-after   the line comes after np_mark_daemon: no second boot, the
                 scenario runs to its end (a lockup with the placer running
                 is the scenario's to judge).

    test_harness.py lockup-before|lockup-after
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npvm  # noqa: E402

LINE = "[   29.367077] watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [dbus-daemon:153]"

SCRIPTS = {
    "lockup-before": f"""
echo '{LINE}' > /dev/console
sleep 3
np_mark_daemon none
np_result boot done
""",
    "lockup-after": f"""
np_mark_daemon none
echo '{LINE}' > /dev/console
sleep 3
np_result boot done
""",
}


def main(variant):
    name = f"harness-{variant}"
    vm = npvm.VM(name, npvm.Topology(2, mem_mb=256, cpus=1), cgroup=None)
    hungpath = os.path.join(npvm.vm_build_dir(), "runs", f"{name}.hung.log")
    if os.path.exists(hungpath):
        os.unlink(hungpath)
    res = vm.run(SCRIPTS[variant], timeout=120)
    t = npvm.Checker(res)
    if not t.require_completed():
        return t.finish()
    t.eq(res.get("boot"), "done", "the scenario ran to its end")
    if variant == "lockup-before":
        t.check(res.first_boot_hung is not None and "soft lockup" in res.first_boot_hung,
                f"a second boot, for the soft lockup (first boot: {res.first_boot_hung!r})")
        hung = open(hungpath, errors="replace").read() if os.path.exists(hungpath) else ""
        t.check(LINE in hung and "NPVM-DAEMON" not in hung,
                "the first boot's console is kept, killed before the placer's mark")
    else:
        t.check(res.first_boot_hung is None,
                f"no second boot for a lockup after the placer started ({res.first_boot_hung!r})")
        t.check(not os.path.exists(hungpath), "no hung console kept")
    return t.finish()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCRIPTS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(SCRIPTS)}")
    npvm.run_test(f"harness-{sys.argv[1]}", lambda: main(sys.argv[1]))
