#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write the seed inputs of tests/fuzz/corpus/<target>/ from the fixture
trees (tests/fixtures) and the shipped configuration (config/), plus a few
hand-written edge cases. Rerun after changing the fixtures; files already
there (crash regressions, merged inputs) are kept. Seeds are named
seed-<origin>; crash inputs are named crash-<target>-<what> (see README)."""
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(SRC, "tests", "fixtures")
CORPUS = os.path.join(HERE, "corpus")


def trees():
    return sorted(d for d in os.listdir(FIX) if os.path.isdir(os.path.join(FIX, d)))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def seeds():
    out = {t: {} for t in ("pid-stat", "pid-status", "numa-maps", "numastat", "shmaps", "proc-stat", "meminfo", "distance",
                           "nodelist", "state", "config")}

    def add(target, name, data):
        if data not in out[target].values():
            out[target][name] = data

    for tree in trees():
        root = os.path.join(FIX, tree)
        for f in sorted(glob.glob(os.path.join(root, "proc", "[0-9]*", "*"))):
            pid, kind = f.split(os.sep)[-2:]
            target = {"stat": "pid-stat", "status": "pid-status", "numa_maps": "numa-maps"}.get(kind)
            if target:
                add(target, "%s-%s" % (tree, pid), read(f))
        if os.path.exists(os.path.join(root, "proc", "stat")):
            add("proc-stat", tree, read(os.path.join(root, "proc", "stat")))
        if os.path.exists(os.path.join(root, "proc", "meminfo")):
            add("meminfo", tree + "-proc", read(os.path.join(root, "proc", "meminfo")))
        ndir = os.path.join(root, "sys", "devices", "system", "node")
        online = read(os.path.join(ndir, "online")).strip() if os.path.exists(os.path.join(ndir, "online")) else None
        for n in sorted(glob.glob(os.path.join(ndir, "node[0-9]*"))):
            node = os.path.basename(n)
            if os.path.exists(os.path.join(n, "meminfo")):
                add("meminfo", "%s-%s" % (tree, node), read(os.path.join(n, "meminfo")))
            if online is not None and os.path.exists(os.path.join(n, "distance")):
                add("distance", "%s-%s" % (tree, node), online + b"\n" + read(os.path.join(n, "distance")))
            if os.path.exists(os.path.join(n, "cpulist")):
                add("nodelist", "%s-%s-cpulist" % (tree, node), read(os.path.join(n, "cpulist")))
        for f in ("online", "possible", "has_cpu", "has_memory"):
            p = os.path.join(ndir, f)
            if os.path.exists(p):
                add("nodelist", "%s-%s" % (tree, f), read(p))
        p = os.path.join(root, "sys", "devices", "system", "cpu", "online")
        if os.path.exists(p):
            add("nodelist", tree + "-cpu-online", read(p))

    # hand-written edge cases
    stat_tail = b" S 1 1 1 0 -1 4194560 100 0 0 0 10 20 0 0 20 0 1 0 300 1000 50 18446744073709551615" \
        b" 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
    for name, comm in (("hostile", b"a) (b c"), ("parens", b")))((("), ("empty", b""),
                       ("newline", b"x\ny"), ("long-kthread", b"kworker/u8:2-events_unbound"),
                       ("utf8", "caf\u00e9".encode()), ("binary", bytes(range(1, 16)))):
        add("pid-stat", "edge-" + name, b"4242 (" + comm + b")" + stat_tail)
    add("nodelist", "edge-ranges", b"0-3,7,9-11\n")
    add("nodelist", "edge-spaces", b" 0 - 3 , 70 \n")
    add("nodelist", "edge-max", b"1048576")
    add("nodelist", "edge-empty", b"\n")
    add("numa-maps", "edge-mixed",
        b"7f0000000000 interleave:0-3 anon=4 dirty=4 N0=1 N1=1 N2=1 N3=1 kernelpagesize_kB=4\n"
        b"7f0000400000 bind:2 file=/x\\012y huge dirty=1 N2=1 kernelpagesize_kB=2048\n"
        b"7f0000800000 weighted interleave:1,3 anon=2 N1=1 N3=1\n"
        b"7f0000c00000 default\n")
    items = (b"anon", b"file", b"kernel_stack", b"pagetables", b"sec_pagetables", b"shmem", b"file_mapped",
             b"file_dirty", b"file_writeback", b"swapcached", b"anon_thp", b"file_thp", b"shmem_thp",
             b"inactive_anon", b"active_anon", b"inactive_file", b"active_file", b"unevictable",
             b"slab_reclaimable", b"slab_unreclaimable", b"workingset_refault_anon", b"workingset_refault_file",
             b"workingset_activate_anon", b"workingset_activate_file", b"workingset_restore_anon",
             b"workingset_restore_file", b"workingset_nodereclaim")
    add("numastat", "edge-4node", b"".join(b"%s N0=%d N1=4096 N2=0 N3=%d\n" % (it, 4096 * i, 1 << 30)
                                           for i, it in enumerate(items)))
    add("numastat", "edge-sparse", b"anon N0=4096 N2=1073741824\nfile N0=8192 N2=0\nshmem N0=8192 N2=0\n"
        b"active_file N0=0 N2=0 N1023=18446744073709551615")
    add("numastat", "edge-v1", b"total=10 N0=5 N1=5\nfile=4 N0=4 N1=0\nanon=6 N0=1 N1=5\n")
    add("numastat", "edge-bad", b"anon N0=1 N0=2\nfile N1024=1\nshmem N0=18446744073709551616\n")
    add("numastat", "edge-empty", b"")
    add("shmaps", "edge-probe",
        b"55c991923000-55c991924000 r--p 00000000 fe:00 10953293                   /usr/local/bin/probe\n"
        b"55c9baf96000-55c9bafb7000 rw-p 00000000 00:00 0                          [heap]\n"
        b"7fbd8bac3000-7fbd8bbc3000 r--s 00000000 fe:00 10953338                   /srv/data/disk file\n"
        b"7fbd8bbc3000-7fbd8bcc3000 rw-s 00000000 00:01 131                        /dev/zero (deleted)\n"
        b"7fbd8bcc3000-7fbd8bdc3000 r--p 00000000 00:1a 15                         /dev/shm/np probe (x)\n"
        b"7fbd8bdc3000-7fbd8bec3000 rw-s 00000000 00:1a 15                         /dev/shm/np probe (x)\n"
        b"7fbd8bec3000-7fbd8bfc3000 rw-s 00000000 00:01 130                        /memfd:pg shared (buf) (deleted)\n"
        b"7fbd8bfc3000-7fbd8c0c3000 rw-s 00000000 00:01 2                          /SYSV00000000 (deleted)\n"
        b"7fbd8c0c3000-7fbd8c0c6000 rw-p 00000000 00:00 0 \n"
        b"7fbd8c0ec000-7fbd8c242000 r-xp 00026000 fe:00 332835                     "
        b"/usr/lib/x86_64-linux-gnu/libc.so.6\n"
        b"7fbd8c2ae000-7fbd8c2af000 r--s 00000000 00:1a 16                         /dev/shm/np-unlinked (deleted)\n"
        b"7fbd8c2b2000-7fbd8c2b4000 r--s 00000000 00:01 3                          /SYSV4e505301 (deleted)\n"
        b"7fbd8c2bc000-7fbd8c2be000 r-xp 00000000 00:00 0                          [vdso]\n"
        b"7fffeaccc000-7fffeaced000 rw-p 00000000 00:00 0                          [stack]\n"
        b"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n")
    add("shmaps", "edge-names",
        b"7f0000000000-7f0000001000 rw-s 00000000 00:01 7 /memfd:a) (b (deleted) (deleted)\n"
        b"7f0000001000-7f0000002000 rw-s 00000000 00:01 8 [anon_shmem:pool (a)]\n"
        b"7f0000200000-7f0000400000 rw-s 00000000 00:1f4 9 /memfd:huge (deleted)\n"
        b"7f0000000000-7f0000001000 rw-s 00000000 fe:00 7 /SYSV00000000 (deleted)\n"
        b"7f0000400000-7f0000401000 r--s 00001000 00:1a 10 /dev/shm/PostgreSQL.1804289383")
    add("shmaps", "edge-bad", b"7f01-7f00 rw-s 00000000 00:01 7 /dev/zero (deleted)\n")
    add("proc-stat", "edge-short", b"cpu  1 2 3 4\ncpu0 1 2 3 4\ncpu7 1 2 3 4 5 6 7 8 9 10 11\nintr 1\n")
    add("distance", "edge-sparse", b"0,2,5,9,70\n10 16 32 32 40\n")
    add("meminfo", "edge-hugepages", b"Node 0 MemTotal:  1024 kB\nNode 0 MemFree: 512 kB\n"
        b"Node 0 Inactive(file): 10 kB\nNode 0 HugePages_Total:     4\n")
    add("pid-status", "edge-kthread", b"Name:\tkthreadd\nUmask:\t0000\nState:\tS (sleeping)\nTgid:\t2\n"
        b"Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nThreads:\t1\nCpus_allowed_list:\t0-1\n"
        b"Mems_allowed_list:\t0\n")

    state = (b"[numaplaced]\nVersion=1\nHierarchy=/sys/fs/cgroup/cpuset/numaplaced\nCgroupMode=v1\n\n"
             b"[process 4242]\nPid=4242\nStartTime=20481\nBackend=cpuset\nCgroup=/numaplaced/nodes-1\n"
             b"OriginalCgroup=/\nOriginalAffinity=0-3\nNodes=1\nCPUs=2-3\nThread.4242.Cgroup=/\n"
             b"Thread.4242.Affinity=0-3\nThread.4243.Cgroup=/system.slice/a\\sb\nThread.4243.Affinity=0\n"
             b"Threads=4242;4243;\n\n"
             b"[process 5151]\nPid=5151\nStartTime=30215\nBackend=affinity\nOriginalAffinity=0-1\nNodes=0\n"
             b"CPUs=0-1\nThread.5151.Affinity=0-1\nThreads=5151;\n\n"
             b"[process 6000]\nPid=6000\nStartTime=41000\nBackend=systemd\nNodes=2-3\nCPUs=4-7\n"
             b"Threads=6000;\nUnit=hugeapp.service\nOriginalAllowedCPUs=\n")
    add("state", "three-records", state)
    add("state", "truncated", state[:len(state) * 2 // 3])
    add("state", "version-2", state.replace(b"Version=1", b"Version=2"))
    add("state", "empty", b"")

    conf = read(os.path.join(SRC, "config", "numaplaced.conf"))
    add("config", "shipped", conf)
    add("config", "shipped-dropins", conf + b"\0[Daemon]\nScanIntervalSec=2\nMaxScanIntervalSec=4\n"
        b"\0[Placement]\nInclude=postgres* 4242\nReservedCPUs=0-1,8\n\0[Migration]\nMaxRate=1.5G\n")
    add("config", "every-key",
        b"[Daemon]\nMode=advise\nBackend=affinity\nScanIntervalSec=0.5\nMaxScanIntervalSec=500ms\n"
        b"LogLevel=debug\nReleaseOnStop=no\n[Placement]\nTargetUtilization=70\nMemoryLocalityTarget=95\n"
        b"MinProcessMemory=1G\nMinProcessCPU=1.5\nMinSecondsBetweenMoves=0\nReservedCPUs=0\n"
        b"KeepInterleaved=yes\nInclude=a\\sb,c*\nExclude=\n[Migration]\nSkipOverlappingNodes=no\n"
        b"MaxRate=64M\nMoveSharedPages=no\n")
    add("config", "no-main-file", b"")
    add("config", "bad-line", b"[Daemon]\nMode=sometimes\n")
    return out


def main():
    for target, files in seeds().items():
        d = os.path.join(CORPUS, "fuzz-" + target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(data)
        print("%-16s %d seeds" % (target, len(files)))


if __name__ == "__main__":
    sys.exit(main())
