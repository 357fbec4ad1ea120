#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The one place that knows which Debian kernels we build and test on.
#   kver.sh meta SERIES     the Debian metapackage that tracks SERIES (6.12 or 6.1)
#   kver.sh version SERIES  the installed point release, e.g. 6.12.117+deb12-amd64
set -eu

meta() {
	case "$1" in
	6.12) echo linux-headers-6.12-amd64 ;;	# primary: guests run this
	6.1) echo linux-headers-amd64 ;;	# bookworm's default series: compile check
	*) echo "kver.sh: unknown series '$1' (6.12 or 6.1)" >&2; exit 2 ;;
	esac
}

case "${1:-}" in
meta) meta "${2:-6.12}" ;;
version)
	pkg=$(meta "${2:-6.12}")
	dep=$(dpkg-query -W -f='${Depends}' "$pkg" 2>/dev/null) || {
		echo "kver.sh: $pkg is not installed (run scripts/setup.sh build)" >&2
		exit 1
	}
	# "linux-headers-6.12.117+deb12-amd64 (= 6.12.117-1~deb12u1)"
	dep=${dep%% *}
	echo "${dep#linux-headers-}"
	;;
*) echo "usage: kver.sh meta|version [6.12|6.1]" >&2; exit 2 ;;
esac
