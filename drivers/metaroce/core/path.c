// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Path lifecycle, RTT estimation and RTO backoff; silence, not congestion, fails a path. */
#include "path.h"

void mr_path_init(struct mr_path_tx *p, u32 first_psn, u16 entropy, u8 state, u32 cwnd)
{
	memset(p, 0, sizeof(*p));
	p->state = state;
	p->entropy = entropy;
	p->next_psn = first_psn;
	p->una = first_psn;
	mr_cc_init(&p->cc, cwnd, first_psn);
}

/*
 * [MR-REL-3] an idle path's estimate ages: after MR_RTT_STALE_SRTTS SRTTs with nothing
 * outstanding it says little about the path now (it may date from a stall, or from the
 * first burst of a connection, long drained).
 */
bool mr_path_rtt_stale(const struct mr_path_tx *p, u64 now)
{
	u64 idle_since = mr_max_u64(p->last_send_ns, p->last_ack_ns);

	return p->rtt.have_sample && !p->outstanding &&
	       now > idle_since + MR_RTT_STALE_SRTTS * p->rtt.srtt_ns;
}

bool mr_path_can_send(const struct mr_path_tx *p)
{
	return mr_path_free_window(p) > 0;
}

void mr_path_advance_una(struct mr_path_tx *p)
{
	while (p->una != p->next_psn && !mr_path_rec(p, p->una)->valid)
		p->una++;
}

void mr_rtt_sample(struct mr_rtt *rtt, u64 sample_ns)
{
	u64 err;

	if (!rtt->have_sample) {
		rtt->srtt_ns = sample_ns;
		rtt->rttvar_ns = sample_ns / 2;
		rtt->min_rtt_ns = sample_ns;
		rtt->have_sample = true;
		return;
	}
	err = sample_ns > rtt->srtt_ns ? sample_ns - rtt->srtt_ns : rtt->srtt_ns - sample_ns;
	rtt->rttvar_ns = rtt->rttvar_ns - rtt->rttvar_ns / 4 + err / 4;
	rtt->srtt_ns = rtt->srtt_ns - rtt->srtt_ns / 8 + sample_ns / 8;
	rtt->min_rtt_ns = mr_min_u64(rtt->min_rtt_ns, sample_ns);
}

/* A sample of the path; the first after a stale idle restarts the estimators. */
void mr_path_rtt_sample(struct mr_path_tx *p, u64 sample_ns)
{
	if (p->rtt_restart) {
		p->rtt.have_sample = false;
		p->rtt_restart = false;
	}
	mr_rtt_sample(&p->rtt, sample_ns);
}

u64 mr_path_rto_ns(const struct mr_path_tx *p, const struct mr_rto_cfg *cfg)
{
	u64 rto = p->rtt.have_sample ? p->rtt.srtt_ns + 4 * p->rtt.rttvar_ns : cfg->initial_ns;
	u8 i;

	rto = mr_max_u64(mr_min_u64(rto, cfg->max_ns), mr_max_u64(cfg->min_ns, p->stall_floor_ns));
	for (i = 0; i < p->backoff && rto < cfg->max_ns; i++)
		rto *= 2;
	return mr_min_u64(rto, cfg->max_ns);
}

void mr_path_stall_floor_raise(struct mr_path_tx *p, u64 now, u64 delay_ns)
{
	u64 floor = mr_min_u64(delay_ns + delay_ns / 4, MR_STALL_FLOOR_MAX_NS);

	if (floor > p->stall_floor_ns)
		p->stall_floor_ns = floor;
	p->stall_floor_at_ns = now;
}

void mr_path_stall_floor_decay(struct mr_path_tx *p, u64 now)
{
	while (p->stall_floor_ns && now > p->stall_floor_at_ns &&
	       now - p->stall_floor_at_ns >= MR_STALL_FLOOR_HALFLIFE_NS) {
		p->stall_floor_ns /= 2;
		p->stall_floor_at_ns += MR_STALL_FLOOR_HALFLIFE_NS;
	}
}

u16 mr_entropy_pick(u64 *rng, const u16 *used, u32 n)
{
	const u32 span = MR_ENTROPY_MAX - MR_ENTROPY_MIN + 1;
	u16 e = MR_ENTROPY_MIN;
	u32 tries, i;
	bool clash;

	/* bounded: with at most 16 paths a free port is found almost at once */
	for (tries = 0; tries < 64; tries++) {
		e = (u16)(MR_ENTROPY_MIN + (u32)(mr_rand_next(rng) >> 32) % span);
		clash = false;
		for (i = 0; i < n; i++)
			clash |= used[i] == e;
		if (!clash)
			break;
	}
	return e;
}

bool mr_path_on_rto(struct mr_path_tx *p, u8 fail_rtos, u16 new_entropy)
{
	mr_cc_on_rto(&p->cc);
	p->consecutive_rtos++;
	if (p->backoff < 16)
		p->backoff++;
	if (p->consecutive_rtos < fail_rtos) {
		if (p->state == MR_PATH_ACTIVE)
			p->state = MR_PATH_SUSPECT;
		return false;
	}
	/* FAILED is transient: count it, leave the route and start probing again */
	p->state = MR_PATH_FAILED;
	p->failures++;
	p->entropy = new_entropy;
	p->rerolls++;
	p->repath = false;	/* it moved already */
	p->state = MR_PATH_PROBE;
	p->consecutive_rtos = 0;
	p->backoff = 0;
	memset(&p->rtt, 0, sizeof(p->rtt));
	return true;
}

void mr_path_on_progress(struct mr_path_tx *p, u64 now)
{
	p->consecutive_rtos = 0;
	p->backoff = 0;
	if (p->state != MR_PATH_ACTIVE)
		p->state = MR_PATH_ACTIVE;
	p->rto_start_ns = now;
}
