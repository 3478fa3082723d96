#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Lint man pages: for each PAGE, "mandoc -Tlint -W warning PAGE" and
# "groff -man -ww -z PAGE" must print nothing. Prints their messages and
# exits 1 on any; exits 1 with a clear message (never skips) when mandoc or
# groff is not installed (Debian packages mandoc and groff-base, installed by
# the README's test command, run-tests.sh).
#
# Usage: lint-man.sh PAGE...
set -u

missing=0
if ! command -v mandoc >/dev/null 2>&1; then
        echo "lint-man: mandoc not found; install the Debian package 'mandoc' (run-tests.sh does)" >&2
        missing=1
fi
if ! command -v groff >/dev/null 2>&1; then
        echo "lint-man: groff not found; install the Debian package 'groff-base' (run-tests.sh does)" >&2
        missing=1
fi
[ "$missing" -eq 0 ] || exit 1
if [ $# -eq 0 ]; then
        echo "usage: lint-man.sh PAGE..." >&2
        exit 2
fi

fail=0
for page in "$@"; do
        if [ ! -r "$page" ]; then
                echo "lint-man: $page: cannot read" >&2
                fail=1
                continue
        fi
        page_ok=1
        out=$(mandoc -Tlint -W warning "$page" 2>&1)
        rc=$?
        if [ -n "$out" ] || [ "$rc" -ne 0 ]; then
                echo "lint-man: $page: mandoc -Tlint -W warning (exit $rc):"
                printf '%s\n' "$out"
                page_ok=0
        fi
        out=$(groff -man -ww -z "$page" 2>&1)
        rc=$?
        if [ -n "$out" ] || [ "$rc" -ne 0 ]; then
                echo "lint-man: $page: groff -man -ww -z (exit $rc):"
                printf '%s\n' "$out"
                page_ok=0
        fi
        if [ "$page_ok" -eq 1 ]; then
                echo "lint-man: $page: clean"
        else
                fail=1
        fi
done
exit $fail
