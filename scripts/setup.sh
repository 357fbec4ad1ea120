#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Installs (with apt) what a make target needs; quiet and quick when all is there.
#   setup.sh GROUP...   groups: build build61 lint unit kunit vm  (lists in scripts/deps/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

want=()
for group in "$@"; do
	case "$group" in
	build) want+=("$("$here/kver.sh" meta 6.12)") ;;
	build61) want+=("$("$here/kver.sh" meta 6.1)"); continue ;;
	esac
	list="$here/deps/$group.txt"
	[ -f "$list" ] || { echo "setup.sh: unknown group '$group'" >&2; exit 2; }
	while read -r pkg _; do
		[ -z "$pkg" ] || [ "${pkg:0:1}" = "#" ] || want+=("$pkg")
	done <"$list"
done
# Guests boot the kernel whose headers we build against.
if [[ " $* " == *" vm "* ]]; then
	want+=("$("$here/kver.sh" meta 6.12)")
fi

missing=()
for pkg in "${want[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
	[ "$status" = installed ] || missing+=("$pkg")
done
# The metapackage may have moved on: the image must match the headers we use.
if [[ " $* " == *" vm "* ]] && dpkg-query -W "$("$here/kver.sh" meta 6.12)" >/dev/null 2>&1; then
	kv=$("$here/kver.sh" version 6.12)
	[ -e "/boot/vmlinuz-$kv" ] || missing+=("linux-image-$kv-unsigned")
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "setup.sh: need root to install: ${missing[*]}" >&2
	exit 1
fi
echo "setup.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
stamp=/var/lib/apt/periodic/metaroce-update-stamp
if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +360)" ]; then
	apt-get update -q >/dev/null
	mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/metaroce-apt.log 2>&1 || {
	tail -20 /tmp/metaroce-apt.log >&2
	echo "setup.sh: apt-get install failed (log: /tmp/metaroce-apt.log)" >&2
	exit 1
}
