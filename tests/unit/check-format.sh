#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The tree matches .clang-format: every C source and header under daemon/ and
# tests/ is run through "clang-format --dry-run --Werror". Prints the files
# that differ (with clang-format's messages) and exits 1; exits 1 with a clear
# message (never skips) when clang-format is not installed (Debian package
# clang-format, installed by run-tests.sh). Fix with: clang-format -i FILE...
#
# Usage: check-format.sh SOURCE_ROOT
set -u
root=${1:?usage: check-format.sh SOURCE_ROOT}
cf=$(command -v clang-format || command -v clang-format-14 || true)
if [ -z "$cf" ]; then
        echo "check-format: clang-format not found; install the Debian package 'clang-format' (run-tests.sh does)" >&2
        exit 1
fi
cd "$root" || exit 1
files=$(find daemon tests -name '*.[ch]' -not -path '*/fixtures/*' -not -path '*/corpus/*' | sort)
n=$(echo "$files" | wc -l)
# one clang-format for all the files: a process per file took over 30 s on
# a loaded 2-core machine
# shellcheck disable=SC2086
if ! "$cf" --dry-run --Werror $files >/tmp/check-format.$$ 2>&1; then
        bad=$(grep -oE '^[^:]+\.[ch]:[0-9]+:[0-9]+: (warning|error)' /tmp/check-format.$$ | cut -d: -f1 | sort -u)
        head -40 /tmp/check-format.$$
        rm -f /tmp/check-format.$$
        echo "check-format: $(echo "$bad" | grep -c .) of $n files differ; run clang-format -i on them:" $bad
        exit 1
fi
rm -f /tmp/check-format.$$
echo "check-format: $n files match .clang-format"
