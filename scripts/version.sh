#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The release version (upstream part of debian/changelog's newest entry, e.g. 0.1.0):
# the one place it is kept; DKMS, make install and the packages take it from here.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
v=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$top/debian/changelog")
[ -n "$v" ] || { echo "version.sh: cannot read the version from debian/changelog" >&2; exit 1; }
echo "${v%-*}"
