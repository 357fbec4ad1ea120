#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make profile [PROFILE_SECONDS=8] [PROFILE_TRANSPORTS="metaroce rxe"] [PROFILE_PERF=1]
# [PROFILE_MODPARAMS="tx_gso=0"] [PROFILE_LINKS=8 [PROFILE_NETEM="loss 1%"]]
# [PROFILE_SIZE=64 PROFILE_DEPTH=1] (the latency run: p50, p99 and max are printed)
# [PROFILE_OP=read] (mr_ktraffic's op instead of write: for a read the server b sends the data)
# [PROFILE_TRACE=1] (every MetaRoCE packet of both sides, "TRACE" lines in the output file)
# [PROFILE_BPF=1] (time per function on both sides, from bpftrace's kfunc probes, "bpf" lines;
# or PROFILE_BPF="metaroce:metaroce_conn_tx_work vmlinux:ip_forward": only these, for each
# transport run, so with PROFILE_TRANSPORTS=metaroce for metaroce's functions):
# one bulk RDMA Write run per transport between two guests on one wire, or on the
# bench's ECMP fabric of PROFILE_LINKS links with PROFILE_NETEM on each (profile-guest.sh); prints goodput, CPU time and packets per MB on each side,
# MetaRoCE's counters and the ratios MetaRoCE / rxe.  host_cpu_ms_per_MB is the
# QEMU process's CPU time on this host during the run, per MB moved: under TCG
# the one CPU figure that is not sampled by the guest's own (biased) clock.
# The guests' full output is kept in build/profile/<UTC timestamp>.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)

"$top/scripts/setup.sh" bench vm profile
make -s -C "$top" module-6.12
kver=$("$top/scripts/kver.sh" version 6.12)
make -s -C "/lib/modules/$kver/build" M="$top/tools/testing/selftests/drivers/metaroce/ktraffic" \
	W=1 modules >/dev/null
mkdir -p "$top/build/profile"
out=$top/build/profile/$(date -u +%Y%m%dT%H%M%SZ).txt
links=${PROFILE_LINKS:-0}
where="one wire"
[ "$links" = 0 ] || where="$links fabric links${PROFILE_NETEM:+ with netem ${PROFILE_NETEM}}"
echo "profile: two guests, $where, ${PROFILE_OP:-write}s; $((${PROFILE_SECONDS:-8} + 3)) s per transport and side"
linkopt=()
[ "$links" = 0 ] || linkopt=(--links "$links")
logs=$top/build/vm-logs
rm -f "$logs/profile-a.log" "$logs/profile-b.log"
"$top/tools/testing/vm/vm.sh" --pair "${linkopt[@]}" --name profile --timeout 900 \
	"$here/profile-guest.sh" \
	"${PROFILE_SECONDS:-8}" "${PROFILE_TRANSPORTS:-metaroce rxe}" "${PROFILE_PERF:-0}" \
	"${PROFILE_MODPARAMS:-}" "${PROFILE_NETEM:-}" "${PROFILE_SIZE:-65536}" "${PROFILE_DEPTH:-16}" "${PROFILE_TRACE:-0}" \
	"${PROFILE_BPF:-0}" "${PROFILE_OP:-write}" \
	>"$out" 2>&1 &
vm=$!
# The guests' marks, as they appear on their consoles: QEMU's CPU time (utime + stime)
# at each one.
hz=$(getconf CLK_TCK)
watch_marks() { # role
	local log=$logs/profile-$1.log pid=
	for _ in $(seq 300); do [ -e "$log" ] && break; sleep 0.1; done
	for _ in $(seq 300); do
		pid=$(pgrep -f "^qemu-system-x86_64 .*job-$1.env" | head -n1) && [ -n "$pid" ] && break
		sleep 0.1
	done
	tail -n +1 -s 0.1 --pid="$vm" -F "$log" 2>/dev/null | sed -u 's/\r$//' |
		while read -r word t what bytes; do
			[ "$word" = PROFILE-MARK ] || continue
			echo "$t $1 $what $bytes $(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null)"
		done
}
watch_marks a >"$out.marks-a" &
watch_marks b >"$out.marks-b" &
rc=0
wait "$vm" || rc=$?
wait
if [ "$rc" != 0 ]; then
	tail -n 40 "$out"
	echo "profile: the guests failed; log: $out" >&2
	exit 1
fi
# "[profile-a] PROFILE metaroce a goodput_MBps 12.3" -> "metaroce a goodput_MBps 12.3"
sed -n 's/^\[profile-[ab]\] PROFILE //p' "$out" | tr -d '\r' | sort -u >"$out.tsv"
# "metaroce a start 0 1234" / "metaroce a end 88000000 1734": host CPU ms per MB.
cat "$out.marks-a" "$out.marks-b" | awk -v hz="$hz" '
	$3 == "start" { s[$1 " " $2] = $5 }
	$3 == "end" && ($1 " " $2) in s && $4 > 0 {
		printf "%s %s host_cpu_ms_per_MB %.1f\n", $1, $2, ($5 - s[$1 " " $2]) * 1000 / hz / ($4 / 1e6)
	}' >>"$out.tsv"
awk '
	{ v[$1 " " $2 " " $3] = $4; m[$3] = 1; s[$2] = 1 }
	END {
		printf "%-22s %6s %12s %12s %8s\n", "metric", "side", "metaroce", "rxe", "ratio"
		for (k in m) for (r in s) {
			a = v["metaroce " r " " k]; b = v["rxe " r " " k]
			if (a == "" && b == "") continue
			ratio = (a != "" && b != "" && b + 0 != 0) ? sprintf("%.2f", a / b) : "-"
			printf "%-22s %6s %12s %12s %8s\n", k, r, a == "" ? "-" : a, b == "" ? "-" : b, ratio
		}
	}' "$out.tsv" | sort -k1,1 -k2,2
echo
sed -n 's/^\[profile-[ab]\] # \(.* | \)/\1/p' "$out" | tr -d '\r'
echo "profile: $out"
