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
bad=0
n=0
for f in $(find daemon tests -name '*.[ch]' -not -path '*/fixtures/*' -not -path '*/corpus/*' | sort); do
        n=$((n + 1))
        if ! "$cf" --dry-run --Werror "$f" >/tmp/check-format.$$ 2>&1; then
                echo "check-format: $f does not match .clang-format:"
                head -20 /tmp/check-format.$$
                bad=$((bad + 1))
        fi
done
rm -f /tmp/check-format.$$
if [ "$bad" -gt 0 ]; then
        echo "check-format: $bad of $n files differ; run clang-format -i on them"
        exit 1
fi
echo "check-format: $n files match .clang-format"
