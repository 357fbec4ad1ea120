#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --pair --expect-fail crash --no-module
# Self-test of the guest harness: guest b's kernel panics while guest a waits
# for it.  The harness must see that b ended before its test did and stop a at
# once, failing the run for that reason ("crash"); before, a waited out its
# timeout, which make bench sets to two hours (seen: a guest that panicked in
# rdma_rxe's run kept the bench waiting).  a waits 240 s: a harness that does not
# stop it lets it finish, and the run then fails for a reason other than crash.
. "$(dirname "$0")/lib.sh"

check "barrier: both guests up" pair_barrier up
if [ "$MR_ROLE" = b ]; then
	sync
	echo c >/proc/sysrq-trigger	# a deliberate panic: QEMU exits (-no-reboot)
	sleep 60
	not_ok "the panic did not happen"
else
	sleep 240
fi
done_testing
