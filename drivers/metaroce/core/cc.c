// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Sender ECN AIMD per path and receiver max-min fair shares, in integer arithmetic. */
#include "cc.h"

static u32 mr_cc_clamp(u32 cwnd_q10)
{
	if (cwnd_q10 < MR_MIN_CWND * MR_Q10)
		return MR_MIN_CWND * MR_Q10;
	if (cwnd_q10 > MR_MAX_CWND * MR_Q10)
		return MR_MAX_CWND * MR_Q10;
	return cwnd_q10;
}

void mr_cc_init(struct mr_cc_path *cc, u32 cwnd_pkts, u32 next_psn)
{
	memset(cc, 0, sizeof(*cc));
	cc->cwnd_q10 = mr_cc_clamp(cwnd_pkts * MR_Q10);
	cc->alpha_q10 = MR_Q10;
	cc->round_end_psn = next_psn;
	cc->round_min_excess_ns = MR_CC_NO_SAMPLE;
}

/*
 * [MR-CC-4] a round that lost packets cuts by 1/8 only if it also showed a
 * queue (a CE mark or the delay signal), or if over 1/8 of the packets were
 * lost in the rounds that made up the last MR_LOSS_SAMPLE packets: a buffer
 * that overflows has filled first, or loses more and more as the window
 * grows, while random loss on lossy Ethernet comes without a queue and is not
 * congestion.  (Judged over one round of a few packets, one random loss would
 * pass for heavy loss.)
 */
static bool mr_cc_loss_is_congestion(struct mr_cc_path *cc, bool queue)
{
	bool heavy = false;

	cc->sample_lost += cc->round_lost;
	cc->sample_pkts += cc->round_pkts;
	if (cc->sample_lost + cc->sample_pkts >= MR_LOSS_SAMPLE) {
		heavy = ((u64)cc->sample_lost << MR_LOSS_HEAVY_SHIFT) >
			(u64)cc->sample_lost + cc->sample_pkts;
		cc->sample_lost = 0;
		cc->sample_pkts = 0;
	}
#ifdef METAROCE_MUTATION_LOSS_IS_CONGESTION
	/* Test-only mutation (make conformance-mutations): every lossy round cuts. */
	return cc->round_lost;
#endif
	return (cc->round_lost && queue) || heavy;
}

/* [MR-CC-3] end of round: fold the marked fraction into alpha and cut once. */
static void mr_cc_end_round(struct mr_cc_path *cc, u32 next_psn)
{
	bool delay = cc->round_min_excess_ns != MR_CC_NO_SAMPLE && cc->round_min_excess_ns;
	u32 frac;

#ifndef METAROCE_MUTATION_LOSS_CUT_EVERY_ACK
	/* (That mutation cut as each ACK showed a loss, in mr_cc_on_loss().) */
	if (mr_cc_loss_is_congestion(cc, delay || cc->round_ce) && !cc->round_cut) {
		cc->cwnd_q10 = mr_cc_clamp(cc->cwnd_q10 - (cc->cwnd_q10 >> MR_LOSS_BETA_SHIFT));
		cc->ssthresh_q10 = 0;
	}
#endif
	/*
	 * Even the round's smallest RTT sample was above the bar: a queue
	 * persisted for the whole round, as if every packet were marked.
	 * (Single samples on busy hosts jitter by more than the target.)
	 */
	if (delay) {
		cc->round_pkts = mr_max_u32(cc->round_pkts, 1);
		cc->round_ce = cc->round_pkts;
	}
	frac = cc->round_pkts ?
	       mr_min_u32(cc->round_ce, cc->round_pkts) * MR_Q10 / cc->round_pkts : 0;

	cc->alpha_q10 = cc->alpha_q10 - (cc->alpha_q10 >> MR_ECN_G_SHIFT) +
			(frac >> MR_ECN_G_SHIFT);
	if (cc->round_ce) {
		u64 cut = (u64)cc->cwnd_q10 * (cc->alpha_q10 / 2);

		cc->cwnd_q10 = mr_cc_clamp(cc->cwnd_q10 - (u32)(cut / MR_Q10));
		cc->ssthresh_q10 = 0;
	}
	cc->round_ce = 0;
	cc->round_pkts = 0;
	cc->round_lost = 0;
	cc->round_min_excess_ns = MR_CC_NO_SAMPLE;
	cc->round_cut = false;
	cc->round_end_psn = next_psn;
}

void mr_cc_on_ack(struct mr_cc_path *cc, u32 delivered, u32 ce, u32 pkts, u64 excess_ns,
		  u32 una, u32 next_psn)
{
	u32 i;

	cc->round_ce += ce;
	cc->round_pkts += mr_max_u32(pkts, ce);
	cc->round_min_excess_ns = mr_min_u64(cc->round_min_excess_ns, excess_ns);
	/*
	 * [MR-CC-2] additive increase, only for ACKs that report no congestion;
	 * [MR-CC-4] one packet per packet delivered while below ssthresh.
	 */
	if (!ce) {
		for (i = 0; i < delivered; i++) {
			if (cc->cwnd_q10 < cc->ssthresh_q10)
				cc->cwnd_q10 = mr_min_u32(cc->cwnd_q10 + MR_Q10, cc->ssthresh_q10);
			else
				cc->cwnd_q10 = mr_cc_clamp(cc->cwnd_q10 +
							   MR_Q10 * MR_Q10 / cc->cwnd_q10);
		}
	}
	/* the round ends once nothing sent before round_end_psn is outstanding */
	if (!mr_seq_before(una, cc->round_end_psn))
		mr_cc_end_round(cc, next_psn);
}

/* [MR-CC-4] losses are counted; mr_cc_end_round() decides whether they cut. */
void mr_cc_on_loss(struct mr_cc_path *cc, u32 lost)
{
#ifdef METAROCE_MUTATION_LOSS_NO_CUT
	/* Test-only mutation (make conformance-mutations): a loss leaves cwnd alone. */
	return;
#endif
#ifdef METAROCE_MUTATION_LOSS_CUT_EVERY_ACK
	/* Test-only mutation: every ACK that shows a loss cuts by 1/8 at once. */
	cc->cwnd_q10 = mr_cc_clamp(cc->cwnd_q10 - (cc->cwnd_q10 >> MR_LOSS_BETA_SHIFT));
#endif
	cc->round_lost += lost;
}

/*
 * [MR-CC-4] an RTO collapses the window; it grows back one packet per packet
 * delivered up to half of what it was (a tail loss on a lossy path is the
 * usual cause, and growing by one packet per round from 1 takes dozens of
 * rounds), then by one packet per round.
 */
void mr_cc_on_rto(struct mr_cc_path *cc)
{
	cc->ssthresh_q10 = mr_max_u32(cc->ssthresh_q10, cc->cwnd_q10 / 2);
	cc->cwnd_q10 = MR_MIN_CWND * MR_Q10;
	cc->round_cut = true;
}

u16 mr_rate_hint_encode(u32 mbps)
{
	u32 e = 0;

	if (!mbps)
		return 1;	/* the smallest rate; 0 would mean "no hint" */
	while ((mbps >> e) >= 4096)
		e++;
	return (u16)((e << 12) | mr_max_u32(mbps >> e, 1));
}

u32 mr_rate_hint_decode(u16 hint)
{
	return (u32)(hint & 0x0fff) << (hint >> 12);
}

/* [MR-CC-9] demands from last interval's measurements, then water-filling. */
void mr_fairshare_compute(struct mr_share *s, u32 n, u32 link_mbps, u32 interval_ns)
{
	u32 alloc = link_mbps - (link_mbps >> MR_SHARE_HEADROOM_SHIFT);
	u32 active = 0, left, unfixed, level, extra, i;
	bool changed;

	for (i = 0; i < n; i++) {
		u64 measured;

		s[i].fixed = false;
		if (!s[i].active)
			continue;
		active++;
		measured = interval_ns ? mr_div_u64(s[i].bytes * 8000ULL, interval_ns) : 0;
		if (s[i].share_mbps && measured < (u64)s[i].share_mbps * 7 / 8)
			s[i].demand_mbps = (u32)mr_min_u64(measured * 5 / 4,
							   MR_SHARE_UNLIMITED - 1);
		else
			s[i].demand_mbps = MR_SHARE_UNLIMITED;
	}
	left = alloc;
	unfixed = active;
	do {
		changed = false;
		level = unfixed ? left / unfixed : 0;
		for (i = 0; i < n; i++) {
			if (!s[i].active || s[i].fixed || s[i].demand_mbps > level)
				continue;
			s[i].share_mbps = s[i].demand_mbps;
			s[i].fixed = true;
			left -= s[i].demand_mbps;
			unfixed--;
			changed = true;
		}
	} while (changed && unfixed);
	level = unfixed ? left / unfixed : 0;
	/*
	 * Every demand is met and capacity is left: it goes to the active
	 * connections equally. A demand is measured under the previous hint
	 * and over an interval far shorter than an RTT, so without this a lone
	 * connection that was briefly slow would be held at its own past rate.
	 */
	extra = !unfixed && active ? left / active : 0;
	for (i = 0; i < n; i++) {
		if (!s[i].active)
			s[i].share_mbps = alloc / (active + 1);
		else if (!s[i].fixed)
			s[i].share_mbps = level;
		else
			s[i].share_mbps += extra;
		s[i].bytes = 0;
	}
}
