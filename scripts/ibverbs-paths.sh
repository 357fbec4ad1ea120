#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Where the installed libibverbs looks for providers, read from the library itself.
#   ibverbs-paths.sh provider-dir   e.g. /usr/lib/x86_64-linux-gnu/libibverbs
#   ibverbs-paths.sh config-dir     e.g. /etc/libibverbs.d (the .driver files)
#   ibverbs-paths.sh pabi           e.g. 34: a provider is lib<name>-rdmav<pabi>.so
#
# libibverbs dlopen()s "<provider dir>/lib<name>-rdmav<pabi>.so" for every
# "driver <name>" line in the config directory; both paths and the private ABI
# number are compiled into libibverbs.so.1, so they are read from there (not
# guessed from pkg-config or a multiarch triplet).  LIBIBVERBS=/path/to/libibverbs.so.1
# names another library; IBVERBS_PROVIDER_DIR and IBVERBS_CONFIG_DIR override.
set -euo pipefail

die() { echo "ibverbs-paths.sh: $*" >&2; exit 1; }

lib=${LIBIBVERBS:-}
if [ -z "$lib" ]; then
	# awk reads all of ldconfig's output: an early exit would SIGPIPE it under pipefail.
	lib=$(ldconfig -p | awk '$1 == "libibverbs.so.1" && /x86-64/ && !found { print $NF; found = 1 }')
	[ -n "$lib" ] || die "no libibverbs.so.1 installed (apt-get install libibverbs1)"
fi
[ -r "$lib" ] || die "cannot read $lib"
command -v strings >/dev/null || die "strings is missing (apt-get install binutils)"
mapfile -t text < <(strings -a "$lib")

# "/usr/lib/x86_64-linux-gnu/libibverbs/lib%s-rdmav34.so": the format libibverbs loads with.
pattern=
for s in "${text[@]}"; do
	if [[ "$s" =~ ^/.*/lib%s-rdmav[0-9]+\.so$ ]]; then
		pattern=$s
		break
	fi
done
[ -n "$pattern" ] || die "$lib names no provider path (lib%s-rdmav<N>.so): not rdma-core's libibverbs?"

case "${1:-}" in
provider-dir)
	echo "${IBVERBS_PROVIDER_DIR:-${pattern%/*}}"
	;;
pabi)
	pabi=${pattern##*-rdmav}
	echo "${pabi%.so}"
	;;
config-dir)
	if [ -n "${IBVERBS_CONFIG_DIR:-}" ]; then
		echo "$IBVERBS_CONFIG_DIR"
		exit 0
	fi
	for s in "${text[@]}"; do
		if [[ "$s" =~ ^/.*/libibverbs\.d$ ]]; then
			echo "$s"
			exit 0
		fi
	done
	die "$lib names no configuration directory (.../libibverbs.d)"
	;;
*)
	echo "usage: ibverbs-paths.sh provider-dir|config-dir|pabi" >&2
	exit 2
	;;
esac
