#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make selftests-debug: the guest tests on the debug kernel of scripts/debug-kernel.sh
# (KASAN, lockdep, kmemleak, UBSAN), from a copy of the tree whose modules are built
# against that kernel, so that the normal build is left alone.
#   selftests-debug.sh [NAME...]   e.g. selftests-debug.sh uverbs_access
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
kdir=$("$top/scripts/debug-kernel.sh")
copy=$top/build/kdebug-tree
mkdir -p "$copy"
rsync -a --delete --exclude=/build --exclude=/.git "$top/" "$copy/"
# The provider is userspace: the one of the normal build serves.
"$top/scripts/provider.sh" >/dev/null
mkdir -p "$copy/build"
ln -sfn "$top/build/provider" "$copy/build/provider"
make -s -C "$kdir" M="$copy" modules
echo "selftests-debug: kernel $(cat "$kdir/include/config/kernel.release") from $kdir"
# The debug options of vm.sh (SLUB checks) on top of KASAN would only slow it down.
VM_KDIR=$kdir VM_DEBUG=0 VM_TIMEOUT_SCALE=${VM_TIMEOUT_SCALE:-3} exec "$copy/tools/testing/selftests/drivers/metaroce/run.sh" "$@"
