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

here=$(cd "$(dirname "$0")" && pwd)
use_provider

bin=/tmp/uverbs_access
check "build the test program" gcc -O2 -Wall -Wextra -Werror -I"$top/include/uapi" \
	-o "$bin" "$here/uverbs_access.c" "$here/uverbs_util.c" -libverbs

topo_veth_pair
check "modprobe metaroce" modprobe metaroce
check "modprobe ib_uverbs" modprobe ib_uverbs
check "mr0 on h1/v1" ip netns exec h1 rdma link add mr0 type metaroce netdev v1
check "mr1 on h2/v2" ip netns exec h2 rdma link add mr1 type metaroce netdev v2
check "mr0 port ACTIVE" wait_for 5 port_is mr0 "4: ACTIVE"
check "mr1 port ACTIVE" wait_for 5 port_is mr1 "4: ACTIVE"
check "mr0 has its IPv4 GID" wait_for 10 addr_gid_index mr0 198.18.1.1
check "mr1 has its IPv4 GID" wait_for 10 addr_gid_index mr1 198.18.1.2
g0=$(addr_gid_index mr0 198.18.1.1)
g1=$(addr_gid_index mr1 198.18.1.2)

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
