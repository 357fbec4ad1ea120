#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# needs: provider
# [MR-SEC-7] The kernel writes into local memory only through MRs that grant
# IB_ACCESS_LOCAL_WRITE.  MRs with access 0 over a read-only mapping of a
# mode-0444 file and over untouched anonymous memory (the zero page) are
# offered as RC, UD and SRQ receive buffers and as the local buffers of an
# RDMA Read and an atomic: each WQE fails with LOC_PROT_ERR, the counter
# local_access_errors moves, the file's checksum and the zero page do not
# change, and writable MRs still receive (uverbs_access.c).  Issue 13 defect 1.
. "$(dirname "$0")/lib.sh"

use_provider
uverbs_veth_devices uverbs_access

# A file nobody may write, with a pattern, as a setuid binary's pages would be.
ro=/tmp/uverbs_access.ro
head -c 4096 /dev/urandom >"$ro"
chmod 0444 "$ro"
sum_before=$(sha256sum <"$ro")
before=$(hw_counter mr1 local_access_errors)
out=$(timeout 180 "$bin" mr0 mr1 "$g0" "$g1" "$ro" 2>&1)
rc=$?
sed 's/^/#   /' <<<"$out"
check_eq "every write into an access-0 MR was refused, writable MRs received" 0 "$rc"
echo 3 >/proc/sys/vm/drop_caches
check_eq "the read-only file is unchanged (also after the page cache is dropped)" \
	"$sum_before" "$(sha256sum <"$ro")"
after=$(hw_counter mr1 local_access_errors)
log "local_access_errors on mr1: $before -> $after"
check "the refusals were counted" test "$((after - before))" -ge 5
check "rdma link delete mr0" rdma link delete mr0
check "rdma link delete mr1" rdma link delete mr1
check "rmmod metaroce" rmmod metaroce
done_testing
