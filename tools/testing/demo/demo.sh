#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make demo: set up, build, boot two guests joined by an 8-link ECMP fabric, run
# MetaRoCE, rdma_rxe and TCP side by side at 0% and 1% random loss on every
# link, print the table.  The short version of make bench's loss sweep.
set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "demo: MetaRoCE vs rdma_rxe vs TCP between two QEMU guests over 8 fabric links"
rc=0
QUICK=demo BENCH_SCENARIOS=loss "$top/tools/testing/bench/bench.sh" | tee "$log" |
	sed -un 's/^bench: /demo: /p' || rc=$?
md=$(sed -n 's/^demo: \(.*results\.md\)$/\1/p; s/^bench: \(.*results\.md\)$/\1/p' "$log" | tail -n1)
if [ -z "$md" ] || [ ! -s "$md" ]; then
	echo "demo: no results (see above)" >&2
	exit 1
fi
echo
sed -n '/^## 1\. Loss sweep/,/^## 2\./p; /^## Plots/q' "$md" | grep -v '^## [2P]'
echo "demo: mr_ktraffic checked the RDMA data at the receiver (the last Write in each of"
echo "demo: its 64 slots); TCG-emulated guests on a shared machine, so compare ratios,"
echo "demo: not absolute MB/s.  Plots and raw data: ${md%/*}/"
exit "$rc"
