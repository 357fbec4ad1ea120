#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm: --no-module
# Self-test of the pair helpers of lib.sh, in one guest playing side a.
# A barrier whose peer never comes must end the test at once (check bails out
# with a failure).  Before, a pair test went on to its next steps, each waiting
# for a peer that was elsewhere: one desynchronised ucx run spent 20 minutes of
# CI so.  The bail-out runs in a subshell and is judged here.
# client_connect must try again while the server is not listening yet, in each
# client's words (rping's, ucmatose's and udaddy's as they print them when no one
# listens, seen in a guest), and not after other failures: ucx_perftest says
# "connect() failed: Connection refused", and gave up at once when its server
# started later than the 1 s run_pair allows (UCP's set-up under TCG on a slower
# machine: that same CI run).
. "$(dirname "$0")/lib.sh"

[ "$MR_ROLE" = a ] || { not_ok "run as side a (MR_ROLE=$MR_ROLE)"; done_testing; }
t0=$SECONDS
out=$(
	check "barrier: a peer that never comes" pair_barrier never 3
	echo "went on"
)
rc=$?
sed 's/^/#   | /' <<<"$out"
check_eq "the failed barrier ended the test with a failure" 1 "$rc"
check "it said why" grep -qF "Bail out! the peer did not reach barrier 'never'" <<<"$out"
check "nothing ran after it" bash -c "! grep -q 'went on'" <<<"$out"
check "it waited no longer than the barrier's 3 s (took $((SECONDS - t0)) s)" \
	test $((SECONDS - t0)) -le 10

# A client that cannot reach its server twice, then can.
refused_twice() {
	local n
	n=$(($(cat /tmp/tries 2>/dev/null || echo 0) + 1))
	echo "$n" >/tmp/tries
	[ "$n" -gt 2 ] && { echo "connected"; return 0; }
	echo "client: $1"
	return 255
}
for msg in "connect() failed: Connection refused" "Couldn't connect to 198.18.0.2:18515" \
	"cma event RDMA_CM_EVENT_REJECTED, error 8" "cmatose: event: RDMA_CM_EVENT_REJECTED, error: 8" \
	"udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: 1"; do
	rm -f /tmp/tries
	client_connect 5 refused_twice "$msg"
	check_eq "client_connect tried again after '$msg'" "0 3" "$CLIENT_RC $(cat /tmp/tries)"
done
for msg in "Segmentation fault" "cma event RDMA_CM_EVENT_REJECTED, error 28"; do
	rm -f /tmp/tries
	client_connect 5 refused_twice "$msg"
	check_eq "but not after '$msg'" "255 1" "$CLIENT_RC $(cat /tmp/tries)"
done
done_testing
