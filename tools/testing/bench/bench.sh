#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make bench [QUICK=1]: MetaRoCE, rdma_rxe and TCP side by side on one fabric of
# two QEMU guests joined by 8 links (vm.sh --pair --links 8): loss sweep,
# multipath, link failure.  Raw results, results.md and PNG plots go to
# build/bench-results/<UTC timestamp>/.
#   BENCH_PERFTEST="rxe"  also run rxe with perftest (ib_write_bw/ib_write_lat)
#                         instead of mr_ktraffic (default: mr_ktraffic for both,
#                         the same tool on both RDMA transports); "metaroce rxe"
#                         runs perftest on both, MetaRoCE's through our provider
#   BENCH_SCENARIOS="loss failure"  a subset (default: all seven: loss lossmix
#                         multipath failure incast manyqp perftest)
#   BENCH_REPS=3          repetitions of each run (default 5; QUICK: 1)
#   BENCH_PT_OPS="write"  the perftest scenario's operations (default: write send read)
#   BENCH_PT_LOSSES="1"   the perftest scenario's loss levels in % (default: 0 1 10);
#                         with the two above, e.g. one case repeated to chase a rare
#                         failure: BENCH_SCENARIOS=perftest BENCH_PT_OPS=write
#                         BENCH_PT_LOSSES=1 BENCH_REPS=20 QUICK=1 make bench
#   BENCH_TRACE=1         print each path's state, window, ACKs and RTO per 250 ms
#                         of MetaRoCE's failure runs ("bench: trace" lines)
#   BENCH_PUBLISH=1       copy the report to Documentation/metaroce/results.rst
#                         and its plots to Documentation/metaroce/results/
#                         (only if the run passed: no guest died or timed out)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
quick=${QUICK:-0}
[ "$quick" = 1 ] || [ "$quick" = demo ] || quick=0	# demo: make demo's short loss sweep
perftest=${BENCH_PERFTEST:-}

"$top/scripts/setup.sh" bench vm
echo "bench: building metaroce.ko, mr_ktraffic.ko and the report tool"
make -s -C "$top" module-6.12
kver=$("$top/scripts/kver.sh" version 6.12)
make -s -C "/lib/modules/$kver/build" M="$top/tools/testing/selftests/drivers/metaroce/ktraffic" \
	W=1 modules >/dev/null
# perftest on MetaRoCE (BENCH_PERFTEST, the perftest scenario) goes through our
# rdma-core provider.
scenarios=" ${BENCH_SCENARIOS:-perftest} "
if [[ " $perftest " == *" metaroce "* || "$scenarios" == *" perftest "* ]]; then
	make -s -C "$top" provider
fi
cmake -S "$here/report" -B "$top/build/bench-report" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$top/build/bench-report" -j "$(nproc)" >/dev/null
ctest --test-dir "$top/build/bench-report" --output-on-failure >/dev/null || {
	echo "bench: the report tool's own tests fail" >&2
	exit 1
}

stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=$top/build/bench-results/$stamp
mkdir -p "$out"
name=bench-$stamp
log_a=$top/build/vm-logs/$name-a.log
timeout=7200 minutes="70 to 90"
[ "$quick" = 1 ] && timeout=1800 minutes="about 15"
[ "$quick" = demo ] && timeout=900 minutes="3 to 5"
echo "bench: booting two guests with 8 fabric links (TCG); the run takes $minutes" \
	"minutes; results in $out"
start=$SECONDS
"$top/tools/testing/vm/vm.sh" --pair --links 8 --name "$name" --timeout "$timeout" \
	"$here/bench-guest.sh" "$quick" "$perftest" "${BENCH_SCENARIOS:-}" "${BENCH_REPS:-}" \
	"${BENCH_TRACE:-0}" "${BENCH_PT_OPS:-}" "${BENCH_PT_LOSSES:-}" \
	>"$out/vm.txt" 2>&1 &
vm=$!
# Progress: the client guest's "# bench:" lines as they appear in its console log.
for _ in $(seq 100); do [ -e "$log_a" ] && break; sleep 0.2; done
tail -n +1 --pid="$vm" -F "$log_a" 2>/dev/null | sed -un 's/\r$//; s/^# bench: /bench: /p' || true
rc=0
wait "$vm" || rc=$?
echo "bench: guests finished in $((SECONDS - start)) s (vm.sh exit $rc)"
grep -a $'^\[[^]]*-a\] BENCH\t' "$out/vm.txt" | sed 's/^\[[^]]*\] //' >"$out/raw.tsv" || true
cp "$log_a" "$top/build/vm-logs/$name-b.log" "$out/" 2>/dev/null || true

# The failure goal counts in RTOs of 32 ms, the largest RTO when the goal was
# set; MR_MAX_RTO is 1 s now (it bounds backoff only), and 10 RTOs of it would
# make the goal empty.
rto_ns=32000000
cpu=$(awk -F': ' '/^model name/ { m = $2 } END { print m }' /proc/cpuinfo)
machine="$(nproc) x $cpu, $(($(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo) / 1048576)) GiB,"
machine+=" shared with other jobs; guests: Debian $kver, 1 vCPU and 1 GiB each,"
machine+=" QEMU $(qemu-system-x86_64 --version | sed -n '1s/.*version \([^ ]*\).*/\1/p')"
# vm.sh's verdict for this boot (kvm or tcg); kvm-probe.log beside it is QEMU's output.
machine+=" $(cat "${METAROCE_CACHE:-/var/cache/metaroce}/vm/kvm-probe.$(cat /proc/sys/kernel/random/boot_id)" 2>/dev/null)"
# Not cmd=$(... && ...): a false test there is the assignment's status, and set -e ends the script.
cmd="make bench"
[ "$quick" = 1 ] && cmd+=" QUICK=1"
[ "$quick" = demo ] && cmd="make demo"
[ -z "$perftest" ] || cmd="BENCH_PERFTEST=\"$perftest\" $cmd"
[ -z "${BENCH_SCENARIOS:-}" ] || cmd="BENCH_SCENARIOS=\"$BENCH_SCENARIOS\" $cmd"
[ -z "${BENCH_REPS:-}" ] || cmd="BENCH_REPS=$BENCH_REPS $cmd"
[ -z "${BENCH_PT_OPS:-}" ] || cmd="BENCH_PT_OPS=\"$BENCH_PT_OPS\" $cmd"
[ -z "${BENCH_PT_LOSSES:-}" ] || cmd="BENCH_PT_LOSSES=\"$BENCH_PT_LOSSES\" $cmd"
"$top/build/bench-report/bench-report" --in "$out/raw.tsv" --out "$out" \
	--rto-ms "$((${rto_ns:-0} / 1000000))" --command "$cmd" \
	--date "$(date -u '+%Y-%m-%d %H:%M UTC')" --machine "$machine" || rc=1
echo "bench: $out/results.md"
# A run whose guest died or timed out is not a full bench: it stays in $out only.
if [ "${BENCH_PUBLISH:-0}" = 1 ] && [ "$rc" != 0 ]; then
	echo "bench: not published: the run failed (vm.sh or the report tool)" >&2
elif [ "${BENCH_PUBLISH:-0}" = 1 ] && [ -s "$out/results.rst" ]; then
	doc=$top/Documentation/metaroce
	rm -rf "$doc/results"
	mkdir -p "$doc/results"
	cp "$out"/*.png "$doc/results/" 2>/dev/null || true
	cp "$out/results.rst" "$doc/results.rst"
	echo "bench: published to $doc/results.rst"
fi
exit "$rc"
