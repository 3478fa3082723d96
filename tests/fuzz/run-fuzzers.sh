#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run every libFuzzer target (or the ones named) for a fixed number of
# executions, starting from its committed corpus, and print one line per
# target: executions, crashes, speed, new inputs found, and coverage growth
# (libFuzzer's cov: edges and ft: features once the corpus is loaded, then at
# the end of the run). Exit status 1 when any target crashed (the input is in
# BUILDDIR/fuzz-work/<target>/).
#
#   tests/fuzz/run-fuzzers.sh [-C BUILDDIR] [-n RUNS] [--merge] [TARGET[:RUNS]...]
#
# BUILDDIR (default build-fuzz) is set up with clang and -Dfuzz=true when
# missing. RUNS defaults to 100000 per target. --merge adds the new inputs
# that increase coverage to tests/fuzz/corpus/<target>/ (libFuzzer -merge=1),
# to be committed. Inputs found in a run stay in BUILDDIR/fuzz-work/ and are
# used again by the next run.
set -euo pipefail
cd "$(dirname "$0")/../.."

builddir=build-fuzz
runs=100000
merge=no
targets=()
while [ $# -gt 0 ]; do
        case "$1" in
        -C) builddir=$2; shift 2 ;;
        -n) runs=$2; shift 2 ;;
        --merge) merge=yes; shift ;;
        -h|--help) sed -n '3,16p' "$0"; exit 0 ;;
        *) targets+=("$1"); shift ;;
        esac
done
if [ ${#targets[@]} -eq 0 ]; then
        targets=(pid-stat pid-status numa-maps numastat shmaps proc-stat meminfo distance nodelist state config)
fi

# fuzz-config writes its input to a directory under $TMPDIR: on tmpfs it runs
# about three times as fast as on ext4
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
        export TMPDIR=/dev/shm
fi

if [ ! -f "$builddir/build.ninja" ]; then
        CC=clang meson setup "$builddir" -Dfuzz=true -Dvm_tests=false >/dev/null
fi
meson compile -C "$builddir" >/dev/null

printf '%-12s %12s %8s %10s %8s %8s %13s %15s\n' target executions crashes exec/s new corpus \
        'cov start>end' 'ft start>end'
failed=0
for spec in "${targets[@]}"; do
        t=${spec%%:*}
        n=$runs
        [ "$spec" != "$t" ] && n=${spec#*:}
        bin=$builddir/tests/fuzz/fuzz-$t
        seeds=tests/fuzz/corpus/fuzz-$t
        work=$builddir/fuzz-work/$t
        [ -x "$bin" ] || { echo "run-fuzzers: no target $bin" >&2; exit 2; }
        mkdir -p "$work/corpus" "$work/artifacts"
        log=$work/last.log
        rc=0
        "$bin" -runs="$n" -print_final_stats=1 -timeout=30 -rss_limit_mb=4096 -max_len=16384 \
                -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds" >"$log" 2>&1 || rc=$?
        execs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$log")
        speed=$(awk '/stat::average_exec_per_sec/ { print $2 }' "$log")
        new=$(awk '/stat::new_units_added/ { print $2 }' "$log")
        # coverage after loading the corpus (the INITED line) and at the end
        # (DONE, or the last status line before a crash)
        cov0=$(awk '/INITED/ { for (i = 1; i < NF; i++) if ($i == "cov:") print $(i + 1) }' "$log" | tail -n 1)
        ft0=$(awk '/INITED/ { for (i = 1; i < NF; i++) if ($i == "ft:") print $(i + 1) }' "$log" | tail -n 1)
        cov1=$(awk '/^#[0-9]+/ { for (i = 1; i < NF; i++) if ($i == "cov:") print $(i + 1) }' "$log" | tail -n 1)
        ft1=$(awk '/^#[0-9]+/ { for (i = 1; i < NF; i++) if ($i == "ft:") print $(i + 1) }' "$log" | tail -n 1)
        crashes=0
        if [ "$rc" != 0 ]; then
                crashes=1
                failed=1
                # libFuzzer stops at the first crash; without final stats the
                # count of executions is the last progress line's
                [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
        fi
        printf '%-12s %12s %8s %10s %8s %8s %13s %15s\n' "$t" "${execs:-?}" "$crashes" "${speed:-?}" "${new:-?}" \
                "$(find "$work/corpus" -type f | wc -l)" "${cov0:-?}>${cov1:-?}" "${ft0:-?}>${ft1:-?}"
        if [ "$rc" != 0 ]; then
                echo "  crashed (rc $rc); input and log:" "$work"/artifacts/* "$log"
                grep -m 5 -E 'ERROR|SUMMARY|invariant' "$log" | sed 's/^/  /'
        fi
        if [ "$merge" = yes ]; then
                "$bin" -merge=1 -max_len=16384 "$seeds" "$work/corpus" >"$work/merge.log" 2>&1
        fi
done
exit $failed
