#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make profile: where the data path spends its cycles.  Both guests of
# vm.sh --pair (one virtio wire) run this in lock step; a is the client
# (sender), b the server.  For each transport (MetaRoCE, rdma_rxe) one bulk
# RDMA Write run of mr_ktraffic (64 KiB, 16 in flight) is profiled on both
# guests (for tcp, one iperf3 flow a -> b), and each side prints:
#   PROFILE <transport> <role> <metric> <value>   goodput, CPU ms per MB (from the
#                                                 guest's /proc/stat), packets per MB,
#                                                 engine counters
#   PROFILE-MARK <transport> start|end <bytes>    around the run: profile.sh reads the
#                                                 QEMU process's CPU time at each mark
#   with PERF=1, perf's hottest symbols (cpu-clock: TCG has no PMU), prefixed
#   "# <transport> <role> |".  Under TCG perf's samples land mostly on the idle
#   loop whatever the load, so the host's count of QEMU's CPU time is the figure
#   to trust.
# Arguments: SECONDS of each run (default 8), TRANSPORTS (default "metaroce rxe"),
# PERF (0 or 1), MODPARAMS (metaroce's module parameters, e.g. "tx_gso=0"), NETEM
# (on each fabric link when vm.sh made one: --links K), SIZE and DEPTH of the Writes
# (default 65536 and 16; 64 and 1 profile the latency run: then p50/p99 are printed),
# OP (mr_ktraffic's op, default write; read: b sends the data, a is the requester, and
# the counters of each side are those of its role),
# TRACE (1: every MetaRoCE packet each side sent and took in, from the metaroce_tx and
# metaroce_rx tracepoints, printed after the run as
#   "TRACE <role> <seconds> tx|rx op=0x.. flags=0x.. path=N psn=N msn=N off=N len=N sport=N"),
# BPF (1: the time spent in each of the transport's main functions, measured at their
# entry and return with bpftrace's kfunc probes, inclusive and exclusive of the other
# measured functions that run inside them, softirqs included; printed as
#   "# <transport> <role> | bpf <function> calls N incl_ms X excl_ms Y per_call_us Z",
# and the run's wall time as "bpf wall_ms"; the clock is the guest's, whose bias under
# TCG is the same for every function, so compare the functions' shares.  Under TCG each
# probed call costs 4-17 us of probe (PROFILE_TCG=1 does not distort): a leaf's
# per-call time is mostly that, and a caller's exclusive time holds that of every
# probed call inside it; the counts are exact;
# BPF may also be the list of functions to probe, "module:function ...", for every
# transport run: fewer probes distort the callers less),
# TCG (1: after the runs, the guest's text symbols for tcgprof, "KSYMZ" lines:
# profile.sh PROFILE_TCG=1),
# ALLOC (1: the memory each side allocated through the run, per call site, from the
# kmem tracepoints' histogram triggers: Debian's kernel zeroes every allocation
# (init_on_alloc=1), so these are also the bytes cleared; printed per MB moved as
#   "# <transport> <role> | alloc kmalloc|cache <call site> calls_per_MB N bytes_per_MB N"
#   "# <transport> <role> | alloc pages order=N <caller> calls_per_MB N").
. "$(dirname "$0")/../selftests/drivers/metaroce/lib.sh"
set -o pipefail

dur=${1:-8}
transports=${2:-metaroce rxe}
use_perf=${3:-0}
modparams=${4:-}
netem=${5:-}
size=${6:-65536}
depth=${7:-16}
pkt_trace=${8:-0}
use_bpf=${9:-0}
op=${10:-write}
tcg=${11:-0}
alloc=${12:-0}
bpf_list=
case $use_bpf in
0 | 1) ;;
*) bpf_list=$use_bpf use_bpf=1 ;;
esac
# On a fabric (vm.sh --links K) the devices sit on the endpoint's fab0, as in make bench.
nd=eth0 addr=${MR_ADDR%/*} peer_addr=$MR_PEER
if [ "${MR_LINKS:-0}" != 0 ]; then
	nd=fab0 addr=$MR_EP peer_addr=$MR_PEER_EP
	for ((i = 1; i <= MR_LINKS; i++)); do
		fabric_shape "$i" "${netem:-loss 0%}" || exit 1
	done
fi
declare -A dev=([metaroce]=mr0 [rxe]=rxe0)
# The side whose paths carry the data: the path trace is taken there.
sender=a
[ "$op" = read ] && sender=b
say() { echo "PROFILE $*"; }

# The functions BPF=1 times, per transport: the receive and transmit entries, what
# they spend in the engine (parse, receive, ACKs, next packet), the copies, the
# hand-over to the IP stack, completions, and all of NET_RX (the routers' forwarding
# and the virtio NICs included) for what runs outside the transport.
declare -A bpf_funcs=(
	[metaroce]="metaroce:metaroce_udp_data_ready metaroce:metaroce_conn_tx_work
		metaroce:metaroce_net_xmit metaroce:metaroce_place metaroce:metaroce_sge_xfer
		metaroce:metaroce_mr_xfer metaroce:mr_pkt_parse metaroce:mr_conn_receive
		metaroce:mr_conn_on_ack metaroce:mr_conn_next_packet metaroce:mr_conn_next_ack
		metaroce:mr_conn_on_timer metaroce:metaroce_complete metaroce:metaroce_sq_push
		metaroce:metaroce_post_send vmlinux:__pskb_pull_tail
		vmlinux:queue_work_on vmlinux:net_rx_action vmlinux:ip_forward vmlinux:__udp_gso_segment"
	[rxe]="rdma_rxe:rxe_udp_encap_recv rdma_rxe:rxe_rcv rdma_rxe:rxe_requester rdma_rxe:rxe_receiver
		rdma_rxe:rxe_completer rdma_rxe:rxe_xmit_packet rdma_rxe:rxe_post_send
		vmlinux:net_rx_action vmlinux:ip_forward"
)

# A bpftrace program that sums, per function, its calls, its time from entry to
# return, and that time less the time of measured functions inside it (a stack of
# start times per CPU: a softirq that interrupts a measured function nests in it).
bpf_program() { # module:function...
	local mf f
	for mf in "$@"; do
		f=${mf#*:}
		cat <<-P
		kfunc:$mf { \$d = @depth[cpu]; @st[cpu, \$d] = nsecs; @ch[cpu, \$d] = 0; @depth[cpu] = \$d + 1; }
		kretfunc:$mf /@depth[cpu] > 0/ { \$d = @depth[cpu] - 1; @depth[cpu] = \$d;
			\$t = nsecs - @st[cpu, \$d]; @n["$f"] = count(); @incl["$f"] = sum(\$t);
			@excl["$f"] = sum(\$t - @ch[cpu, \$d]);
			if (\$d > 0) { @ch[cpu, \$d - 1] = @ch[cpu, \$d - 1] + \$t; } }
		P
	done
	# BEGIN runs once every probe is attached.
	echo 'BEGIN { printf("bpf-ready\n"); }'
	echo 'END { clear(@st); clear(@ch); clear(@depth); }'
}

# alloc_hists on | off TRANSPORT BYTES: histogram triggers on the kmem tracepoints
# through a run (on), then their sums per MB, the largest first, and the triggers
# removed (off).  The page allocator's event has no call site: its key is the
# stack's first three frames outside the allocator ("callee<caller<caller").
alloc_hists() {
	local tr=/sys/kernel/tracing/events/kmem e
	mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
	if [ "$1" = on ]; then
		for e in kmalloc kmem_cache_alloc; do
			echo 'hist:keys=call_site.sym:vals=hitcount,bytes_alloc:size=4096' \
				>"$tr/$e/trigger"
		done
		echo 'hist:keys=order,common_stacktrace:vals=hitcount:size=4096' \
			>"$tr/mm_page_alloc/trigger"
		return 0
	fi
	for e in kmalloc kmem_cache_alloc; do
		# "{ call_site: [ffffffff8123] __alloc_skb+0x8f } hitcount: 12 bytes_alloc: 3072"
		awk -v t="$2" -v r="$MR_ROLE" -v e="${e/kmem_cache_alloc/cache}" -v mb="$3" '
			/^{ call_site:/ && mb > 0 {
				site = ""
				for (i = 4; i <= NF && $i != "}"; i++)
					site = site (site == "" ? "" : "_") $i
				sub(/\+0x[0-9a-f]*/, "", site)
				for (; i <= NF; i++) {
					if ($i == "hitcount:") n = $(i + 1)
					if ($i == "bytes_alloc:") b = $(i + 1)
				}
				printf "# %s %s | alloc %s %s calls_per_MB %.1f bytes_per_MB %.0f\n",
					t, r, e, site, n / (mb / 1e6), b / (mb / 1e6)
			}' "$tr/$e/hist" | sort -g -r -k11,11 | head -n 20
		echo "!hist:keys=call_site.sym:vals=hitcount,bytes_alloc:size=4096" >"$tr/$e/trigger"
	done
	# "{ order: 0, common_stacktrace:" then one frame a line, then "} hitcount: 5"
	awk -v t="$2" -v r="$MR_ROLE" -v mb="$3" '
		/^{ order:/ { o = $3; sub(/,$/, "", o); site = ""; up = 0; next }
		/^ +[a-z_]/ && up < 3 && (site != "" || $1 !~ /^(__alloc_pages|alloc_pages|__folio_alloc|folio_alloc|get_page_from_freelist|__alloc_pages_noprof|alloc_pages_mpol_noprof|alloc_pages_noprof|__alloc_pages_slowpath|allocate_slab|new_slab|___slab_alloc|__slab_alloc|kmalloc_large|__kmalloc_large|____kmalloc_large|alloc_slab_page)/) {
			fr = $1; sub(/\+.*/, "", fr); site = site (up++ ? "<" : "") fr; next }
		/^} hitcount:/ && mb > 0 { n[o " " site] += $3 }
		END { for (k in n) { split(k, f, " ")
			printf "# %s %s | alloc pages order=%s %s calls_per_MB %.1f\n", t, r, f[1], f[2], n[k] / (mb / 1e6) } }' \
		"$tr/mm_page_alloc/hist" | sort -g -r -k10,10 | head -n 12
	echo "!hist:keys=order,common_stacktrace:vals=hitcount:size=4096" >"$tr/mm_page_alloc/trigger"
}

# kicks: the notifications this guest's virtio NICs sent their device so far (the
# wire's NIC, or the fabric's links): under TCG each one stops the vCPU for QEMU's
# device code, a cost no guest instruction count shows.  Read outside the run's
# marks, in one exec: a process started costs these guests more than the reading.
kicks() {
	if [ "${MR_LINKS:-0}" != 0 ]; then
		ip netns exec fr sh -c 'for i in $(seq '"$MR_LINKS"'); do
			ethtool -S "l$i"; done' 2>/dev/null
	else
		ethtool -S "$nd" 2>/dev/null
	fi | awk '/^ *tx[0-9]+_kicks:/ { k += $2 } END { print k + 0 }'
}

eth_packets() { # rx|tx
	cat "/sys/class/net/$nd/statistics/$1_packets"
}

# wakeups: interrupts, local timer interrupts and context switches so far.  Under
# TCG an idle vCPU woken costs the host far more than its guest sees: a transport
# that wakes the guest more often per MB costs the host more per MB.
wakeups() {
	awk '/^intr / { i = $2 } /^ctxt / { c = $2 }
	     END { while ((getline l < "/proc/interrupts") > 0) {
			n = split(l, f); if (f[1] == "LOC:") for (k = 2; k <= n && f[k] ~ /^[0-9]+$/; k++) t += f[k] }
		   print i, t + 0, c }' /proc/stat
}

# shellcheck disable=SC2086
modprobe metaroce $modparams || exit 1
modprobe rdma_rxe || exit 1
rdma link add mr0 type metaroce netdev $nd || exit 1
rdma link add rxe0 type rxe netdev $nd || exit 1
wait_for 10 addr_gid_index mr0 "$addr" || exit 1
wait_for 10 addr_gid_index rxe0 "$addr" || exit 1
echo 0 >/proc/sys/kernel/kptr_restrict
echo -1 >/proc/sys/kernel/perf_event_paranoid
step=0

for t in $transports; do
	step=$((step + 1))
	pair_barrier "p$step" || exit 1
	perf_pid=
	if [ "$use_perf" = 1 ]; then
		perf record -q -e cpu-clock -F 2000 -a -g -o "/tmp/perf-$t.data" -- \
			sleep "$((dur + 2))" >/dev/null 2>&1 &
		perf_pid=$!
	fi
	bpf_pid=
	if [ "$use_bpf" = 1 ]; then
		# shellcheck disable=SC2086
		bpf_program ${bpf_list:-${bpf_funcs[$t]}} >"/tmp/bpf-$t.bt"
		bpftrace "/tmp/bpf-$t.bt" >"/tmp/bpf-$t.out" 2>"/tmp/bpf-$t.err" &
		bpf_pid=$!
		# Compiling and attaching takes a while under TCG: the run starts after.
		wait_for 180 grep -q '^bpf-ready' "/tmp/bpf-$t.out" || {
			echo "# $t $MR_ROLE | bpf: bpftrace did not start: $(grep ERROR "/tmp/bpf-$t.err" | head -c 600)"
			kill "$bpf_pid" 2>/dev/null
			bpf_pid=
		}
		pair_barrier "bpf$step" || exit 1
	fi
	# The metaroce:metaroce_path tracepoint (each ACK's path state) through the run: the
	# sender's windows, RTTs and RTOs as they were.  (A background sampler does not
	# help: the guest's one vCPU runs no user task until the kernel's traffic stops.)
	trace=
	if [ "$t" = metaroce ] && { [ "$MR_ROLE" = $sender ] || [ "$pkt_trace" = 1 ]; }; then
		mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
		trace=/sys/kernel/tracing
		echo 16384 >$trace/buffer_size_kb
		echo >$trace/trace
		[ "$MR_ROLE" = $sender ] && echo 1 >$trace/events/metaroce/metaroce_path/enable
		if [ "$pkt_trace" = 1 ]; then
			echo 1 >$trace/events/metaroce/metaroce_tx/enable
			echo 1 >$trace/events/metaroce/metaroce_rx/enable
		fi
	fi
	[ "$alloc" != 1 ] || alloc_hists on
	kick0=$(kicks)
	echo "PROFILE-MARK $t start 0"
	read -r b0 t0 <<<"$(cpu_times)"
	u0=$(uptime_ms) rx0=$(eth_packets rx) tx0=$(eth_packets tx)
	read -r irq0 loc0 ctxt0 <<<"$(wakeups)"
	if [ "$t" = tcp ]; then
		# one iperf3 flow a -> b between the devices' addresses (b's server takes one test)
		if [ "$MR_ROLE" = b ]; then
			out=$(timeout $((dur + 60)) iperf3 -s -1 -B "$addr" 2>&1)
		else
			# until b's server listens (its start takes a while under TCG)
			for _ in $(seq 20); do
				sleep 1
				out=$(timeout $((dur + 30)) iperf3 -c "$peer_addr" -t "$dur" -f M 2>&1) && break
			done
		fi
	else
		# mr_ktraffic runs in its init and is gone before the symbols are read
		# below (tcgprof would name its code after the module loaded before it):
		# where its text lies is read while it runs, one small file, not kallsyms,
		# whose formatting under TCG would count as the run's.
		syms_pid=
		if [ "$tcg" = 1 ]; then
			(sleep 3; cat /sys/module/mr_ktraffic/sections/.text \
				>"/tmp/kt-text-$t" 2>/dev/null) &
			syms_pid=$!
		fi
		if [ "$MR_ROLE" = b ]; then
			out=$(kt_load dev_a="${dev[$t]}" role=server timeout_ms=60000)
		else
			sleep 1
			out=$(kt_load dev_a="${dev[$t]}" role=client peer="$MR_PEER" \
				timeout_ms=30000 ops=$op size=$size depth=$depth ring=64 \
				count=1000000 duration_ms=$((dur * 1000)))
		fi
		[ -z "$syms_pid" ] || wait "$syms_pid"
	fi
	read -r b1 t1 <<<"$(cpu_times)"
	u1=$(uptime_ms) rx1=$(eth_packets rx) tx1=$(eth_packets tx)
	read -r irq1 loc1 ctxt1 <<<"$(wakeups)"
	# The run ends here for tcgprof and the host's CPU time (the end mark): what follows
	# (bpftrace's and the traces' reports: seconds of sed and awk under TCG) is not the
	# transport's.
	# Both sides learn the client's byte count: the server's CPU is per MB it took in.
	if [ "$MR_ROLE" = a ] && [ "$t" = tcp ]; then
		# iperf3's MBytes are 2^20 bytes; its receiver line holds the bytes moved
		bytes=$(awk '/receiver$/ { v = $5 * 1048576 } END { if (v != "") printf "%.0f", v }' <<<"$out")
		mbps=$(awk -v b="${bytes:-0}" -v s="$dur" 'BEGIN { printf "%.2f", b / 1e6 / s }')
		[ -n "$bytes" ] || echo "# $t: the run failed: $out"
		pair_tell "bytes$step" "${bytes:-0}"
		say "$t a goodput_MBps $mbps"
	elif [ "$MR_ROLE" = a ]; then
		bytes=$(sed -n "s/^mr_ktraffic: $op count=.* bytes=\\([0-9]*\\) .*/\\1/p" <<<"$out")
		mbps=$(sed -n "s/^mr_ktraffic: $op count=.* MBps=\\([0-9.]*\\) .*/\\1/p" <<<"$out")
		echo "$out" | grep -q 'PASS' || echo "# $t: the run failed: $out"
		pair_tell "bytes$step" "${bytes:-0}"
		say "$t a goodput_MBps ${mbps:-0}"
		lat=$(sed -n 's/^mr_ktraffic: '"$op"' latency .* p50_us=\([0-9.]*\) p99_us=\([0-9.]*\) max_us=\([0-9.]*\).*/\1 \2 \3/p' <<<"$out")
		if [ -n "$lat" ]; then
			read -r p50 p99 pmax <<<"$lat"
			say "$t a ${op}_p50_us $p50"
			say "$t a ${op}_p99_us $p99"
			say "$t a ${op}_max_us $pmax"
		fi
	else
		bytes=$(pair_hear "bytes$step" 60)
	fi
	echo "PROFILE-MARK $t end ${bytes:-0}"
	kick1=$(kicks)
	[ "$alloc" != 1 ] || alloc_hists off "$t" "${bytes:-0}"
	[ -z "$perf_pid" ] || wait "$perf_pid"
	if [ -n "$bpf_pid" ]; then
		kill -INT "$bpf_pid"
		wait "$bpf_pid"
		# "@n[f]: 5", "@incl[f]: 123" (ns), "@excl[f]: 100" (ns)
		awk -v t="$t" -v r="$MR_ROLE" -v wall=$((u1 - u0)) '
			/^@(n|incl|excl)\[[a-z_0-9]+\]: / { split($1, k, /[][]/); v[k[2]] = 1; m[k[1] k[2]] = $2 }
			END {
				printf "# %s %s | bpf wall_ms %d\n", t, r, wall
				for (f in v)
					printf "# %s %s | bpf %-26s calls %8d incl_ms %9.1f excl_ms %9.1f per_call_us %8.2f\n",
						t, r, f, m["@n" f], m["@incl" f] / 1e6, m["@excl" f] / 1e6,
						m["@n" f] ? m["@incl" f] / 1e3 / m["@n" f] : 0
			}' "/tmp/bpf-$t.out" | sort -g -r -k12,12
	fi
	if [ -n "$trace" ] && [ "$pkt_trace" = 1 ]; then
		echo 0 >$trace/events/metaroce/metaroce_tx/enable
		echo 0 >$trace/events/metaroce/metaroce_rx/enable
		sed -n 's/.* \([0-9]*\.[0-9]*\): metaroce_\(tx\|rx\): [^ ]* \(op=[^ ]*\) \(flags=[^ ]*\) conn=[^ ]* \(path=[^ ]*\) \(psn=[^ ]*\) stream=[^ ]* \(msn=[^ ]* off=[^ ]*\) \(len=[^ ]*\) \(sport=[^ ]*\).*/TRACE '"$MR_ROLE"' \1 \2 \3 \4 \5 \6 \7 \8 \9/p' \
			$trace/trace
	fi
	if [ -n "$trace" ] && [ "$MR_ROLE" = $sender ]; then
		echo 0 >$trace/events/metaroce/metaroce_path/enable
		# "... path=3 state=1 cwnd=16 outstanding=9 srtt_us=812 min_rtt_us=400 rto_us=..."
		sed -n 's/.*metaroce_path: .* path=\([0-9]*\) state=\([0-9]*\) cwnd=\([0-9]*\) outstanding=\([0-9]*\) srtt_us=\([0-9]*\) min_rtt_us=\([0-9]*\) rto_us=\([0-9]*\) stall_floor_us=\([0-9]*\).*/\1 \2 \3 \4 \5 \6 \7 \8/p' \
			$trace/trace | awk -v t="$t" -v r="$MR_ROLE" '
			{ n++; cw += $3; out += $4; srtt += $5; minr += $6; rto += $7; fl += $8
			  if ($4 > maxout) maxout = $4
			  pn[$1]++; pc[$1] += $3; po[$1] += $4; ps[$1] += $5; pm[$1] += $6 }
			END {
				if (!n) { print "# " t " " r " | path trace: no ACK traced"; exit }
				printf "PROFILE %s %s path_acks_traced %d\n", t, r, n
				printf "PROFILE %s %s path_mean_cwnd %.1f\n", t, r, cw / n
				printf "PROFILE %s %s path_mean_outstanding %.1f\n", t, r, out / n
				printf "PROFILE %s %s path_max_outstanding %d\n", t, r, maxout
				printf "PROFILE %s %s path_mean_srtt_us %.0f\n", t, r, srtt / n
				printf "PROFILE %s %s path_mean_min_rtt_us %.0f\n", t, r, minr / n
				printf "PROFILE %s %s path_mean_rto_us %.0f\n", t, r, rto / n
				printf "PROFILE %s %s path_mean_stall_floor_us %.0f\n", t, r, fl / n
				for (p in pn)
					printf "# %s %s | path %s: %d ACKs, cwnd %.1f, outstanding %.1f, srtt %.0f us, min_rtt %.0f us\n",
						t, r, p, pn[p], pc[p] / pn[p], po[p] / pn[p], ps[p] / pn[p], pm[p] / pn[p]
			}'
	fi
	mb=$(awk -v b="${bytes:-0}" 'BEGIN { printf "%.3f", b / 1e6 }')
	if awk -v m="$mb" 'BEGIN { exit !(m > 0) }'; then
		busy=$(awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.3f", t ? b / t : 0 }')
		say "$t $MR_ROLE cpu_busy_share $busy"
		say "$t $MR_ROLE cpu_ms_per_MB $(awk -v s="$busy" -v ms=$((u1 - u0)) -v m="$mb" \
			'BEGIN { printf "%.1f", s * ms / m }')"
		say "$t $MR_ROLE rx_packets_per_MB $(awk -v p=$((rx1 - rx0)) -v m="$mb" \
			'BEGIN { printf "%.0f", p / m }')"
		say "$t $MR_ROLE tx_packets_per_MB $(awk -v p=$((tx1 - tx0)) -v m="$mb" \
			'BEGIN { printf "%.0f", p / m }')"
		say "$t $MR_ROLE irqs_per_MB $(awk -v p=$((irq1 - irq0)) -v m="$mb" \
			'BEGIN { printf "%.0f", p / m }')"
		say "$t $MR_ROLE timer_irqs_per_MB $(awk -v p=$((loc1 - loc0)) -v m="$mb" \
			'BEGIN { printf "%.0f", p / m }')"
		say "$t $MR_ROLE ctx_switches_per_MB $(awk -v p=$((ctxt1 - ctxt0)) -v m="$mb" \
			'BEGIN { printf "%.0f", p / m }')"
		say "$t $MR_ROLE nic_kicks_per_MB $(awk -v p=$((kick1 - kick0)) -v m="$mb" \
			'BEGIN { printf "%.0f", p / m }')"
	fi
	if [ "$t" = metaroce ]; then
		want=" retransmits rtos spurious_rtos rtos_held tail_probes sack_losses msg_probes path_failures path_rebalances acks_sent"
		want+=" acks_received pacer_blocked window_full tx_runs tx_run_data_packets"
		want+=" tx_gso_skbs rx_gso_skbs tx_packets rx_packets timer_past_deadlines "
		while read -r c v; do
			[[ "$want" != *" $c "* ]] || say "$t $MR_ROLE $c $v"
		done <<<"$(hw_counters mr0)"
	fi
	[ "$use_perf" = 1 ] || continue
	perf report -i "/tmp/perf-$t.data" --stdio --no-children --sort sym -g none \
		--percent-limit 0.7 2>/dev/null | grep -E '^ +[0-9]' | head -n 40 |
		sed "s/^/# $t $MR_ROLE | /"
done
# mr_ktraffic's functions where each run had its text, as /proc/kallsyms lines.
kt_text_syms() {
	local f base off name ko=$MR_TOP/tools/testing/selftests/drivers/metaroce/ktraffic/mr_ktraffic.ko

	for f in /tmp/kt-text-*; do
		read -r base <"$f" 2>/dev/null || continue
		# (bash's arithmetic, not awk's: awk's numbers are doubles)
		while read -r off name; do
			printf '%016x t %s\t[mr_ktraffic]\n' $((base + 0x$off)) "$name"
		done < <(objdump -t "$ko" | awk '$3 == "F" && $4 == ".text" { print $1, $6 }')
	done
}

# For tcgprof (TCG=1): the kernel's and the modules' text symbols, compressed (the serial
# console is slow under TCG), as "KSYMZ <hex>" lines: hex, because base64 can spell a
# word vm.sh takes for a kernel problem.
if [ "$tcg" = 1 ]; then
	{ awk '$2 ~ /^[tTwW]$/' /proc/kallsyms; kt_text_syms; } |
		gzip -1 | od -An -v -tx1 | tr -d ' \n' |
		fold -w 1000 | sed 's/^/KSYMZ /'
	echo
fi
pair_barrier finished || exit 1
