/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The connection handshake: CONNECT_REQ/RESP agreement, retries, restarts and CLOSE. */
#ifndef MR_HANDSHAKE_H
#define MR_HANDSHAKE_H

#include "conn.h"

#define MR_CONNECT_RTO_NS	1000000ULL
#define MR_CONNECT_RETRIES	8
#define MR_CONN_IDLE_NS		10000000000ULL
#define MR_CONN_WAIT_NS		500000000ULL	/* [MR-CONN-12] the waiting side asks */
#define MR_CONNECT_RESP_GAP_NS	(MR_CONNECT_RTO_NS / 2)
#define MR_RESTART_CHALLENGE_NS	50000000ULL	/* [MR-CONN-7] silence that proves a restart */
#define MR_RESTART_CHALLENGE_MAX_NS 1000000000ULL	/* a challenge older than this is stale */

enum mr_close_reason {
	MR_CLOSE_NORMAL		= 0,
	MR_CLOSE_IDLE		= 1,
	MR_CLOSE_ERROR		= 2,
	MR_CLOSE_RESTARTED	= 3,
};

/* What this endpoint offers; the same for all of its connections. */
struct mr_hs_local {
	u64 incarnation;	/* [MR-CONN-7] random and nonzero, drawn per device */
	u8 ver_min;
	u8 ver_max;
	u8 max_paths;
	u8 connect_retries;
	u16 pmtu;
	u32 link_mbps;
	u64 connect_rto_ns;
};

enum mr_hs_state {
	MR_HS_IDLE,
	MR_HS_REQ_SENT,		/* requester, waiting for CONNECT_RESP */
	MR_HS_ESTABLISHED,
	MR_HS_CLOSING,		/* CLOSE sent, waiting for CLOSE_ACK */
	MR_HS_CLOSED,		/* closed by either side: the caller frees the connection */
	MR_HS_FAILED,		/* no answer, or rejected */
};

/* Handshake state of one connection; the caller owns it next to its struct mr_conn. */
struct mr_hs {
	struct mr_hs_local local;
	u8 state;
	u8 retries;
	u8 ver;
	u8 n_paths;
	u8 pending;		/* opcode to send at once, 0 for none */
	u8 close_reason;
	bool requester;
	u16 pmtu;
	u32 local_conn_id;	/* our src_conn_id: the peer puts it in packets to us */
	u32 peer_conn_id;
	u32 local_initial_psn;
	u32 peer_initial_psn;
	u32 peer_link_mbps;
	u64 peer_incarnation;
	u64 rto_ns;
	u64 deadline_ns;	/* next retransmission of CONNECT_REQ or CLOSE */
	u64 challenge_ns;	/* [MR-CONN-7] a restart claim was challenged then; 0: none */
	u64 resp_ns;		/* [MR-SEC-5] the last CONNECT_RESP repeated for a duplicate */
	u64 rng;		/* the UDP source ports of our packets */
};

enum mr_hs_event {
	MR_HS_EV_NONE,
	MR_HS_EV_ESTABLISHED,	/* build the mr_conn from mr_hs_conn_cfg(); data may flow */
	MR_HS_EV_CLOSED,	/* closed: streams still live go to the error state */
	MR_HS_EV_FAILED,	/* no answer or rejected: waiting QPs fail with RETRY_EXC_ERR */
};

/* What to do with a CONNECT_REQ, given the live connection with that peer address if any. */
enum mr_hs_req_verdict {
	MR_HS_REQ_NEW,		/* accept into a fresh struct mr_hs */
	MR_HS_REQ_DUPLICATE,	/* mr_hs_on_duplicate_req(): resend the same CONNECT_RESP */
	MR_HS_REQ_RESTARTED,	/* [MR-CONN-7]: fail the old connection, then accept anew */
	MR_HS_REQ_REPLACED,	/* [MR-CONN-11]: the peer abandoned the old one; likewise */
	MR_HS_REQ_YIELD,	/* [MR-CONN-11] crossing requests, ours loses: mr_hs_yield() */
	MR_HS_REQ_IGNORE,	/* [MR-CONN-11] crossing requests, ours wins */
};

/* [MR-CONN-7] what to do with the live connection a restarting CONNECT_REQ names. */
enum mr_hs_restart {
	MR_HS_RESTART_CHALLENGE,	/* probe the old connection now; drop the request */
	MR_HS_RESTART_WAIT,		/* a challenge runs, or the old peer answered: drop it */
	MR_HS_RESTART_ACCEPT,		/* the old connection stayed silent: replace it */
};

/* What the owner of a connection does with a CONNECT_REQ from its peer's address. */
enum mr_hs_req_action {
	MR_HS_ACT_NONE,		/* answered, ignored or dropped: nothing more */
	MR_HS_ACT_ACCEPT,	/* our QP waits for it: mr_hs_accept() into this hs */
	MR_HS_ACT_ESTABLISHED,	/* [MR-CONN-11] we yielded: the connection is up now */
	MR_HS_ACT_CHALLENGE,	/* [MR-CONN-7] challenge the live connection (mr_conn_challenge) */
	MR_HS_ACT_WAIT,		/* [MR-CONN-7] a challenge runs or was answered: dropped */
	MR_HS_ACT_REPLACE,	/* the old connection goes, its QPs fail; accept the request anew */
};

/* [MR-CONN-9] what becomes of a connection that has no streams. */
enum mr_hs_idle_verdict {
	MR_HS_IDLE_KEEP,	/* it has streams */
	MR_HS_IDLE_WAIT,	/* without streams for less than MR_CONN_IDLE: *wait_ns more */
	MR_HS_IDLE_CLOSE,	/* established and idle for MR_CONN_IDLE: CLOSE, then free it */
	MR_HS_IDLE_DROP,	/* failed, or a handshake no stream waits for: free it */
};

void mr_hs_local_defaults(struct mr_hs_local *l, u64 incarnation);

/*
 * [MR-CONN-6] the pmtu an endpoint offers: what a frame of frame_mtu bytes
 * (the IP MTU) carries after an IP header of ip_hdr_len bytes, UDP (8) and
 * the largest header stack (MR_MAX_HDR_STACK), rounded down to a multiple of
 * MR_PMTU_ALIGN; at least MR_MIN_PMTU, at most max_pmtu.
 */
u32 mr_pmtu_offer(u32 frame_mtu, u32 ip_hdr_len, u32 max_pmtu);

/*
 * [MR-CONN-12] whether we send CONNECT_REQ: our address (16 bytes, IPv4 as its
 * v4-mapped IPv6 address) is the lower one.  The other side waits MR_CONN_WAIT.
 */
bool mr_hs_we_ask(const u8 *laddr, const u8 *raddr);
/*
 * [MR-CONN-2] whether a new stream to the peer joins this connection: not while it
 * failed, nor when its streams are gone and it never came up (the peer may have
 * restarted since); an established one whose streams went (retiring, closed after
 * MR_CONN_IDLE) is joined, since the peer's QPs may still use it.
 */
bool mr_hs_joinable(const struct mr_hs *hs, bool failed, bool retiring);
/*
 * A CONNECT_REQ from the peer of this hs: classified ([MR-CONN-5], [MR-CONN-7],
 * [MR-CONN-11]), duplicates answered, a crossing request yielded to, and a claim of a
 * restart challenged before it is believed.  last_rx_ns: when the connection last
 * received a packet from the peer.
 */
enum mr_hs_req_action mr_hs_on_connect_req(struct mr_hs *hs, u64 now, u64 last_rx_ns,
					   const struct mr_pkt *req);
/*
 * [MR-CONN-14] whether the streams that never carried anything go on, now that the
 * peer ended this connection: after its idle CLOSE (req NULL), or when its CONNECT_REQ
 * req replaced the connection under the same incarnation ([MR-CONN-11]).
 */
bool mr_hs_renewable(const struct mr_hs *hs, const struct mr_pkt *req);
/* [MR-CONN-9] in_use: the connection has streams; idle_since: when its last one went. */
enum mr_hs_idle_verdict mr_hs_idle(const struct mr_hs *hs, bool in_use, bool failed,
				   u64 idle_since, u64 now, u64 *wait_ns);

/* Requester: start with a random nonzero conn_id and a random initial PSN. */
int mr_hs_connect(struct mr_hs *hs, const struct mr_hs_local *l, u64 now, u32 conn_id,
		  u32 initial_psn);
enum mr_hs_req_verdict mr_hs_classify_req(const struct mr_hs *existing, const struct mr_pkt *req);
/* Responder: answer a CONNECT_REQ into a fresh hs with a random nonzero conn_id. */
enum mr_hs_event mr_hs_accept(struct mr_hs *hs, const struct mr_hs_local *l,
			      const struct mr_pkt *req, u32 conn_id, u32 initial_psn);
/*
 * [MR-CONN-13] a connection from an address to itself (QPs of one device connected
 * to each other, or a QP to itself) is its own peer: every packet it sends comes back
 * to it, so it is established at once, with no CONNECT_REQ, its conn_id and initial
 * PSN serving both directions.
 */
enum mr_hs_event mr_hs_loopback(struct mr_hs *hs, const struct mr_hs_local *l, u32 conn_id,
				u32 initial_psn);
/* The losing requester of [MR-CONN-11] answers, keeping its own conn_id and PSN. */
enum mr_hs_event mr_hs_yield(struct mr_hs *hs, const struct mr_pkt *req);
/* [MR-SEC-5] at most one CONNECT_RESP per MR_CONNECT_RESP_GAP_NS answers duplicates. */
void mr_hs_on_duplicate_req(struct mr_hs *hs, u64 now);
/*
 * [MR-CONN-7] a CONNECT_REQ claims that the peer of the established hs restarted (or
 * replaced it, [MR-CONN-11]). One spoofed packet must not end a live connection: the claim
 * is believed only when the old connection, challenged, has received nothing from the
 * peer for MR_RESTART_CHALLENGE_NS. last_rx_ns: when it last did.
 */
enum mr_hs_restart mr_hs_restart_check(struct mr_hs *hs, u64 now, u64 last_rx_ns);
/* CONNECT_RESP, CLOSE or CLOSE_ACK addressed to hs->local_conn_id. */
enum mr_hs_event mr_hs_on_packet(struct mr_hs *hs, u64 now, const struct mr_pkt *pkt);
enum mr_hs_event mr_hs_on_timer(struct mr_hs *hs, u64 now);
int mr_hs_close(struct mr_hs *hs, u64 now, u8 reason);
bool mr_hs_next_packet(struct mr_hs *hs, u64 now, struct mr_pkt *out);
u64 mr_hs_next_deadline(const struct mr_hs *hs);
/* The agreed ids, PSNs, PMTU and paths, over the defaults already in cfg. */
void mr_hs_conn_cfg(const struct mr_hs *hs, struct mr_conn_cfg *cfg);

#endif /* MR_HANDSHAKE_H */
