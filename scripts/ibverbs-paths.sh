#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Where the installed libibverbs looks for providers, read from the library itself.
#   ibverbs-paths.sh provider-dir   e.g. /usr/lib/x86_64-linux-gnu/libibverbs
#   ibverbs-paths.sh config-dir     e.g. /etc/libibverbs.d (the .driver files)
#   ibverbs-paths.sh pabi           e.g. 34: a provider is lib<name>-rdmav<pabi>.so
#   ibverbs-paths.sh qp-ex-size     e.g. 240: sizeof(struct ibv_qp_ex) in the
#                                   system's <infiniband/verbs.h> (libibverbs-dev)
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
qp-ex-size)
	# The provider is built in a newer rdma-core tree, whose ibv_qp_ex may be
	# longer than the one the system's libibverbs was built with; libibverbs
	# reads verbs_qp.comp_mask right after its own (userspace/providers/
	# metaroce/metaroce.h, verbs_qp_mark_ex).  Read from an object's symbol
	# size, so nothing is run.
	command -v gcc >/dev/null || die "gcc is missing"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	printf '#include <infiniband/verbs.h>\nchar metaroce_qp_ex_size[sizeof(struct ibv_qp_ex)];\n' \
		>"$tmp/s.c"
	gcc -c -o "$tmp/s.o" "$tmp/s.c" 2>"$tmp/err" ||
		die "cannot compile against <infiniband/verbs.h> (apt-get install libibverbs-dev): $(head -3 "$tmp/err")"
	size=$(nm -S "$tmp/s.o" | awk '$4 == "metaroce_qp_ex_size" { print $2 }')
	[ -n "$size" ] || die "no size for struct ibv_qp_ex"
	echo $((16#$size))
	;;
*)
	echo "usage: ibverbs-paths.sh provider-dir|config-dir|pabi|qp-ex-size" >&2
	exit 2
	;;
esac
