// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The two-way handshake and the CLOSE exchange as a small state machine per connection. */
#include "handshake.h"

void mr_hs_local_defaults(struct mr_hs_local *l, u64 incarnation)
{
	memset(l, 0, sizeof(*l));
	l->incarnation = incarnation;
	l->ver_min = MR_VERSION;
	l->ver_max = MR_VERSION;
	l->max_paths = MR_DEFAULT_PATHS;
	l->pmtu = 4096;
	l->link_mbps = 100000;
	l->connect_rto_ns = MR_CONNECT_RTO_NS;
	l->connect_retries = MR_CONNECT_RETRIES;
}

static void mr_hs_arm(struct mr_hs *hs, u64 now, u8 opcode)
{
	hs->pending = opcode;
	hs->retries = 0;
	hs->rto_ns = hs->local.connect_rto_ns;
	hs->deadline_ns = now + hs->rto_ns;
}

/* [MR-CONN-3] the conn_id is random and nonzero; the caller keeps it unique. */
int mr_hs_connect(struct mr_hs *hs, const struct mr_hs_local *l, u64 now, u32 conn_id,
		  u32 initial_psn)
{
	if (!conn_id || !l->incarnation)
		return -1;
	memset(hs, 0, sizeof(*hs));
	hs->local = *l;
	hs->requester = true;
	hs->local_conn_id = conn_id;
	hs->local_initial_psn = initial_psn;
	hs->rng = (u64)conn_id << 32 | initial_psn;	/* both random */
	hs->state = MR_HS_REQ_SENT;
	mr_hs_arm(hs, now, MR_OP_CONNECT_REQ);
	return 0;
}

/* [MR-CONN-11] which of two crossing requests survives: the higher (incarnation, conn_id). */
static bool mr_hs_local_wins(const struct mr_hs *hs, const struct mr_connh *peer)
{
	if (hs->local.incarnation != peer->incarnation)
		return hs->local.incarnation > peer->incarnation;
	return hs->local_conn_id > peer->src_conn_id;
}

enum mr_hs_req_verdict mr_hs_classify_req(const struct mr_hs *hs, const struct mr_pkt *req)
{
	const struct mr_connh *ch = &req->conn;

	if (!hs || hs->state == MR_HS_IDLE || hs->state == MR_HS_CLOSED ||
	    hs->state == MR_HS_FAILED)
		return MR_HS_REQ_NEW;
	if (hs->state == MR_HS_REQ_SENT)
		return mr_hs_local_wins(hs, ch) ? MR_HS_REQ_IGNORE : MR_HS_REQ_YIELD;
	if (ch->incarnation != hs->peer_incarnation)
		return MR_HS_REQ_RESTARTED;
	if (!hs->requester && ch->src_conn_id == hs->peer_conn_id)
		return MR_HS_REQ_DUPLICATE;
	return MR_HS_REQ_REPLACED;
}

/* [MR-CONN-4] the agreement; false when there is none. */
static bool mr_hs_agree(struct mr_hs *hs, const struct mr_connh *ch)
{
	u8 ver = ch->ver_max < hs->local.ver_max ? ch->ver_max : hs->local.ver_max;
	u8 floor = ch->ver_min > hs->local.ver_min ? ch->ver_min : hs->local.ver_min;

	if (ver < floor || !ch->max_paths || ch->pmtu < MR_MIN_PMTU)
		return false;
	hs->ver = ver;
	hs->n_paths = (u8)mr_min_u32(mr_min_u32(ch->max_paths, hs->local.max_paths),
				     MR_MAX_PATHS);
	hs->pmtu = (u16)mr_min_u32(ch->pmtu, hs->local.pmtu);
	hs->peer_conn_id = ch->src_conn_id;
	hs->peer_incarnation = ch->incarnation;
	hs->peer_initial_psn = ch->initial_psn;
	hs->peer_link_mbps = ch->link_mbps;
	return true;
}

static enum mr_hs_event mr_hs_answer(struct mr_hs *hs, const struct mr_pkt *req)
{
	hs->requester = false;
	if (!mr_hs_agree(hs, &req->conn)) {
		/* rejected: one CLOSE to the requester's id, and nothing kept */
		hs->peer_conn_id = req->conn.src_conn_id;
		hs->state = MR_HS_FAILED;
		hs->close_reason = MR_CLOSE_ERROR;
		hs->pending = MR_OP_CLOSE;
		return MR_HS_EV_FAILED;
	}
	hs->state = MR_HS_ESTABLISHED;
	hs->pending = MR_OP_CONNECT_RESP;	/* [MR-CONN-8] send it before any data */
	hs->deadline_ns = 0;
	return MR_HS_EV_ESTABLISHED;
}

enum mr_hs_event mr_hs_accept(struct mr_hs *hs, const struct mr_hs_local *l,
			      const struct mr_pkt *req, u32 conn_id, u32 initial_psn)
{
	memset(hs, 0, sizeof(*hs));
	if (!conn_id)
		return MR_HS_EV_NONE;
	hs->local = *l;
	hs->local_conn_id = conn_id;
	hs->local_initial_psn = initial_psn;
	hs->rng = (u64)conn_id << 32 | initial_psn;	/* both random */
	return mr_hs_answer(hs, req);
}

enum mr_hs_event mr_hs_loopback(struct mr_hs *hs, const struct mr_hs_local *l, u32 conn_id,
				u32 initial_psn)
{
	const struct mr_connh self = {
		.ver_min = l->ver_min,
		.ver_max = l->ver_max,
		.max_paths = l->max_paths,
		.src_conn_id = conn_id,
		.incarnation = l->incarnation,
		.pmtu = l->pmtu,
		.link_mbps = l->link_mbps,
		.initial_psn = initial_psn,
	};

	memset(hs, 0, sizeof(*hs));
	if (!conn_id)
		return MR_HS_EV_NONE;
	hs->local = *l;
	hs->requester = true;	/* nobody else's CONNECT_REQ is answered on it */
	hs->local_conn_id = conn_id;
	hs->local_initial_psn = initial_psn;
	hs->rng = (u64)conn_id << 32 | initial_psn;
	if (!mr_hs_agree(hs, &self)) {
		hs->state = MR_HS_FAILED;
		return MR_HS_EV_FAILED;
	}
	hs->state = MR_HS_ESTABLISHED;
	return MR_HS_EV_ESTABLISHED;
}

enum mr_hs_event mr_hs_yield(struct mr_hs *hs, const struct mr_pkt *req)
{
	if (hs->state != MR_HS_REQ_SENT)
		return MR_HS_EV_NONE;
	return mr_hs_answer(hs, req);
}

/*
 * [MR-CONN-5] the same CONNECT_RESP again, and no second connection; [MR-SEC-5] not more
 * often than a requester's first retry could ask for it, whatever a flood sends.
 */
void mr_hs_on_duplicate_req(struct mr_hs *hs, u64 now)
{
	if (hs->state != MR_HS_ESTABLISHED || hs->requester)
		return;
	if (hs->resp_ns && now - hs->resp_ns < MR_CONNECT_RESP_GAP_NS)
		return;
	hs->resp_ns = now ? now : 1;
	hs->pending = MR_OP_CONNECT_RESP;
}

enum mr_hs_restart mr_hs_restart_check(struct mr_hs *hs, u64 now, u64 last_rx_ns)
{
	if (hs->state != MR_HS_ESTABLISHED)
		return MR_HS_RESTART_ACCEPT;	/* closing or failed: nothing to keep */
	if (hs->challenge_ns && last_rx_ns > hs->challenge_ns) {
		/* the old peer answered: the claim was false, or stale */
		hs->challenge_ns = 0;
		return MR_HS_RESTART_WAIT;
	}
	/* none yet, or one so old that no retry of a request it answered is still coming */
	if (!hs->challenge_ns || now - hs->challenge_ns > MR_RESTART_CHALLENGE_MAX_NS) {
		hs->challenge_ns = now ? now : 1;
		return MR_HS_RESTART_CHALLENGE;
	}
	if (now - hs->challenge_ns >= MR_RESTART_CHALLENGE_NS)
		return MR_HS_RESTART_ACCEPT;
	return MR_HS_RESTART_WAIT;
}

u32 mr_pmtu_offer(u32 frame_mtu, u32 ip_hdr_len, u32 max_pmtu)
{
	u32 over = ip_hdr_len + MR_UDP_HDR_LEN + MR_MAX_HDR_STACK;
	u32 fit;

	if (frame_mtu < over + MR_MIN_PMTU)
		return MR_MIN_PMTU;
	fit = frame_mtu - over;
	fit -= fit % MR_PMTU_ALIGN;
	if (max_pmtu < fit)
		fit = max_pmtu - max_pmtu % MR_PMTU_ALIGN;
	return fit < MR_MIN_PMTU ? MR_MIN_PMTU : fit;
}

bool mr_hs_we_ask(const u8 *laddr, const u8 *raddr)
{
	u32 i;

	for (i = 0; i < 16; i++)
		if (laddr[i] != raddr[i])
			return laddr[i] < raddr[i];
	return false;	/* ourselves: nobody asks */
}

bool mr_hs_joinable(const struct mr_hs *hs, bool failed, bool retiring)
{
	if (failed || hs->state == MR_HS_CLOSED || hs->state == MR_HS_FAILED)
		return false;
	return !retiring || hs->state == MR_HS_ESTABLISHED || hs->state == MR_HS_CLOSING;
}

enum mr_hs_req_action mr_hs_on_connect_req(struct mr_hs *hs, u64 now, u64 last_rx_ns,
					   const struct mr_pkt *req)
{
	switch (mr_hs_classify_req(hs, req)) {
	case MR_HS_REQ_NEW:
		/* idle: our QP waits for it; closed or failed: nothing left to keep */
		return hs->state == MR_HS_IDLE ? MR_HS_ACT_ACCEPT : MR_HS_ACT_REPLACE;
	case MR_HS_REQ_DUPLICATE:
		mr_hs_on_duplicate_req(hs, now);
		return MR_HS_ACT_NONE;
	case MR_HS_REQ_YIELD:
		return mr_hs_yield(hs, req) == MR_HS_EV_ESTABLISHED ? MR_HS_ACT_ESTABLISHED :
								      MR_HS_ACT_NONE;
	case MR_HS_REQ_IGNORE:
		return MR_HS_ACT_NONE;
	case MR_HS_REQ_RESTARTED:
	case MR_HS_REQ_REPLACED:
		switch (mr_hs_restart_check(hs, now, last_rx_ns)) {
		case MR_HS_RESTART_CHALLENGE:
			return MR_HS_ACT_CHALLENGE;
		case MR_HS_RESTART_WAIT:
			return MR_HS_ACT_WAIT;
		default:
			return MR_HS_ACT_REPLACE;
		}
	}
	return MR_HS_ACT_NONE;
}

/*
 * Their partner QPs may still come: the peer's QP joins a connection only at RTR, which
 * can be seconds after ours under rdma_cm.  Not after a restart, or a CLOSE for any other
 * reason (its device removed, an error): the partners went with the peer's device.
 */
bool mr_hs_renewable(const struct mr_hs *hs, const struct mr_pkt *req)
{
	if (req)
		return req->conn.incarnation == hs->peer_incarnation;
	return hs->state == MR_HS_CLOSED && hs->close_reason == MR_CLOSE_IDLE;
}

enum mr_hs_idle_verdict mr_hs_idle(const struct mr_hs *hs, bool in_use, bool failed,
				   u64 idle_since, u64 now, u64 *wait_ns)
{
	*wait_ns = 0;
	if (in_use)
		return MR_HS_IDLE_KEEP;
	if (failed)
		return MR_HS_IDLE_DROP;
	if (now - idle_since < MR_CONN_IDLE_NS) {
		*wait_ns = MR_CONN_IDLE_NS - (now - idle_since);
		return MR_HS_IDLE_WAIT;
	}
	return hs->state == MR_HS_ESTABLISHED ? MR_HS_IDLE_CLOSE : MR_HS_IDLE_DROP;
}

static enum mr_hs_event mr_hs_on_resp(struct mr_hs *hs, const struct mr_pkt *pkt)
{
	const struct mr_connh *ch = &pkt->conn;

	/* [MR-CONN-7] an answer to another incarnation of us is not ours */
	if (hs->state != MR_HS_REQ_SENT || ch->peer_incarnation != hs->local.incarnation)
		return MR_HS_EV_NONE;
	if (ch->ver_min != ch->ver_max || ch->ver_max < hs->local.ver_min ||
	    ch->ver_max > hs->local.ver_max || !mr_hs_agree(hs, ch))
		return MR_HS_EV_NONE;
	hs->state = MR_HS_ESTABLISHED;
	hs->pending = 0;
	hs->deadline_ns = 0;
	return MR_HS_EV_ESTABLISHED;
}

enum mr_hs_event mr_hs_on_packet(struct mr_hs *hs, u64 now, const struct mr_pkt *pkt)
{
	(void)now;
	switch (pkt->bth.opcode) {
	case MR_OP_CONNECT_RESP:
		return mr_hs_on_resp(hs, pkt);
	case MR_OP_CLOSE:
		/* [MR-CONN-9] answer every CLOSE, repeated ones too */
		if (hs->state == MR_HS_IDLE || hs->state == MR_HS_FAILED)
			return MR_HS_EV_NONE;
		hs->pending = MR_OP_CLOSE_ACK;
		hs->close_reason = (u8)pkt->close.reason;
		if (hs->state == MR_HS_REQ_SENT) {
			hs->state = MR_HS_FAILED;	/* [MR-CONN-4] rejected */
			hs->pending = 0;
			return MR_HS_EV_FAILED;
		}
		if (hs->state == MR_HS_CLOSED)
			return MR_HS_EV_NONE;
		hs->state = MR_HS_CLOSED;
		return MR_HS_EV_CLOSED;
	case MR_OP_CLOSE_ACK:
		if (hs->state != MR_HS_CLOSING)
			return MR_HS_EV_NONE;
		hs->state = MR_HS_CLOSED;
		hs->pending = 0;
		return MR_HS_EV_CLOSED;
	default:
		return MR_HS_EV_NONE;
	}
}

/* [MR-CONN-5] [MR-CONN-9] retransmit with doubling timeout, then give up. */
enum mr_hs_event mr_hs_on_timer(struct mr_hs *hs, u64 now)
{
	if ((hs->state != MR_HS_REQ_SENT && hs->state != MR_HS_CLOSING) || now < hs->deadline_ns)
		return MR_HS_EV_NONE;
	if (hs->retries >= hs->local.connect_retries) {
		hs->pending = 0;
		if (hs->state == MR_HS_REQ_SENT) {
			hs->state = MR_HS_FAILED;
			return MR_HS_EV_FAILED;
		}
		hs->state = MR_HS_CLOSED;
		return MR_HS_EV_CLOSED;
	}
	hs->retries++;
	hs->rto_ns *= 2;
	hs->deadline_ns = now + hs->rto_ns;
	hs->pending = hs->state == MR_HS_REQ_SENT ? MR_OP_CONNECT_REQ : MR_OP_CLOSE;
	return MR_HS_EV_NONE;
}

int mr_hs_close(struct mr_hs *hs, u64 now, u8 reason)
{
	if (hs->state != MR_HS_ESTABLISHED)
		return -1;
	hs->state = MR_HS_CLOSING;
	hs->close_reason = reason;
	mr_hs_arm(hs, now, MR_OP_CLOSE);
	return 0;
}

static void mr_hs_fill_connh(const struct mr_hs *hs, struct mr_connh *ch)
{
	ch->src_conn_id = hs->local_conn_id;
	ch->incarnation = hs->local.incarnation;
	ch->link_mbps = hs->local.link_mbps;
	ch->initial_psn = hs->local_initial_psn;
	if (hs->pending == MR_OP_CONNECT_REQ) {
		ch->ver_min = hs->local.ver_min;
		ch->ver_max = hs->local.ver_max;
		ch->max_paths = hs->local.max_paths;
		ch->pmtu = hs->local.pmtu;
	} else {
		ch->ver_min = hs->ver;
		ch->ver_max = hs->ver;
		ch->max_paths = hs->n_paths;
		ch->pmtu = hs->pmtu;
		ch->peer_incarnation = hs->peer_incarnation;
	}
}

bool mr_hs_next_packet(struct mr_hs *hs, u64 now, struct mr_pkt *out)
{
	if (!hs->pending)
		return false;
	/* [MR-CONN-5] the retransmission timer runs from when the packet leaves. */
	if (hs->pending == MR_OP_CONNECT_REQ || hs->pending == MR_OP_CLOSE)
		hs->deadline_ns = now + hs->rto_ns;
	memset(out, 0, sizeof(*out));
	out->bth.version = MR_VERSION;
	out->bth.opcode = hs->pending;
	out->bth.conn_id = hs->pending == MR_OP_CONNECT_REQ ? 0 : hs->peer_conn_id;
	/* a new port each time: a retransmission need not follow a dead link */
	out->sport = mr_entropy_random(&hs->rng);
	if (hs->pending == MR_OP_CONNECT_REQ || hs->pending == MR_OP_CONNECT_RESP)
		mr_hs_fill_connh(hs, &out->conn);
	else
		out->close.reason = hs->close_reason;
	hs->pending = 0;
	return true;
}

u64 mr_hs_next_deadline(const struct mr_hs *hs)
{
	if (hs->pending)
		return 0;
	if (hs->state == MR_HS_REQ_SENT || hs->state == MR_HS_CLOSING)
		return hs->deadline_ns;
	return MR_NO_DEADLINE;
}

void mr_hs_conn_cfg(const struct mr_hs *hs, struct mr_conn_cfg *cfg)
{
	cfg->local_conn_id = hs->local_conn_id;
	cfg->peer_conn_id = hs->peer_conn_id;
	cfg->tx_initial_psn = hs->local_initial_psn;
	cfg->rx_initial_psn = hs->peer_initial_psn;
	cfg->pmtu = hs->pmtu;
	cfg->n_paths = hs->n_paths;
}
