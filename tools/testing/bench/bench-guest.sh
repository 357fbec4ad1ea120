#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The benchmark's guest side: both guests of vm.sh --pair --links 8 run this in
# lock step; a is the client (sender), b the server.  a prints one raw result
# per line, "BENCH<TAB>scenario<TAB>transport<TAB>param<TAB>rep<TAB>metric<TAB>value",
# which bench.sh collects and the report tool turns into tables and plots.
#
# Arguments (from bench.sh): QUICK (1: the short version), PERFTEST (below),
# SCENARIOS (default: "loss lossmix multipath failure incast manyqp perftest"), REPS
# (repetitions of each run, if not the version's own), TRACE (below), PT_OPS and
# PT_LOSSES (the perftest scenario's operations and loss levels, if not all).
#
# RDMA traffic goes through rdma_bw/rdma_lat, which pick the tool per device:
# mr_ktraffic's two-host mode, or perftest for a transport named in PERFTEST
# (e.g. "rxe", or "metaroce rxe": MetaRoCE's through our provider).
. "$(dirname "$0")/../selftests/drivers/metaroce/lib.sh"
set -o pipefail

quick=${1:-0}
if [ "$quick" = demo ]; then	# make demo: the loss sweep's 0% and 1% only
	reps=1 dur=4 lat_dur=2 losses=(0 1) ks=(1 8) fail_dur=20 cut_s=5 incast_ns=(2 8)
	qps=(1 8) pt_losses=(0 1)
elif [ "$quick" = 1 ]; then
	reps=1 dur=4 lat_dur=2 losses=(0 1 10) ks=(1 8) fail_dur=20 cut_s=5 incast_ns=(2 8)
	qps=(1 8) pt_losses=(0 1 10)
else
	reps=5 dur=6 lat_dur=3 losses=(0 0.5 1 2 5 10) ks=(1 2 4 8) fail_dur=30 cut_s=6
	incast_ns=(2 4 6 8) qps=(1 4 16) pt_losses=(0 1 10)
fi
[ -z "${4:-}" ] || reps=$4
links=$MR_LINKS
size=65536 depth=16 lat_size=64
# Per-link rate of the multipath runs: low enough that one link cannot carry
# any of the transports' flows here.
mp_rate=2mbit
perftest=" ${2:-} "
trace=${5:-0}	# 1: trace the paths of MetaRoCE's failure runs (trace_paths)
scenarios=" ${3:-loss lossmix multipath failure incast manyqp perftest} "
read -ra pt_ops <<<"${6:-write send read}"
[ -z "${7:-}" ] || read -ra pt_losses <<<"$7"
want() { [[ "$scenarios" == *" $1 "* ]]; }
# The items in turn, reversed in every second repetition: the host's load drifts over
# minutes, and runs compared in a ratio (a loss level against lossless, MetaRoCE against
# rxe) would otherwise meet that drift in the same order every time.
in_turn() { # rep item...
	local rep=$1 i
	shift
	if ((rep % 2)); then
		echo "$@"
	else
		for ((i = $#; i >= 1; i--)); do echo -n "${!i} "; done
		echo
	fi
}
# perftest on MetaRoCE loads our provider (bench.sh built it).
if [[ "$perftest" == *" metaroce "* ]] || want perftest; then use_provider; fi

declare -A dev=([metaroce]=mr0 [rxe]=rxe0)
step=0
sync_step() { step=$((step + 1)); pair_barrier "s$step" || { echo "# barrier s$step failed"; exit 1; }; }
emit() { [ "$MR_ROLE" = a ] && printf 'BENCH\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@"; return 0; }
say() { [ "$MR_ROLE" = a ] && echo "# bench: $*"; return 0; }

# shape_all NETEM [RATE]: the same shaping on every fabric link (this side's egress).
shape_all() {
	local i
	for ((i = 1; i <= links; i++)); do fabric_shape "$i" "$1" "${2:-}" || return 1; done
}

# ---- the measurements: both guests call them; a reports ----

# fresh TRANSPORT: a MetaRoCE run starts on a connection of its own, with nothing
# (windows, RTTs, stall floors) inherited from the run before: both guests make mr0
# anew and meet again.  rxe keeps no state between QPs.
fresh() {
	[ "$1" = metaroce ] || return 0
	{ rdma link delete mr0 && rdma link add mr0 type metaroce netdev fab0 &&
		wait_for 10 grep -qx "$gid" /sys/class/infiniband/mr0/ports/1/gids/1; } ||
		echo "# bench: mr0 could not be made anew"
	sync_step
}

# ---- what a run cost: CPU, packets on the wire, MetaRoCE's own counters ----

# tx_all: this guest's packets sent on each fabric link, one line, one exec.
tx_all() {
	ip netns exec fr sh -c 'for i in $(seq '"$links"'); do
		cat /sys/class/net/l$i/statistics/tx_packets; done' | paste -sd' '
}
# fabric_tx_sum: packets this guest sent on all fabric links.
fabric_tx_sum() { tx_all | awk '{ for (i = 1; i <= NF; i++) s += $i } END { print s + 0 }'; }
# run_mark: both guests, just before a run.
run_mark() {
	read -r RUN_B0 RUN_T0 <<<"$(cpu_times)"
	RUN_U0=$(uptime_ms) RUN_P0=$(fabric_tx_sum)
}
# run_details SCENARIO TRANSPORT PARAM REP BYTES: both guests, just after the run;
# b tells a its CPU ticks and packets, a emits per run: CPU ms per MB on each guest,
# packets on the wire (both ways) per MB and, for MetaRoCE (its device is new for
# each run, so its counters are the run's; the data sender's: b's for pt_read, whose
# responder sends the data): data packets per ACK, the mean and the
# largest number of packets in flight on a path, retransmits, RTOs, spurious RTOs,
# tail probes, path failures, path moves and data packets sent.  BYTES is what a's client moved (b passes 0).
run_details() {
	local b1 t1 u1 p1 mine theirs their_cnt mb c v
	read -r b1 t1 <<<"$(cpu_times)"
	u1=$(uptime_ms) p1=$(fabric_tx_sum)
	mine="$((b1 - RUN_B0)),$((t1 - RUN_T0)),$((u1 - RUN_U0)),$((p1 - RUN_P0))"
	if [ "$MR_ROLE" = b ]; then
		pair_tell "details$step" "$mine" 60
		[ "$2" != metaroce ] || [ "$1" != pt_read ] ||
			pair_tell "counters$step" "$(hw_counters mr0 | tr ' ' = | paste -sd,)" 60
		return 0
	fi
	theirs=$(pair_hear "details$step" 60) || theirs=
	mb=$(awk -v b="${5:-0}" 'BEGIN { printf "%.3f", b / 1e6 }')
	# CPU ms per MB: busy share of the wall time, times the wall time, per MB.
	per_mb() { awk -F, -v m="$mb" '{ if ($2 > 0) printf "%.1f", $1 / $2 * $3 / m }' <<<"$1"; }
	# A run that moved nothing has no figures per MB, but its counters say why.
	if awk -v m="$mb" 'BEGIN { exit !(m > 0) }'; then
		emit "$1" "$2" "$3" "$4" cpu_ms_per_MB_a "$(per_mb "$mine")"
		if [ -n "$theirs" ]; then
			emit "$1" "$2" "$3" "$4" cpu_ms_per_MB_b "$(per_mb "$theirs")"
			emit "$1" "$2" "$3" "$4" wire_pkts_per_MB "$(awk -F, -v a="${mine##*,}" \
				-v m="$mb" '{ printf "%.0f", (a + $4) / m }' <<<"$theirs")"
		fi
	fi
	[ "$2" = metaroce ] || return 0
	declare -A cnt
	if [ "$1" = pt_read ]; then
		# A Read's data goes from b, the responder: the data sender's counters are b's.
		their_cnt=$(pair_hear "counters$step" 60) || their_cnt=
		while IFS='=' read -r c v; do cnt[$c]=$v; done <<<"$(tr , '\n' <<<"$their_cnt")"
	else
		while read -r c v; do cnt[$c]=$v; done <<<"$(hw_counters mr0)"
	fi
	v=${cnt[acks_received]:-0}
	if [ "$v" -gt 0 ]; then
		emit "$1" "$2" "$3" "$4" data_pkts_per_ack \
			"$(awk -v d="${cnt[tx_run_data_packets]:-0}" -v a="$v" 'BEGIN { printf "%.2f", d / a }')"
		emit "$1" "$2" "$3" "$4" path_inflight_mean \
			"$(awk -v s="${cnt[ack_path_inflight_sum]:-0}" -v a="$v" 'BEGIN { printf "%.1f", s / a }')"
	fi
	for c in path_inflight_max retransmits rtos spurious_rtos tail_probes path_failures path_rebalances \
		naks_received; do
		emit "$1" "$2" "$3" "$4" "$c" "${cnt[$c]:-0}"
	done
	emit "$1" "$2" "$3" "$4" data_packets "${cnt[tx_run_data_packets]:-0}"
}

# kt_pair DEV CLIENT_PARAM...: one two-host mr_ktraffic run; a prints the client lines.
kt_pair() {
	local d=$1
	shift
	if [ "$MR_ROLE" = b ]; then
		kt_load dev_a="$d" role=server timeout_ms=120000 >/dev/null
	else
		kt_load dev_a="$d" role=client peer="$MR_PEER" timeout_ms=30000 "$@"
	fi
	return 0
}

# perftest_pair DEV SIZE TOOL SECONDS: ib_write_bw for SECONDS, or ib_write_lat
# for 500 iterations (its percentiles need an iteration count), between the
# endpoints' IPv4 GIDs (index 1); a prints perftest's report.
# perftest runs pt_dur seconds and counts messages only after its first margin (-f)
# and before its last: a sample window of pt_dur - 2 * pt_margin seconds, as long
# as the other goodput runs (dur).  One second is ramp enough here (a MetaRoCE
# connection opens its windows in well under 100 ms); perftest's own default margin,
# a quarter of the run, would leave a window of 4 s of a 6 s run, fewer samples for
# the same minutes of bench.
pt_margin=1
pt_dur=$((dur + 2 * pt_margin))

perftest_pair() {
	local d=$1 s=$2 tool=$3 t=$4 args
	# MiB/s, not --report_gbits: its two decimals of Gb/s are steps of 1.25 MB/s.
	args=(-d "$d" -x 1 -s "$s" -D "$t" -f "$pt_margin" -F)
	[ "$tool" = ib_write_lat ] && args=(-d "$d" -x 1 -s "$s" -n 500 -F)
	if [ "$MR_ROLE" = b ]; then
		timeout $((t + 60)) "$tool" "${args[@]}" >/dev/null 2>&1
	else
		sleep 1
		timeout $((t + 60)) "$tool" "${args[@]}" "$MR_PEER_EP" 2>&1
	fi
	return 0
}

# rdma_bw SCENARIO TRANSPORT PARAM REP [TOOL]: goodput (MB/s) and application
# errors, from perftest's TOOL (ib_write_bw, ib_send_bw, ib_read_bw) when given, else
# from ib_write_bw for a transport named in PERFTEST, else from mr_ktraffic's Writes.
# For a Read the server's side sends the data, so MetaRoCE's counters in the run's
# details (run_details) are the server's, the responder's.
rdma_bw() {
	local out mbps bytes iters pt_mbps err=0 tool=${5:-}
	sync_step
	fresh "$2"
	run_mark
	[ -n "$tool" ] || [[ "$perftest" != *" $2 "* ]] || tool=ib_write_bw
	if [ -n "$tool" ]; then
		out=$(perftest_pair "${dev[$2]}" "$size" "$tool" "$pt_dur")
		# "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]".
		# The goodput is the messages perftest counted in its sample window (-D less
		# its margin at each end, which its alarms time) over that window, in 10^6
		# bytes as mr_ktraffic counts. perftest's own "BW average" divides the same
		# count by a time from the TSC rate it fits to gettimeofday(): on this noisy
		# host that fit can be off, or fail, and with -F perftest
		# then prints 0.00 over the messages it did move. Its figure stays in the
		# run's details (perftest_MBps, MiB turned into 10^6 bytes) for comparison.
		read -r iters pt_mbps <<<"$(awk -v s="$size" \
			'$1 == s { printf "%s %.2f\n", $2, $4 * 1.048576 }' <<<"$out")"
		[ -n "$iters" ] || err=1
		mbps=$(awk -v n="${iters:-0}" -v s="$size" \
			-v w="$((pt_dur - 2 * pt_margin))" \
			'BEGIN { printf "%.2f", n * s / w / 1e6 }')
		[ "$MR_ROLE" != a ] || [ -z "$iters" ] ||
			emit "$1" "$2" "$3" "$4" perftest_MBps "$pt_mbps"
		# what moved in the whole run, for the run's figures per MB
		bytes=$(awk -v m="$mbps" -v d="$pt_dur" 'BEGIN { printf "%.0f", m * d * 1e6 }')
	else
		out=$(kt_pair "${dev[$2]}" ops=write size="$size" depth="$depth" ring=64 \
			count=1000000 duration_ms=$((dur * 1000)))
		mbps=$(sed -n 's/^mr_ktraffic: write count=.* MBps=\([0-9.]*\) .*/\1/p' <<<"$out")
		bytes=$(sed -n 's/^mr_ktraffic: write count=.* bytes=\([0-9]*\) .*/\1/p' <<<"$out")
		grep -q '^mr_ktraffic: write count=.* PASS' <<<"$out" || err=1
	fi
	run_details "$1" "$2" "$3" "$4" "${bytes:-0}"
	[ "$MR_ROLE" = a ] || return 0
	# perftest's own words when it failed or moved nothing in its whole run
	[ "$err" = 0 ] && [ "${mbps:-0}" != 0.00 ] || echo "$out" | sed 's/^/# bench:   /'
	emit "$1" "$2" "$3" "$4" goodput_MBps "${mbps:-0}"
	emit "$1" "$2" "$3" "$4" errors "$err"
	if [ "$err" = 0 ]; then
		say "$1 $2 $3 rep $4: ${mbps:-0} MB/s"
	else
		say "$1 $2 $3 rep $4: ${mbps:-0} MB/s, the run failed"
	fi
}

# rdma_lat SCENARIO TRANSPORT PARAM REP: small-message completion time, one
# message in flight (p50, p99 in microseconds).
rdma_lat() {
	local out p50 p99
	sync_step
	fresh "$2"
	if [[ "$perftest" == *" $2 "* ]]; then
		out=$(perftest_pair "${dev[$2]}" "$lat_size" ib_write_lat "$lat_dur")
		# "#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%"
		# No < <(...): the guests have no /dev/fd.
		p50=$(awk -v s="$lat_size" '$1 == s { print $5 }' <<<"$out")
		p99=$(awk -v s="$lat_size" '$1 == s { print $8 }' <<<"$out")
	else
		out=$(kt_pair "${dev[$2]}" ops=write size="$lat_size" depth=1 count=1000000 \
			duration_ms=$((lat_dur * 1000)))
		p50=$(sed -n 's/^mr_ktraffic: write latency .* p50_us=\([0-9.]*\) .*/\1/p' <<<"$out")
		p99=$(sed -n 's/^mr_ktraffic: write latency .* p99_us=\([0-9.]*\) .*/\1/p' <<<"$out")
	fi
	[ "$MR_ROLE" = a ] || return 0
	if [ -n "$p50" ] && [ -n "$p99" ]; then
		emit "$1" "$2" "$3" "$4" lat_p50_us "$p50"
		emit "$1" "$2" "$3" "$4" lat_p99_us "$p99"
		emit "$1" "$2" "$3" "$4" lat_errors 0
		say "$1 $2 $3 rep $4: 64 B Write p50 $p50 us, p99 $p99 us"
	else
		emit "$1" "$2" "$3" "$4" lat_errors 1
		say "$1 $2 $3 rep $4: latency run failed"
		echo "$out" | sed 's/^/# bench:   /'
	fi
}

# tcp_bw SCENARIO PARAM REP: one iperf3 flow, receiver's goodput in MB/s.
tcp_bw() {
	local out mbps err=0 bytes
	sync_step
	run_mark
	if [ "$MR_ROLE" = b ]; then
		# A listening nc costs nothing while a's flow runs (a polling one would).
		pair_tell "tcp$step" "done" $((dur + 90)) || true
		run_details "$1" tcp "$2" "$3" 0
		return 0
	fi
	out=$(timeout $((dur + 30)) iperf3 -c "$MR_PEER_EP" -t "$dur" -f M 2>&1)
	mbps=$(awk '/receiver$/ { v = $7 } END { if (v != "") print v }' <<<"$out")
	pair_hear "tcp$step" 30 >/dev/null || true
	# iperf3's MB is 2^20 bytes; its receiver line holds the bytes moved (in MBytes).
	bytes=$(awk '/receiver$/ { v = $5 * 1048576 } END { if (v != "") printf "%.0f", v }' <<<"$out")
	run_details "$1" tcp "$2" "$3" "${bytes:-0}"
	[ -n "$mbps" ] || { err=1; echo "$out" | tail -n 5 | sed 's/^/# bench:   /'; }
	emit "$1" tcp "$2" "$3" goodput_MBps "${mbps:-0}"
	emit "$1" tcp "$2" "$3" errors "$err"
	say "$1 tcp $2 rep $3: ${mbps:-0} MB/s"
}

# ---- setup ----
modprobe metaroce || exit 1
modprobe rdma_rxe || exit 1
# Loaded now, not by the first tc command of a link cut (modprobe over 9p is slow).
modprobe -a sch_netem sch_tbf sch_ingress cls_matchall act_gact 2>/dev/null || true
rdma link add mr0 type metaroce netdev fab0 || exit 1
rdma link add rxe0 type rxe netdev fab0 || exit 1
gid=$(printf '0000:0000:0000:0000:0000:ffff:c612:%02x01' "$(cut -d. -f3 <<<"$MR_EP")")
wait_for 10 grep -qx "$gid" /sys/class/infiniband/mr0/ports/1/gids/1 || exit 1
wait_for 10 grep -qx "$gid" /sys/class/infiniband/rxe0/ports/1/gids/1 || exit 1
if [ "$MR_ROLE" = b ]; then
	iperf3 -s -D -B "$MR_EP" || exit 1
fi
emit meta all - - links "$links"
emit meta all - - size "$size"
emit meta all - - depth "$depth"
emit meta all - - duration_s "$dur"
emit meta all - - pt_duration_s "$pt_dur"
emit meta all - - pt_margin_s "$pt_margin"
emit meta all - - reps "$reps"
emit meta all - - mp_rate_mbit "${mp_rate%mbit}"
say "guests ready: $links fabric links, $reps repetition(s), $dur s per goodput run"

if want loss; then
# ---- 1. loss sweep: every link, every transport, interleaved ----
for ((rep = 1; rep <= reps; rep++)); do
	for loss in $(in_turn "$rep" "${losses[@]}"); do
		shape_all "loss $loss%"
		for t in $(in_turn "$rep" metaroce rxe tcp); do
			if [ "$t" = tcp ]; then tcp_bw loss "$loss" "$rep"; else rdma_bw loss "$t" "$loss" "$rep"; fi
		done
		for t in $(in_turn "$rep" metaroce rxe); do rdma_lat loss "$t" "$loss" "$rep"; done
	done
done

fi

# link_cut LINK on|off: black-hole the link both ways at this guest (no carrier
# change, so routing does not notice: the transport must).  The guests are
# CPU-bound under TCG, where starting a process costs a transport under test
# 100 ms or more: the four tc processes a cut once took halved TCP's goodput for
# 0.8 s when a link came back, with no loss at all.  So one tc reads its commands
# from a FIFO, started with the ingress qdiscs before the flow (link_cut_ready),
# and a cut or a restore is two lines written to it by the shell itself, its
# time read from /proc/uptime without a process (cut_now).
link_cut_ready() { # on|off
	local i
	if [ "$1" = on ]; then
		rm -f /tmp/cut.fifo /tmp/sleep.fifo
		mkfifo /tmp/cut.fifo /tmp/sleep.fifo
		tc -n fr -force -batch /tmp/cut.fifo 2>/dev/null &
		CUT_TC=$!
		exec 7>/tmp/cut.fifo
		for ((i = 1; i <= links; i++)); do echo "qdisc replace dev l$i ingress" >&7; done
	else
		for ((i = 1; i <= links; i++)); do echo "qdisc del dev l$i ingress" >&7; done
		exec 7>&-
		wait "$CUT_TC" || true
		rm -f /tmp/cut.fifo /tmp/sleep.fifo
	fi
}
link_cut() {
	if [ "$2" = on ]; then
		printf '%s\n' "qdisc replace dev l$1 root netem loss 100%" \
			"filter add dev l$1 parent ffff: matchall action drop" >&7
	else
		printf '%s\n' "filter del dev l$1 parent ffff:" "qdisc del dev l$1 root" >&7
	fi
}
# cut_now: CUT_MS, this guest's uptime in ms, without starting a process.
cut_now() {
	local u
	read -r u _ </proc/uptime
	CUT_MS=$((10#${u/./} * 10))
}
# ---- 1b. 1% loss against lossless within one run ----
# The sweep above compares runs a minute or more apart, and under TCG the guests are
# CPU-bound: goodput follows the host's time per guest instruction, which drifts here
# by 20% and more within minutes (make profile PROFILE_TCG=1, tcg_host_ns_per_insn),
# ten times what 1% loss adds to the work per MB.  So one MetaRoCE connection runs
# mix_slices slices of mix_slice_s seconds after a lossless first one, and each guest
# switches its links' loss between 0% and mix_loss% at every slice's start, lossy in
# the odd slices, in the even ones every second repetition.  Goodput per loss level
# comes from mr_ktraffic's progress lines within the slices, the first mix_skip_ms of
# each left out (the guests switch a moment apart and the windows settle): drift
# slower than a pair of slices cancels out.  Switched through one tc reading a FIFO
# (link_cut_ready): a tc process per switch would cost the flow more than the loss.
mix_slices=16 mix_slice_s=2 mix_skip_ms=500 mix_loss=1
lossmix_run() { # rep
	local rep=$1 i l lossy load t0 sw=()
	sync_step
	fresh metaroce
	shape_all "loss 0%"
	link_cut_ready on
	sync_step
	kt_pair mr0 ops=write size="$size" depth="$depth" ring=64 count=100000000 \
		duration_ms=$(((mix_slices + 2) * mix_slice_s * 1000)) interval_ms=100 \
		>/tmp/lossmix.out 2>&1 &
	load=$!
	read -rt "$mix_slice_s" <>/tmp/sleep.fifo || true
	for ((i = 1; i <= mix_slices; i++)); do
		lossy=$(((i + rep) % 2 ? 0 : mix_loss))
		for ((l = 1; l <= links; l++)); do
			echo "qdisc change dev l$l root netem loss $lossy%" >&7
		done
		cut_now
		sw+=("$CUT_MS:$lossy")
		read -rt "$mix_slice_s" <>/tmp/sleep.fifo || true
	done
	cut_now
	sw+=("$CUT_MS:end")
	for ((l = 1; l <= links; l++)); do echo "qdisc change dev l$l root netem loss 0%" >&7; done
	wait "$load"
	link_cut_ready off
	shape_all ""
	[ "$MR_ROLE" = a ] || return 0
	grep -q '^mr_ktraffic: write count=.* PASS' /tmp/lossmix.out
	emit lossmix metaroce - "$rep" errors $?
	grep -E 'FAIL|failed' /tmp/lossmix.out | sed 's/^/# bench:   /'
	t0=$(sed -n 's/^mr_ktraffic: clock t0_ms=\([0-9]*\)/\1/p' /tmp/lossmix.out)
	# Bytes at a time between two progress lines, by interpolation; per loss level the
	# bytes and the time of its slices, from each slice's start + skip to its end.
	awk -v t0="${t0:-0}" -v skip="$mix_skip_ms" -v rep="$rep" -v sw="${sw[*]}" '
		/^mr_ktraffic: progress/ { split($3, a, "="); split($4, b, "=")
			if (n && a[2] <= ms[n]) next
			ms[++n] = a[2]; by[n] = b[2] }
		function at(t,   i) {
			if (!n || t < ms[1] || t > ms[n]) return -1
			for (i = 2; i <= n && ms[i] < t; i++) ;
			if (i > n) return by[n]
			return by[i - 1] + (by[i] - by[i - 1]) * (t - ms[i - 1]) / (ms[i] - ms[i - 1])
		}
		END {
			k = split(sw, s, " ")
			for (i = 1; i < k; i++) {
				split(s[i], x, ":"); split(s[i + 1], y, ":")
				from = x[1] - t0 + skip; to = y[1] - t0
				b0 = at(from); b1 = at(to)
				if (b0 < 0 || b1 < 0 || to <= from) { bad++; continue }
				bytes[x[2]] += b1 - b0; ms_in[x[2]] += to - from
				printf "BENCH\tlossmix\tmetaroce\t%s\t%d\tslice_MBps\t%.2f\n", x[2], rep,
					(b1 - b0) / 1e6 / ((to - from) / 1000)
			}
			for (l in bytes)
				printf "BENCH\tlossmix\tmetaroce\t%s\t%d\tgoodput_MBps\t%.2f\n", l, rep,
					bytes[l] / 1e6 / (ms_in[l] / 1000)
			printf "BENCH\tlossmix\tmetaroce\t-\t%d\tslices_unmeasured\t%d\n", rep, bad
		}' /tmp/lossmix.out
	say "lossmix rep $rep: switches at ${sw[*]} (uptime ms), flow t0 ${t0:-?} ms"
}
if want lossmix; then
emit meta all - - mix_slices "$mix_slices"
emit meta all - - mix_slice_s "$mix_slice_s"
emit meta all - - mix_skip_ms "$mix_skip_ms"
for ((rep = 1; rep <= reps; rep++)); do lossmix_run "$rep"; done
fi

if want multipath; then
# ---- 2. multipath: K rate-limited links; then unequal links ----
shape_all "" "$mp_rate"
for ((rep = 1; rep <= reps; rep++)); do
	for k in "${ks[@]}"; do
		fabric_use "$k"
		for t in metaroce rxe; do rdma_bw multipath "$t" "$k" "$rep"; done
		tcp_bw multipath "$k" "$rep"
	done
done
# Four links at the rate limit, of which one is four times slower and one
# drops 5%: compared with four equal links measured just above.
fabric_use 4
fabric_shape 1 "" "$(( ${mp_rate%mbit} * 1000 / 4 ))kbit"
fabric_shape 2 "loss 5%" "$mp_rate"
for ((rep = 1; rep <= reps; rep++)); do
	for t in metaroce rxe; do rdma_bw unequal "$t" 4 "$rep"; done
	tcp_bw unequal 4 "$rep"
done

fi

if want failure; then
# ---- 3. failure: the busiest of 8 links cut mid-transfer, then restored ----
fabric_use "$links"
shape_all ""
# busiest_link: the fabric link this guest sent the most on in the last
# second, once the flow is under way (at least 20 packets in that second).
busiest_link() {
	local a b i best most d
	for _ in $(seq 30); do
		read -ra a <<<"$(tx_all)"
		sleep 1
		read -ra b <<<"$(tx_all)"
		best=1 most=-1
		for ((i = 0; i < links; i++)); do
			d=$((b[i] - a[i]))
			[ "$d" -gt "$most" ] && most=$d best=$((i + 1))
		done
		[ "$most" -ge 20 ] && break
	done
	echo "$best"
}
# trace_paths on | off T0_MS (BENCH_TRACE=1, a only): the metaroce_path event (each
# ACK's path after it was taken in) during a failure run, summed per 250 ms since
# the flow's start T0_MS: for each path, "state:cwnd:ACKs:RTO ms" of its last ACK in
# the interval (state 0 PROBE, 1 ACTIVE, 2 SUSPECT; "-" no ACK), as "# bench: trace" lines.
trace_paths() {
	local tr=/sys/kernel/tracing
	[ "$trace" = 1 ] && [ "$MR_ROLE" = a ] || return 0
	if [ "$1" = on ]; then
		echo boot >"$tr/trace_clock"
		echo 16384 >"$tr/buffer_size_kb"
		echo >"$tr/trace"
		echo 1 >"$tr/events/metaroce/metaroce_path/enable"
		return 0
	fi
	echo 0 >"$tr/events/metaroce/metaroce_path/enable"
	awk -v t0="$2" -v n="$links" '
		/ metaroce_path: / {
			for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = $i + 0; break }
			for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			b = int((ts * 1000 - t0) / 250)
			if (b < 0) next
			p = v["path"]; acks[b, p]++
			last[b, p] = v["state"] ":" v["cwnd"] ":" acks[b, p] ":" int(v["rto_us"] / 1000)
			if (b > maxb) maxb = b
		}
		END {
			for (b = 0; b <= maxb; b++) {
				line = sprintf("# bench: trace %6d ms", b * 250)
				for (p = 0; p < n; p++)
					line = line " " ((b, p) in last ? last[b, p] : "-")
				print line
			}
		}' "$tr/trace"
	echo >"$tr/trace"
}
# Once the flow is under way: 3 s more of baseline, the busiest link cut for
# cut_s, then restored; the flow runs fail_dur s in all.  a picks the link and
# tells b over the control wire.  Times are ms since the flow's start (the
# module's clock line; iperf3's launch).
failure_run() { # transport rep
	local t=$1 rep=$2 link p=$((7900 + step % 50)) t0 t_cut t_back load
	sync_step
	fresh "$t"
	link_cut_ready on
	t0=$(uptime_ms)
	if [ "$t" = tcp ]; then
		[ "$MR_ROLE" = a ] && timeout $((fail_dur + 60)) iperf3 -c "$MR_PEER_EP" \
			-t "$fail_dur" -i 0.25 -f M >/tmp/failure.out 2>&1 &
	else
		kt_pair "${dev[$t]}" ops=write size="$size" depth="$depth" ring=64 count=100000000 \
			duration_ms=$((fail_dur * 1000)) interval_ms=250 >/tmp/failure.out 2>&1 &
	fi
	load=$!
	[ "$t" != metaroce ] || trace_paths on
	if [ "$MR_ROLE" = a ]; then
		link=$(busiest_link)
		busybox nc -l -p "$p" <<<"$link" >/dev/null &
		sleep 3
	else
		link=
		for _ in $(seq 600); do
			link=$(busybox nc "$MR_PEER" "$p" </dev/null 2>/dev/null) && [ -n "$link" ] && break
			sleep 0.1
		done
		sleep 3
	fi
	cut_now
	link_cut "$link" on
	t_cut=$CUT_MS
	# sleep, without a sleep process to start right after the cut
	read -rt "$cut_s" <>/tmp/sleep.fifo || true
	cut_now
	link_cut "$link" off
	t_back=$CUT_MS
	wait "$load"
	link_cut_ready off
	[ "$MR_ROLE" = a ] || return 0
	if [ "$t" != tcp ]; then
		t0=$(sed -n 's/^mr_ktraffic: clock t0_ms=\([0-9]*\)/\1/p' /tmp/failure.out)
	fi
	if [ "$t" = metaroce ]; then
		trace_paths off "$t0"
		say "failure $t rep $rep counters:" \
			"$(hw_counters mr0 | awk '$1 ~ /^(rtos|spurious_rtos|tail_probes|retransmits|path_failures|path_rebalances)$/ { printf "%s=%s ", $1, $2 }')"
	fi
	emit failure "$t" - "$rep" cut_link "$link"
	emit failure "$t" - "$rep" cut_ms "$((t_cut - t0))"
	emit failure "$t" - "$rep" restore_ms "$((t_back - t0))"
	if [ "$t" = tcp ]; then
		# "[  5]   0.25-0.50   sec  1.00 MBytes  4.00 MBytes/sec"
		awk -v rep="$rep" '/sec/ && !/sender|receiver/ { split($3, r, "-"); if ($8 == "MBytes/sec")
			printf "BENCH\tfailure\ttcp\t%d\t%d\tMBps\t%s\n", r[2] * 1000, rep, $7 }' /tmp/failure.out
		grep -q receiver /tmp/failure.out
		emit failure "$t" - "$rep" errors $?
	else
		awk -v rep="$rep" '/^mr_ktraffic: progress/ { split($3, a, "="); split($4, b, "=");
			ms = a[2]; if (ms <= lastms) next
			d = (b[2] - last) / 1e6 / ((ms - lastms) / 1000); last = b[2]; lastms = ms;
			printf "BENCH\tfailure\t'"$t"'\t%d\t%d\tMBps\t%.3f\n", ms, rep, d }' /tmp/failure.out
		grep -q '^mr_ktraffic: write count=.* PASS' /tmp/failure.out
		emit failure "$t" - "$rep" errors $?
	fi
	grep -E 'FAIL|failed' /tmp/failure.out | sed 's/^/# bench:   /'
	say "failure $t rep $rep: link $link cut at $((t_cut - t0)) ms, restored at $((t_back - t0)) ms"
}
# Up to 3 repetitions: each is 3 x fail_dur s of traffic.
for rep in $(seq "$((reps < 3 ? reps : 3))"); do
	for t in metaroce rxe tcp; do failure_run "$t" "$rep"; done
done

fi

if want incast; then
# ---- 4. incast: N sender hosts (namespaces s1..sN in guest a, each its own
# MetaRoCE device, 198.18.(32+i).1) Write to one receiver in guest b through a shared
# bottleneck, b's router egress towards its endpoint.  rxe needs init_net
# and iperf3's server takes one test at a time: MetaRoCE only. ----
incast_rate=4mbit incast_size=16384 incast_total=192
fabric_use "$links"
shape_all ""
if [ "$MR_ROLE" = a ]; then
	for ((i = 1; i <= 8; i++)); do
		ip netns add "s$i"
		ip -n "s$i" link set lo up
		ip link add "in$i" netns fr type veth peer name e0 netns "s$i"
		ip -n "s$i" addr add "198.18.$((32 + i)).1/24" dev e0
		ip -n fr addr add "198.18.$((32 + i)).254/24" dev "in$i"
		ip -n "s$i" link set e0 up
		ip -n fr link set "in$i" up
		ip -n "s$i" route add default via "198.18.$((32 + i)).254"
		ip netns exec "s$i" rdma link add "mrs$i" type metaroce netdev e0
	done
	for ((i = 1; i <= 8; i++)); do
		wait_for 10 grep -qx "0000:0000:0000:0000:0000:ffff:c612:$(printf %02x $((32 + i)))01" \
			"/sys/class/infiniband/mrs$i/ports/1/gids/1" || echo "# bench: mrs$i has no GID"
	done
else
	nh=$(ip -n fr route show "${MR_PEER_EP%.*}.0/24" | tail -n +2 | awk '{ print "nexthop", $2, $3, $4, $5 }')
	# shellcheck disable=SC2086
	ip -n fr route add 198.18.32.0/19 $nh
	ip route add 198.18.32.0/19 via "${MR_EP%.*}.254" dev fab0
	ip netns exec fr tc qdisc add dev fab0 root tbf rate "$incast_rate" burst 32kb latency 50ms
fi
incast_run() { # N REP
	local n=$1 rep=$2 devs="" i out per=$((incast_total / $1))
	for ((i = 1; i <= n; i++)); do devs+="${devs:+,}mrs$i"; done
	sync_step
	if [ "$MR_ROLE" = b ]; then
		kt_load dev_a=mr0 role=server flows="$n" timeout_ms=120000 >/dev/null
		return 0
	fi
	out=$(kt_load dev_a="$devs" role=client peer="$MR_PEER" timeout_ms=60000 ops=write \
		size="$incast_size" depth=8 ring=8 count="$per" interval_ms=250)
	grep -q "^mr_ktraffic: flows=$n passed=$n" <<<"$out"
	emit incast metaroce "$n" "$rep" errors $?
	sed -n 's/^mr_ktraffic: flow\([0-9]*\) write count=.* usec=\([0-9]*\) MBps=\([0-9.]*\) .*/\1 \2 \3/p' \
		<<<"$out" | while read -r f usec mbps; do
		emit incast metaroce "$n" "$rep" "flow_MBps" "$mbps"
		emit incast metaroce "$n" "$rep" "fct_ms" "$((usec / 1000))"
	done
	sed -n 's/^mr_ktraffic: flow\([0-9]*\) progress ms=\([0-9]*\) bytes=\([0-9]*\)/\1 \2 \3/p' \
		<<<"$out" | while read -r f ms bytes; do
		emit "incast$n" "flow$f" "$ms" "$rep" bytes "$bytes"
	done
	grep -E 'FAIL|passed' <<<"$out" | sed 's/^/# bench:   /'
	say "incast N=$n rep $rep done"
}
for ((rep = 1; rep <= reps; rep++)); do
	for n in "${incast_ns[@]}"; do incast_run "$n" "$rep"; done
done
[ "$MR_ROLE" = b ] && ip netns exec fr tc qdisc del dev fab0 root

fi

if want manyqp; then
# ---- 5. many QPs between one host pair: fairness among them, and kernel
# memory per QP (count bounds mr_ktraffic's own latency samples to 80 KB per
# QP; a million, as elsewhere, put 4 MB per QP into the measurement): the
# report takes the slope of the client's Slab growth
# while they run between the fewest and the most QPs, so what every run has
# (the module, page cache) cancels out; each QP's 4 x 4 KiB test buffers
# remain in it. ----
slab_kb() { sed -n 's/^Slab: *\([0-9]*\) kB/\1/p' /proc/meminfo; }
manyqp_run() { # TRANSPORT Q REP
	local t=$1 q=$2 rep=$3 out base peak sampler
	sync_step
	if [ "$MR_ROLE" = b ]; then
		kt_load dev_a="${dev[$t]}" role=server flows="$q" timeout_ms=120000 >/dev/null
		return 0
	fi
	sync
	echo 2 >/proc/sys/vm/drop_caches
	base=$(slab_kb)
	( peak=0; while :; do v=$(slab_kb); [ "$v" -gt "$peak" ] && peak=$v && echo "$peak" >/tmp/slab.peak; sleep 0.2; done ) &
	sampler=$!
	out=$(kt_load dev_a="${dev[$t]}" role=client peer="$MR_PEER" timeout_ms=60000 ops=write \
		size=4096 depth=4 ring=4 flows="$q" count=20000 duration_ms=$((dur * 1000)))
	kill "$sampler"; wait "$sampler" 2>/dev/null
	peak=$(cat /tmp/slab.peak)
	if [ "$q" = 1 ]; then
		grep -q '^mr_ktraffic: write count=.* PASS' <<<"$out"
	else
		grep -q "^mr_ktraffic: flows=$q passed=$q" <<<"$out"
	fi
	emit manyqp "$t" "$q" "$rep" errors $?
	emit manyqp "$t" "$q" "$rep" slab_growth_kb "$((peak - base))"
	sed -n 's/^mr_ktraffic: \(flow[0-9]* \)\{0,1\}write count=.* MBps=\([0-9.]*\) .*/\2/p' \
		<<<"$out" | while read -r mbps; do
		emit manyqp "$t" "$q" "$rep" flow_MBps "$mbps"
	done
	grep -E 'FAIL' <<<"$out" | sed 's/^/# bench:   /'
	say "many QPs: $t Q=$q rep $rep done"
}
for ((rep = 1; rep <= reps; rep++)); do
	for q in "${qps[@]}"; do
		for t in metaroce rxe; do manyqp_run "$t" "$q" "$rep"; done
	done
done

fi

if want perftest; then
# ---- 6. perftest on one wire: ib_write_bw, ib_send_bw and ib_read_bw through the
# Verbs providers (ours and rdma-core's rxe), the route on link 1 only, loss on it.
# One operation's loss levels run back to back: the goals compare them, and the
# host's speed drifts by a fifth within minutes (results.rst), so the runs of a
# ratio are seconds apart, not the whole scenario. ----
fabric_use 1
for ((rep = 1; rep <= reps; rep++)); do
	for op in $(in_turn "$rep" "${pt_ops[@]}"); do
		for loss in $(in_turn "$rep" "${pt_losses[@]}"); do
			shape_all "loss $loss%"
			for t in $(in_turn "$rep" metaroce rxe); do
				rdma_bw "pt_$op" "$t" "$loss" "$rep" "ib_${op}_bw"
			done
		done
	done
done
shape_all ""
fabric_use "$links"

fi

say "MetaRoCE counters at the end:"
[ "$MR_ROLE" = a ] && rdma statistic show link mr0/1 | tr ' ' '\n' | grep -v '^$' | paste - - |
	sed 's/^/# bench:   /'
sync_step
rdma link delete mr0
rdma link delete rxe0
exit 0
