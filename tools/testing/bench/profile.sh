#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make profile [PROFILE_SECONDS=8] [PROFILE_TRANSPORTS="metaroce rxe"] [PROFILE_PERF=1]
# (PROFILE_TRANSPORTS may name tcp: one iperf3 flow between the same addresses, for
# TCP's goodput, CPU and tcgprof counts beside the RDMA transports')
# [PROFILE_MODPARAMS="tx_gso=0"] [PROFILE_LINKS=8 [PROFILE_NETEM="loss 1%"]]
# [PROFILE_SIZE=64 PROFILE_DEPTH=1] (the latency run: p50, p99 and max are printed)
# [PROFILE_OP=read] (mr_ktraffic's op instead of write: for a read the server b sends the data)
# [PROFILE_TRACE=1] (every MetaRoCE packet of both sides, "TRACE" lines in the output file)
# [PROFILE_BPF=1] (time per function on both sides, from bpftrace's kfunc probes, "bpf" lines;
# or PROFILE_BPF="metaroce:metaroce_conn_tx_work vmlinux:ip_forward": only these, for each
# transport run, so with PROFILE_TRANSPORTS=metaroce for metaroce's functions)
# [PROFILE_ALLOC=1] (the memory each side allocated per MB moved, by call site, "alloc"
# lines: Debian's kernel clears every allocation, init_on_alloc=1):
# one bulk RDMA Write run per transport between two guests on one wire, or on the
# bench's ECMP fabric of PROFILE_LINKS links with PROFILE_NETEM on each (profile-guest.sh); prints goodput, CPU time and packets per MB on each side,
# MetaRoCE's counters and the ratios MetaRoCE / rxe.  host_cpu_ms_per_MB is the
# QEMU process's CPU time on this host during the run, per MB moved: under TCG
# the one CPU figure that is not sampled by the guest's own (biased) clock.
# The guests' full output is kept in build/profile/<UTC timestamp>.txt.
# PROFILE_TCG=1 (TCG only): where each guest's instructions go, counted by QEMU itself
# (tools/testing/bench/tcgprof: a plugin counts the instructions executed at each
# block; snapshots at each run's start and end marks): instructions per MB on each side
# (tcg_Minsns_per_MB, tcg_kernel_Minsns_per_MB: exact counts, not sampled by a biased
# clock), the host's time per guest instruction (tcg_host_ns_per_insn: the host's
# speed in that run) and the kernel functions that executed most, "tcg" lines.  Under TCG guest
# perf's samples land in the idle loop, and bpftrace's probes cost more than most
# functions they time; this costs the guests about a third of their speed, evenly.
# With rxe or tcp beside metaroce, "tcg-diff" lines name the functions whose
# instructions per MB differ most between MetaRoCE and each (the 20 where MetaRoCE
# spends more, the 10 where it spends less).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
links=${PROFILE_LINKS:-0}
if [ "$links" = 0 ] && [ -n "${PROFILE_NETEM:-}" ]; then
	# netem shapes the fabric's links; one wire has none (make bench's perftest
	# runs use link 1 of the fabric: PROFILE_LINKS=1)
	echo "profile: PROFILE_NETEM needs PROFILE_LINKS (1 for one link of the fabric)" >&2
	exit 2
fi

"$top/scripts/setup.sh" bench vm profile
make -s -C "$top" module-6.12
kver=$("$top/scripts/kver.sh" version 6.12)
make -s -C "/lib/modules/$kver/build" M="$top/tools/testing/selftests/drivers/metaroce/ktraffic" \
	W=1 modules >/dev/null
mkdir -p "$top/build/profile"
out=$top/build/profile/$(date -u +%Y%m%dT%H%M%SZ).txt
tcg=${PROFILE_TCG:-0}
if [ "$tcg" = 1 ]; then
	"$top/scripts/setup.sh" unit
	cmake -S "$top" -B "$top/build/cmake" -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build "$top/build/cmake" -j "$(nproc)" --target tcgprof tcgprof-report >/dev/null
	tcgbin=$top/build/cmake/tools/testing/bench/tcgprof
	export VM_TCG_PLUGIN=$tcgbin/libtcgprof.so VM_TCG_PROFILE=$out.tcg
	mkdir -p "$out.tcg/a" "$out.tcg/b"
fi
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
	"${PROFILE_BPF:-0}" "${PROFILE_OP:-write}" "$tcg" "${PROFILE_ALLOC:-0}" \
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
			# tcgprof's snapshot of this guest's counts, as near the mark as we can.
			[ "$tcg" != 1 ] || : >"$out.tcg/$1/snap.$t-$what"
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
# tcgprof: each transport's run on each side, between its two snapshots.
if [ "$tcg" = 1 ]; then
	for role in a b; do
		sed -n "s/^\[profile-$role\] KSYMZ //p" "$out" | tr -d '\r' |
			perl -ne 'chomp; print pack("H*", $_)' |
			gunzip >"$out.tcg/$role/kallsyms" || true
		while read -r t _ what bytes _; do
			[ "$what" = end ] || continue
			d=$out.tcg/$role
			if [ ! -s "$d/$t-start.tsv" ] || [ ! -s "$d/$t-end.tsv" ]; then
				echo "profile: no tcgprof snapshots of $t on $role" >&2
				continue
			fi
			# every function once: the report keeps the 25 that ran most
			"$tcgbin/tcgprof-report" --start "$d/$t-start.tsv" --end "$d/$t-end.tsv" \
				--guest-syms "$d/kallsyms" --bytes "$bytes" --label "$t $role" \
				--top 100000 >"$d/$t.all" || continue
			awk '!/\| tcg / || ++n <= 25' "$d/$t.all" >"$d/$t.report"
			sed -n 's/^TCG //p' "$d/$t.report" >>"$out.tsv"
			# every function, in K instructions per MB, for the comparison below
			awk -v mb="$bytes" '/\| tcg / { s = $8; for (i = 9; i <= NF; i++) s = s " " $i
				printf "%.1f\t%s\n", $7 / (mb / 1e6) / 1000, s }' "$d/$t.all" >"$d/$t.funcs"
		done <"$out.marks-$role"
		# Where MetaRoCE's kernel instructions per MB differ most from each other
		# transport's, function by function: "tcg-diff" lines.
		d=$out.tcg/$role
		for t in rxe tcp; do
			if [ ! -s "$d/metaroce.funcs" ] || [ ! -s "$d/$t.funcs" ]; then
				continue
			fi
			awk -F'\t' '
				NR == FNR { m[$2] = $1; next }
				{ o[$2] = $1 }
				END {
					for (f in m) d[f] = m[f] - o[f]
					for (f in o) if (!(f in m)) d[f] = -o[f]
					for (f in d) printf "%.1f\t%s\t%s\t%s\n", d[f], m[f] + 0, o[f] + 0, f
				}' "$d/metaroce.funcs" "$d/$t.funcs" | sort -g -r -k1,1 |
				awk -F'\t' -v t="$t" -v r="$role" '{ l[NR] = $0 } END {
					for (i = 1; i <= NR; i++) if (i <= 20 || i > NR - 10) { split(l[i], f, "\t")
						printf "# metaroce-%s %s | tcg-diff %8.1f K/MB (%7.1f vs %7.1f) %s\n",
							t, r, f[1], f[2], f[3], f[4] } }'
		done >>"$out.tcgdiff"
	done
	# The host's time per guest instruction: what the host's own speed did to the
	# run (it drifts by 20% and more within minutes here, other tenants' load),
	# apart from the work the run asked of it (tcg_Minsns_per_MB).
	ns=$(awk '$3 == "host_cpu_ms_per_MB" { h[$1 " " $2] = $4 }
		$3 == "tcg_Minsns_per_MB" { n[$1 " " $2] = $4 }
		END { for (k in h) if (n[k] > 0) printf "%s tcg_host_ns_per_insn %.2f\n", k, h[k] / n[k] }' \
		"$out.tsv")
	[ -z "$ns" ] || echo "$ns" >>"$out.tsv"
fi
awk '
	function ratio(x, y) { return (x != "" && y != "" && y + 0 != 0) ? sprintf("%.2f", x / y) : "-" }
	{ v[$1 " " $2 " " $3] = $4; m[$3] = 1; s[$2] = 1 }
	END {
		printf "%-24s %4s %10s %10s %10s %8s %8s\n", "metric", "side", "metaroce", "rxe", "tcp",
			"mr/rxe", "mr/tcp"
		for (k in m) for (r in s) {
			a = v["metaroce " r " " k]; b = v["rxe " r " " k]; c = v["tcp " r " " k]
			if (a == "" && b == "" && c == "") continue
			printf "%-24s %4s %10s %10s %10s %8s %8s\n", k, r, a == "" ? "-" : a,
				b == "" ? "-" : b, c == "" ? "-" : c, ratio(a, b), ratio(a, c)
		}
	}' "$out.tsv" | sort -k1,1 -k2,2
echo
sed -n 's/^\[profile-[ab]\] # \(.* | \)/\1/p' "$out" | tr -d '\r'
[ "$tcg" != 1 ] || cat "$out".tcg/[ab]/*.report "$out.tcgdiff" 2>/dev/null | sed -n 's/^# //p'
echo "profile: $out"
