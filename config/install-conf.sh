#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# meson install script: install the commented numaplaced.conf into
# sysconfdir unless one is already there (an operator's edits survive
# "meson install"; install_data() would overwrite them).
# usage: install-conf.sh SOURCE SYSCONFDIR
set -eu
src=$1
dir=${DESTDIR:-}$2
if [ -e "$dir/numaplaced.conf" ]; then
        echo "Keeping existing $dir/numaplaced.conf (the shipped one is $src)"
        exit 0
fi
if [ -n "${MESON_INSTALL_DRY_RUN:-}" ]; then
        echo "Would install $src to $dir/numaplaced.conf"
        exit 0
fi
install -d -m 0755 "$dir"
install -m 0644 "$src" "$dir/numaplaced.conf"
echo "Installing $src to $dir/numaplaced.conf"
