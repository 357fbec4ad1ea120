#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --timeout 600
# needs: provider
# Memory windows through our provider (uverbs_mw.c): type 1 bound with
# ibv_bind_mw, type 2B with IBV_WR_BIND_MW and ibv_wr_bind_mw; Writes and
# Reads through a window checked byte by byte, the bytes around it unchanged;
# refused: the MR's own rkey (no remote rights), a window's old key, the MR
# outside the window, a type 2 window through a QP it is not bound to, keys
# after Send with Invalidate, LOCAL_INV or a zero-length bind; binds that
# must fail (IBV_WC_MW_BIND_ERR); no MR deregistration while a window is
# bound.  Between two QPs of mr0, then from mr0 to mr1, in one namespace.
. "$(dirname "$0")/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
use_provider

check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
two_local_devices

bin=/tmp/uverbs_mw
check "build the test program" gcc -O2 -Wall -Wextra -Werror -o "$bin" \
	"$here/uverbs_mw.c" "$here/uverbs_util.c" -libverbs
run_mw() { # LABEL DEV_T DEV_I GID_T GID_I
	local out rc
	out=$(timeout 240 "$bin" "$2" "$3" "$4" "$5" 2>&1)
	rc=$?
	sed 's/^/#   /' <<<"$out"
	check_eq "uverbs_mw $1" 0 "$rc"
}
run_mw "between two QPs of mr0" mr0 mr0 "$g0" "$g0"
run_mw "from mr1 to mr0" mr0 mr1 "$g0" "$g1"
# Three binds per run are refused on purpose, each a refused user WQE.
check_eq "mr0: the refused binds, and no other user WQE, were counted" 6 \
	"$(hw_counter mr0 user_wqe_errors)"
check_eq "mr1: no user WQE errors" 0 "$(hw_counter mr1 user_wqe_errors)"
check "no MR, MW or QP of uverbs_mw is left" \
	sh -c '! rdma resource show 2>/dev/null | grep -q "comm uverbs_mw"'
check "rdma link delete mr1" rdma link delete mr1
check "rdma link delete mr0" rdma link delete mr0
check "rmmod metaroce" modprobe -r metaroce
done_testing
