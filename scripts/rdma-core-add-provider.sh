#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Adds our provider to an unpacked rdma-core source tree, where upstream would keep it.
#   rdma-core-add-provider.sh TREE
# TREE/providers/metaroce and TREE/kernel-headers/rdma/metaroce-abi.h become
# links into this source tree, and rdma-core's CMakeLists.txt files learn about
# them.  Safe to run again.  Files are replaced, never edited through a link, so
# TREE may be a hard-linked copy (cp -al) of a pristine tree.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tree=${1:?usage: rdma-core-add-provider.sh TREE}

die() { echo "rdma-core-add-provider.sh: $*" >&2; exit 1; }

if [ ! -f "$tree/CMakeLists.txt" ] || [ ! -d "$tree/providers" ]; then
	die "$tree is not an rdma-core tree"
fi
ln -sfn "$top/userspace/providers/metaroce" "$tree/providers/metaroce"
ln -sfn "$top/include/uapi/rdma/metaroce-abi.h" "$tree/kernel-headers/rdma/metaroce-abi.h"

# add_line FILE WANT AFTER: FILE gets line WANT after its line AFTER, once.
add_line() {
	local file=$1 want=$2 after=$3
	grep -qxF "$want" "$file" && return 0
	awk -v want="$want" -v after="$after" '{ print } $0 == after { print want }' \
		"$file" >"$file.tmp"
	grep -qxF "$want" "$file.tmp" || { rm -f "$file.tmp"; die "no line '$after' in $file"; }
	mv "$file.tmp" "$file"
}
add_line "$tree/CMakeLists.txt" 'add_subdirectory(providers/metaroce)' 'add_subdirectory(providers/siw)'
add_line "$tree/kernel-headers/CMakeLists.txt" '  rdma/metaroce-abi.h' '  rdma/mana-abi.h'
