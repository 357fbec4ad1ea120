// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Engine scenarios for NAKs, RNR, error state, connection failure, tail-loss probes, fences.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "core.hpp"

namespace {

struct Refuser {
	u8 code = 0;
	u32 info = 0;
	int calls = 0;
	static u8 Check(void *ctx, const mr_place *, u32 *info)
	{
		auto *r = static_cast<Refuser *>(ctx);
		r->calls++;
		*info = r->info;
		return r->code;
	}
	static u8 Exec(void *ctx, mr_exec *)
	{
		return static_cast<Refuser *>(ctx)->code;
	}
};

// Two engines on one path each way; packets are handed over by hand.
struct Pair {
	StreamPool pool;	// before the engines: freed after them
	std::unique_ptr<mr_conn> a = std::make_unique<mr_conn>();
	std::unique_ptr<mr_conn> b = std::make_unique<mr_conn>();
	Refuser refuser;
	std::vector<mr_completion> b_done;	// polled inside Pump(), so that MSGACKs move
	mr_conn_ops ops{ &Refuser::Check, &Refuser::Exec };
	u64 now = 0;

	explicit Pair(u32 paths = 1)
	{
		mr_conn_cfg cfg;
		mr_conn_cfg_defaults(&cfg);
		cfg.n_paths = paths;
		cfg.ack_freq = 1;	// no delayed ACKs: time stands still in Pump()
		cfg.local_conn_id = 1;
		cfg.peer_conn_id = 2;
		cfg.tx_initial_psn = 1000;
		cfg.rx_initial_psn = 5000;
		mr_conn_init(a.get(), &cfg);
		std::swap(cfg.local_conn_id, cfg.peer_conn_id);
		std::swap(cfg.tx_initial_psn, cfg.rx_initial_psn);
		mr_conn_init(b.get(), &cfg);
		pool.open(a.get(), 10, 20);
		pool.open(b.get(), 20, 10);
		b->ops = &ops;
		b->ops_ctx = &refuser;
	}

	// Move every packet both ways until nothing moves; returns NAKs seen by A.
	int Pump()
	{
		int naks = 0;
		bool moved = true;
		std::vector<u8> payload(1 << 16);
		while (moved) {
			moved = false;
			mr_tx_desc d;
			mr_pkt p;
			mr_place pl;
			while (mr_conn_next_packet(a.get(), now, &d)) {
				d.pkt.payload = payload.data();
				mr_conn_receive(b.get(), now, &d.pkt, false, &pl);
				moved = true;
			}
			while (mr_conn_next_packet(b.get(), now, &d)) {
				d.pkt.payload = payload.data();
				mr_conn_receive(a.get(), now, &d.pkt, false, &pl);
				moved = true;
			}
			mr_completion x;
			while (mr_conn_poll_completion(b.get(), &x))
				b_done.push_back(x);
			while (mr_conn_next_ack(b.get(), now, &p)) {
				naks += p.bth.opcode == MR_OP_NAK;
				// [MR-ENC-2] [MR-ACK-8] the engine names every ACK's and NAK's port
				EXPECT_GE(p.sport, MR_ENTROPY_MIN) << "opcode " << int(p.bth.opcode);
				mr_conn_receive(a.get(), now, &p, false, &pl);
				moved = true;
			}
			while (mr_conn_next_ack(a.get(), now, &p)) {
				mr_conn_receive(b.get(), now, &p, false, &pl);
				moved = true;
			}
		}
		return naks;
	}

	// A's timers run, 100 us a step, until A sends something (a probe): returned.
	std::vector<mr_tx_desc> RunTimersUntilASends()
	{
		std::vector<mr_tx_desc> sent;
		mr_tx_desc d;
		for (int step = 0; step < 100 && sent.empty(); step++) {
			now += 100000;
			mr_conn_on_timer(a.get(), now);
			while (mr_conn_next_packet(a.get(), now, &d))
				sent.push_back(d);
		}
		return sent;
	}

	// A posts a one-packet Send (cookie) on stream 0; its packet reaches B and is
	// placed.  The packet is left in *d, for a test that sends it again.
	void SendOnePacketToB(u64 cookie, mr_tx_desc *d)
	{
		mr_place pl;

		ASSERT_EQ(mr_conn_post(a.get(), 0, MR_OP_SEND, 100, 0, 0, cookie), 0);
		ASSERT_TRUE(mr_conn_next_packet(a.get(), now, d));
		d->pkt.payload = send_payload.data();
		ASSERT_EQ(mr_conn_receive(b.get(), now, &d->pkt, false, &pl), MR_RX_RESULT_PLACE);
	}
	std::vector<u8> send_payload = std::vector<u8>(4096);

	std::vector<mr_completion> Poll(mr_conn *c)
	{
		std::vector<mr_completion> v;
		mr_completion x;
		if (c == b.get())
			v.swap(b_done);
		while (mr_conn_poll_completion(c, &x))
			v.push_back(x);
		return v;
	}
};

// [MR-NAK-2] the shared code-to-status table.
TEST(Nak, CodesMapToCompletionStatus_MR_NAK_2)
{
	for (size_t i = 0; i < MR_NAK_NR_CASES; i++)
		EXPECT_EQ(mr_nak_status(mr_nak_cases[i].code), mr_nak_cases[i].status)
			<< mr_nak_cases[i].name;
}

// [MR-NAK-1] [MR-NAK-2] [MR-SEC-1] [MR-VERBS-8] a Write to a bad rkey places nothing, is
// NAKed, completes with REM_ACCESS_ERR; the WQE behind it is flushed; the one before succeeds.
TEST(Nak, BadRkeyFailsTheWqeAndFlushesTheRest_MR_NAK_2)
{
	Pair p;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_WRITE, 100, 0x1000, 1, 0), 0);
	p.Pump();
	p.refuser.code = MR_NAK_BAD_RKEY;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_WRITE, 100, 0x1000, 99, 1), 0);
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 2), 0);
	EXPECT_GE(p.Pump(), 1);
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 3u);
	EXPECT_EQ(ca[0].status, MR_WC_SUCCESS);
	EXPECT_EQ(ca[1].status, MR_WC_REM_ACCESS_ERR);
	EXPECT_EQ(ca[2].status, MR_WC_WR_FLUSH_ERR);
	auto cb = p.Poll(p.b.get());
	ASSERT_EQ(cb.size(), 1u) << "[MR-VERBS-12] a plain Write completes nothing at B";
	EXPECT_EQ(cb[0].kind, MR_COMPL_STREAM_ERROR);
	EXPECT_EQ(cb[0].nak_code, MR_NAK_BAD_RKEY) << "the glue tells refusals apart by it";
	EXPECT_EQ(p.b->rx_path[0].cum_psn, p.a->tx_path[0].next_psn) << "NAKed PSNs are acked";
	// [MR-VERBS-8] a WQE posted after the error is flushed without being sent
	u32 sent = p.a->tx_path[0].sent;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 10, 0, 0, 3), 0);
	p.Pump();
	EXPECT_EQ(p.a->tx_path[0].sent, sent);
	auto late = p.Poll(p.a.get());
	ASSERT_EQ(late.size(), 1u);
	EXPECT_EQ(late[0].status, MR_WC_WR_FLUSH_ERR);
}

// [MR-NAK-4] [MR-VERBS-7] RNR: the requester waits, resends from offset 0, and succeeds once
// a receive is posted.
TEST(Nak, RnrWaitsAndRetriesTheWholeMessage_MR_NAK_4)
{
	Pair p;
	mr_conn_set_rnr(p.a.get(), 0, 3, 50);
	p.refuser.code = MR_NAK_RNR;
	p.refuser.info = 20;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 3 * 4096, 0, 0, 7), 0);
	EXPECT_GE(p.Pump(), 1);
	EXPECT_TRUE(p.Poll(p.a.get()).empty());
	EXPECT_GT(p.a->tx[0]->msg[0].rnr_until_ns, p.now);
	EXPECT_EQ(mr_conn_next_deadline(p.a.get()), 50000u) << "max(info, min_rnr_timer)";
	p.refuser.code = 0;
	int calls = p.refuser.calls;
	p.now = 50000;
	p.Pump();
	EXPECT_EQ(p.refuser.calls - calls, 3) << "every packet again, from offset 0";
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 1u);
	EXPECT_EQ(ca[0].status, MR_WC_SUCCESS);
}

// A deadline the engine names must be one it acts on when it comes. Here an RNR wait
// ends while a Write fills the window with packets that are all lost: nothing can be
// sent until an ACK or the RTO, so the next deadline is after now (the kernel arms a
// timer for it, which would otherwise fire at once, forever).
TEST(Nak, RnrWaitEndingInAFullWindowNamesNoPastDeadline_MR_NAK_4)
{
	Pair p;
	mr_conn_set_rnr(p.a.get(), 0, 7, 50);
	p.refuser.code = MR_NAK_RNR;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 7), 0);
	p.Pump();
	ASSERT_EQ(p.a->tx[0]->msg[0].rnr_until_ns, 50000u);
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_WRITE, 64 * 4096, 0x1000, 1, 8), 0);
	mr_tx_desc d;
	u32 lost = 0;
	for (u64 t = 0; t < 40000; t += 100)
		while (mr_conn_next_packet(p.a.get(), t, &d))
			lost++;
	ASSERT_GE(lost, 2u);
	ASSERT_GE(p.a->tx_path[0].outstanding, mr_cc_window(&p.a->tx_path[0].cc))
		<< "the window is full";
	const u64 now = 60000;	/* the RNR wait is over, the RTO (1 ms) is not */
	mr_conn_on_timer(p.a.get(), now);
	while (mr_conn_next_packet(p.a.get(), now, &d))	/* a tail-loss probe may go */
		EXPECT_NE(d.pkt.bth.msn, 0u) << "the refused Send went in a full window";
	mr_pkt ack;
	EXPECT_FALSE(mr_conn_next_ack(p.a.get(), now, &ack));
	EXPECT_GT(mr_conn_next_deadline(p.a.get()), now);
	EXPECT_LE(mr_conn_next_deadline(p.a.get()), MR_INITIAL_RTO_NS) << "the RTO still counts";
}

// [MR-NAK-4] RNR retries are counted; when rnr_retry is exhausted the WQE fails.
TEST(Nak, RnrRetryExhaustionFailsTheWqe_MR_NAK_4)
{
	Pair p;
	mr_conn_set_rnr(p.a.get(), 0, 2, 10);
	p.refuser.code = MR_NAK_RNR;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 10, 0, 0, 7), 0);
	for (int i = 0; i < 4; i++) {
		p.Pump();
		p.now += 100000;
	}
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 1u);
	EXPECT_EQ(ca[0].status, MR_WC_RNR_RETRY_EXC_ERR);
	EXPECT_EQ(p.a->tx[0]->msg[0].rnr_count, 2);
}

// [MR-REL-11] [MR-NAK-3] [MR-NAK-4] two Sends refused for want of a receive: one NAK
// names only the later (the stream has one pending NAK), so the earlier one's packets are
// acknowledged, placed nowhere and never NAKed. Its message probe must bring the RNR NAK
// back once a receive is posted: placing the probe's packet alone would leave a message
// the receiver waits for and the sender thinks delivered (64 QPs of pair_many_qps hung so).
TEST(Nak, MessageProbeOfARefusedSendIsAnsweredWithItsRnrNak_MR_REL_11)
{
	Pair p;
	mr_conn_set_rnr(p.a.get(), 0, 7, 50);
	p.refuser.code = MR_NAK_RNR;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 3 * 4096, 0, 0, 1), 0);
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 3 * 4096, 0, 0, 2), 0);
	EXPECT_EQ(p.Pump(), 1) << "one NAK for the two refusals";
	p.refuser.code = 0;	// the receives are posted now
	std::vector<mr_completion> ca, cb;
	for (int step = 0; step < 400 && ca.size() < 2; step++) {
		p.now += 50000;
		mr_conn_on_timer(p.a.get(), p.now);
		mr_conn_on_timer(p.b.get(), p.now);
		p.Pump();
		for (auto &x : p.Poll(p.a.get()))
			ca.push_back(x);
		for (auto &x : p.Poll(p.b.get()))
			cb.push_back(x);
	}
	ASSERT_EQ(ca.size(), 2u) << "a Send stayed incomplete for 20 ms";
	EXPECT_EQ(ca[0].status, MR_WC_SUCCESS);
	EXPECT_EQ(ca[1].status, MR_WC_SUCCESS);
	ASSERT_EQ(cb.size(), 2u);
	for (auto &x : cb) {
		EXPECT_EQ(x.kind, MR_COMPL_RECV);
		EXPECT_EQ(x.len, 3u * 4096);
	}
	EXPECT_EQ(cb[0].rsn + 1, cb[1].rsn);
}

// [MR-NAK-4] a Send refused from its 33rd packet on (the receive came late): the resent
// message's first packets are duplicates, and must not bring the RNR NAK back, or every
// round is cut short by a restart before it reaches the missing packets (a window is 16
// packets) and the Send never completes: 16,000 NAKs were seen for one Send so.
TEST(Nak, DuplicatesOfARefusedSendDoNotRestartItAgain_MR_NAK_4)
{
	struct PartRefuser {
		bool refusing = true;
		static u8 Check(void *ctx, const mr_place *pl, u32 *info)
		{
			*info = 0;
			return static_cast<PartRefuser *>(ctx)->refusing && pl->offset >= 32 * 4096 ?
				       MR_NAK_RNR : 0;
		}
	} refuser;
	Pair p;
	mr_conn_ops ops{ &PartRefuser::Check, &Refuser::Exec };
	p.b->ops = &ops;
	p.b->ops_ctx = &refuser;
	mr_conn_set_rnr(p.a.get(), 0, 7, 50);
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 64 * 4096, 0, 0, 1), 0);
	std::vector<mr_completion> ca;
	u32 naks = 0;
	for (int step = 0; step < 2000 && ca.empty(); step++) {
		naks += p.Pump();
		if (naks)
			refuser.refusing = false;	// the receive is posted after the first NAK
		p.now += 20000;
		mr_conn_on_timer(p.a.get(), p.now);
		mr_conn_on_timer(p.b.get(), p.now);
		ca = p.Poll(p.a.get());
	}
	ASSERT_EQ(ca.size(), 1u) << "the Send did not complete in 40 ms; NAKs: " << naks;
	EXPECT_EQ(ca[0].status, MR_WC_SUCCESS);
	EXPECT_LE(int(p.a->tx[0]->msg[0].rnr_count), 2) << "restarted by its own duplicates";
}

// [MR-REL-11] a message probe is flagged as one: the receiver can tell it from a resent
// last packet, and answers a probe of a message it has not completed with an RNR NAK.
TEST(Nak, MessageProbeCarriesTheProbeFlag_MR_REL_11)
{
	Pair p;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 2 * 4096, 0, 0, 1), 0);
	mr_tx_desc d;
	std::vector<mr_tx_desc> sent;
	while (mr_conn_next_packet(p.a.get(), p.now, &d))
		sent.push_back(d);
	ASSERT_EQ(sent.size(), 2u);
	for (auto &s : sent)
		EXPECT_FALSE(s.pkt.bth.flags & MR_F_MSG_PROBE);
	// B takes the first packet only, and its ACK reports both PSNs: as if the second
	// had been refused.  No MSGACK can cover the message.
	std::vector<u8> payload(1 << 16);
	mr_place pl;
	sent[0].pkt.payload = payload.data();
	mr_conn_receive(p.b.get(), p.now, &sent[0].pkt, false, &pl);
	mr_pkt ack;
	ASSERT_TRUE(mr_conn_next_ack(p.b.get(), p.now, &ack));
	ack.ack.cum_psn = sent[1].pkt.bth.psn + 1;
	mr_conn_receive(p.a.get(), p.now, &ack, false, &pl);
	ASSERT_EQ(p.a->tx[0]->msg[0].acked_count, 2u);
	auto probes = p.RunTimersUntilASends();
	ASSERT_FALSE(probes.empty());
	for (auto &pr : probes) {
		EXPECT_TRUE(pr.pkt.bth.flags & MR_F_MSG_PROBE);
		EXPECT_TRUE(pr.pkt.bth.flags & MR_F_LAST);
		pr.pkt.payload = payload.data();
		EXPECT_EQ(mr_conn_receive(p.b.get(), p.now, &pr.pkt, false, &pl),
			  MR_RX_RESULT_NONE) << "a probe of an incomplete message places nothing";
	}
	bool nak = false;
	while (mr_conn_next_ack(p.b.get(), p.now, &ack))
		if (ack.bth.opcode == MR_OP_NAK) {
			nak = true;
			EXPECT_EQ(ack.nak.code, MR_NAK_RNR);
			EXPECT_EQ(ack.bth.msn, 0u);
		}
	EXPECT_TRUE(nak);
}

// [MR-NAK-2] [MR-VERBS-4] a Read the responder cannot execute fails with REM_ACCESS_ERR.
TEST(Nak, ReadRefusedByTheResponderFails_MR_NAK_2)
{
	Pair p;
	p.refuser.code = MR_NAK_BOUNDS;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_READ_REQ, 5000, 0x1000, 1, 3), 0);
	p.Pump();
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 1u);
	EXPECT_EQ(ca[0].status, MR_WC_REM_ACCESS_ERR);
}

// [MR-VERBS-3] [MR-WIRE-8] [MR-NAK-2] an atomic completes with the value before it; a
// misaligned one is NAKed ACCESS.
TEST(Atomic, ResultReturnsAndMisalignedIsRefused_MR_WIRE_8)
{
	Pair p;
	mr_wr wr{};
	wr.opcode = MR_OP_ATOMIC_FADD;
	wr.va = 0x1000;
	wr.swap_add = 5;
	ASSERT_EQ(mr_conn_post_wr(p.a.get(), 0, &wr), 0);
	wr.va = 0x1004;
	ASSERT_EQ(mr_conn_post_wr(p.a.get(), 0, &wr), 0);
	p.Pump();
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 2u);
	EXPECT_EQ(ca[0].status, MR_WC_SUCCESS);
	EXPECT_EQ(ca[1].status, MR_WC_REM_ACCESS_ERR);
}

// [MR-CONN-10] silence for MR_CONN_TIMEOUT with data outstanding fails the connection.
TEST(Conn, SilenceWithDataOutstandingFailsTheConnection_MR_CONN_10)
{
	Pair p;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 1), 0);
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 2), 0);
	mr_tx_desc d;
	while (mr_conn_next_packet(p.a.get(), 0, &d))
		;	// all lost
	u64 t = 0;
	while (!p.a->failed && t < 3 * MR_CONN_TIMEOUT_NS) {
		t = std::max(t + 1, mr_conn_next_deadline(p.a.get()));
		mr_conn_on_timer(p.a.get(), t);
		while (mr_conn_next_packet(p.a.get(), t, &d))
			;
	}
	EXPECT_TRUE(p.a->failed);
	EXPECT_GE(t, MR_CONN_TIMEOUT_NS);
	EXPECT_LE(t, MR_CONN_TIMEOUT_NS + MR_MAX_RTO_NS);
	std::vector<mr_completion> ca;
	for (auto &x : p.Poll(p.a.get()))
		if (x.kind == MR_COMPL_SEND)
			ca.push_back(x);
	ASSERT_EQ(ca.size(), 2u);
	EXPECT_EQ(ca[0].status, MR_WC_RETRY_EXC_ERR);
	EXPECT_EQ(ca[1].status, MR_WC_WR_FLUSH_ERR);
}

// [MR-REL-6] a silent path resends its newest packet on the same path, new PSN, ACK_REQ,
// before the RTO and without declaring the original lost.
TEST(Reliability, TailLossProbeResendsNewestPacketBeforeRto_MR_REL_6)
{
	Pair p;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_WRITE, 2 * 4096, 0x1000, 1, 1), 0);
	mr_tx_desc d[2], tlp;
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d[0]));
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d[1]));
	u64 pto = MR_MIN_RTO_NS / 2;
	EXPECT_EQ(mr_conn_next_deadline(p.a.get()), pto);
	EXPECT_FALSE(mr_conn_next_packet(p.a.get(), pto - 1, &tlp));
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), pto, &tlp));
	EXPECT_EQ(tlp.pkt.bth.offset, d[1].pkt.bth.offset);
	EXPECT_EQ(tlp.pkt.bth.path_id, d[1].pkt.bth.path_id);
	EXPECT_EQ(tlp.pkt.bth.psn, d[1].pkt.bth.psn + 1);
	EXPECT_TRUE(tlp.pkt.bth.flags & MR_F_ACK_REQ);
	EXPECT_EQ(p.a->tx_path[0].lost, 0u);
	EXPECT_EQ(p.a->tail_probes, 1u);
	EXPECT_FALSE(mr_conn_next_packet(p.a.get(), 2 * pto, &tlp)) << "one probe per silence";
}

// [MR-REL-9] [MR-VERBS-4] 64 Reads in flight on one stream: the responder executes them
// all and sends its responses oldest MSN first, also when their slots wrap around (MSNs
// 40..103), and the requester completes every one in order.
TEST(Read, SixtyFourReadsInFlightAnsweredOldestFirst_MR_REL_9)
{
	Pair p;
	for (u64 i = 0; i < 40; i++)
		ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_WRITE, 10, 0x1000, 1, i), 0);
	p.Pump();
	ASSERT_EQ(p.Poll(p.a.get()).size(), 40u);
	const u32 len = 2 * p.a->cfg.pmtu;	// two READ_RESP packets each
	for (u64 i = 0; i < 64; i++)
		ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_READ_REQ, len, 0x1000, 1, 100 + i), 0)
			<< "Read " << i;
	mr_tx_desc d;
	mr_place pl;
	mr_pkt ack;
	std::vector<u8> payload(len);
	int reqs = 0;
	for (int round = 0; round < 100 && reqs < 64; round++) {	// B answers only ACKs
		while (mr_conn_next_packet(p.a.get(), p.now, &d)) {
			ASSERT_EQ(d.pkt.bth.opcode, MR_OP_READ_REQ);
			mr_conn_receive(p.b.get(), p.now, &d.pkt, false, &pl);
			reqs++;
		}
		while (mr_conn_next_ack(p.b.get(), p.now, &ack))
			mr_conn_receive(p.a.get(), p.now, &ack, false, &pl);
	}
	ASSERT_EQ(reqs, 64) << "the requester holds Reads back";
	EXPECT_EQ(p.b->rx[0]->msn_cum, 104u) << "the responder has not executed them all";
	EXPECT_EQ(p.b->tx[0]->resp_open, ~0ULL);
	std::vector<u32> first;	// the MSNs of B's responses, in the order it sends them
	for (int round = 0; round < 1000 && p.b->tx[0]->resp_open; round++) {
		while (mr_conn_next_packet(p.b.get(), p.now, &d)) {
			ASSERT_EQ(d.pkt.bth.opcode, MR_OP_READ_RESP);
			if (first.empty() || first.back() != d.pkt.bth.msn)
				first.push_back(d.pkt.bth.msn);
			d.pkt.payload = payload.data();
			mr_conn_receive(p.a.get(), p.now, &d.pkt, false, &pl);
		}
		while (mr_conn_next_ack(p.a.get(), p.now, &ack))
			mr_conn_receive(p.b.get(), p.now, &ack, false, &pl);
	}
	ASSERT_EQ(first.size(), 64u);
	for (size_t i = 0; i < first.size(); i++)
		EXPECT_EQ(first[i], 40 + i) << "response " << i << " is not the oldest owed";
	p.Pump();
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 64u);
	for (u32 i = 0; i < 64; i++) {
		EXPECT_EQ(ca[i].opcode, MR_OP_READ_REQ);
		EXPECT_EQ(ca[i].status, MR_WC_SUCCESS);
		EXPECT_EQ(ca[i].cookie, 100u + i);
	}
	EXPECT_EQ(p.b->tx[0]->resp_open, 0u) << "every response is acknowledged";
	EXPECT_TRUE(mr_conn_quiescent(p.a.get()));
}

// [MR-VERBS-16] a QP's max_rd_atomic bounds its Reads and atomics posted and not yet
// completed; 0 counts as 1.  A Write still goes into the window: keeping posting order
// is the caller's (the glue stops at the first WQE refused).
TEST(Read, MaxRdAtomicBoundsReadsInFlight_MR_VERBS_16)
{
	Pair p;
	mr_conn_set_rd_atomic(p.a.get(), 0, 2);
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_READ_REQ, 100, 0x1000, 1, 1), 0);
	mr_wr fadd{};
	fadd.opcode = MR_OP_ATOMIC_FADD;
	fadd.len = 8;
	fadd.va = 0x2000;
	fadd.rkey = 1;
	fadd.swap_add = 5;
	fadd.cookie = 2;
	ASSERT_EQ(mr_conn_post_wr(p.a.get(), 0, &fadd), 0);
	EXPECT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_READ_REQ, 100, 0x1000, 1, 3), -1)
		<< "a third Read or atomic with max_rd_atomic 2";
	fadd.cookie = 3;
	EXPECT_EQ(mr_conn_post_wr(p.a.get(), 0, &fadd), -1);
	EXPECT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_WRITE, 10, 0x1000, 1, 4), 0);
	p.Pump();
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 3u);
	EXPECT_EQ(ca[0].opcode, MR_OP_READ_REQ);
	EXPECT_EQ(ca[1].opcode, MR_OP_ATOMIC_FADD);
	EXPECT_EQ(ca[2].opcode, MR_OP_WRITE);
	EXPECT_EQ(p.a->tx[0]->rd_atomic_open, 0u);
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_READ_REQ, 100, 0x1000, 1, 5), 0)
		<< "completions make room";
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_READ_REQ, 100, 0x1000, 1, 6), 0);

	// 0, as an rdma_cm consumer that never set initiator_depth leaves it: one at a time
	mr_conn_set_rd_atomic(p.a.get(), 0, 0);
	p.Pump();
	ASSERT_EQ(p.Poll(p.a.get()).size(), 2u);
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_READ_REQ, 100, 0x1000, 1, 7), 0);
	EXPECT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_READ_REQ, 100, 0x1000, 1, 8), -1);

	// a flushed Read makes room as well
	mr_conn_error_stream(p.a.get(), 0, MR_NAK_INVALID_REQUEST);
	ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 1u);
	EXPECT_EQ(ca[0].status, MR_WC_WR_FLUSH_ERR);
	EXPECT_EQ(p.a->tx[0]->rd_atomic_open, 0u);
}

// [MR-VERBS-5] a fenced WQE is not sent until the earlier Read has completed.
TEST(Verbs, FenceWaitsForEarlierRead_MR_VERBS_5)
{
	Pair p;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_READ_REQ, 100, 0x1000, 1, 1), 0);
	mr_wr wr{};
	wr.opcode = MR_OP_SEND;
	wr.len = 10;
	wr.flags = MR_WR_FENCE;
	ASSERT_EQ(mr_conn_post_wr(p.a.get(), 0, &wr), 0);
	mr_tx_desc d;
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d));
	EXPECT_EQ(d.pkt.bth.opcode, MR_OP_READ_REQ);
	EXPECT_FALSE(mr_conn_next_packet(p.a.get(), 0, &d)) << "the fenced Send waits";
	mr_place pl;
	mr_conn_receive(p.b.get(), 0, &d.pkt, false, &pl);
	p.Pump();
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 2u);
	EXPECT_EQ(ca[0].opcode, MR_OP_READ_REQ);
	EXPECT_EQ(ca[1].opcode, MR_OP_SEND);
}

// [MR-VERBS-11] a closed responder stream drops its late packets: counted, PSN
// acknowledged, never placed nor completed; the slot is reused by the next open.
TEST(Close, LatePacketsForAClosedStreamAreDroppedAndTheSlotReused_MR_VERBS_11)
{
	Pair p;
	std::vector<u8> payload(4096);
	mr_tx_desc d;
	mr_place pl;

	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 1), 0);
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_WRITE, 100, 0x1000, 1, 2), 0);
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d));
	d.pkt.payload = payload.data();
	// the first packet opens the message at B; then B's QP is destroyed
	ASSERT_EQ(mr_conn_receive(p.b.get(), 0, &d.pkt, false, &pl), MR_RX_RESULT_PLACE);
	mr_conn_close_stream(p.b.get(), 0);
	EXPECT_FALSE(p.b->rx[0]->in_use);
	EXPECT_FALSE(p.b->tx[0]->in_use);
	u32 dropped = p.b->rx_dropped;
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d));
	d.pkt.payload = payload.data();
	EXPECT_EQ(mr_conn_receive(p.b.get(), 0, &d.pkt, false, &pl), MR_RX_RESULT_DROP);
	EXPECT_EQ(p.b->rx_dropped, dropped + 1);
	EXPECT_EQ(p.b->rx_path[0].cum_psn, d.pkt.bth.psn + 1) << "the path stays healthy";
	mr_completion x;
	EXPECT_FALSE(mr_conn_poll_completion(p.b.get(), &x)) << "nothing completes";
	// the slot is free again, with fresh receive state
	EXPECT_EQ(p.pool.open(p.b.get(), 21, 11), 0);
	EXPECT_EQ(p.b->rx[0]->id, 21u);
	EXPECT_EQ(p.b->rx[0]->msn_cum, 0u);
	EXPECT_EQ(p.b->rx[0]->msg[0].state, MR_MSG_FREE);
	// a retransmission for the old stream id still finds nothing
	dropped = p.b->rx_dropped;
	EXPECT_EQ(mr_conn_receive(p.b.get(), 0, &d.pkt, false, &pl), MR_RX_RESULT_DROP);
	EXPECT_EQ(p.b->rx_dropped, dropped + 1);
}

// [MR-VERBS-11] [MR-REL-11] the responder completes a Send and its QP is destroyed, but
// the ACK that carried the MSGACK is lost: the requester's probe is answered with the
// closed stream's MSGACK, so its Send completes instead of being probed for ever. A
// message the stream did not complete is refused with a NAK; the newest record of an
// id is the one that answers.
TEST(Close, ProbeOfAMessageCompletedBeforeTheCloseGetsItsMsgack_MR_VERBS_11)
{
	Pair p;
	std::vector<u8> payload(4096);
	mr_tx_desc d;
	mr_place pl;
	mr_pkt ack;

	ASSERT_NO_FATAL_FAILURE(p.SendOnePacketToB(1, &d));
	// the ACK for the packet comes before B's completion is polled: no MSGACK covers it
	ASSERT_TRUE(mr_conn_next_ack(p.b.get(), p.now, &ack));
	mr_conn_receive(p.a.get(), p.now, &ack, false, &pl);
	ASSERT_EQ(p.a->tx[0]->msg[0].acked_count, 1u);
	ASSERT_EQ(p.a->tx[0]->msn_acked, 0u);
	mr_completion x;
	ASSERT_TRUE(mr_conn_poll_completion(p.b.get(), &x));
	EXPECT_EQ(x.status, MR_WC_SUCCESS);
	while (mr_conn_next_ack(p.b.get(), p.now, &ack))
		;	// the MSGACK for msn 0: lost
	mr_conn_close_stream(p.b.get(), 0);
	while (mr_conn_next_ack(p.b.get(), p.now, &ack))
		;	// [MR-ACK-9] the close's own MSGACK: lost too

	// A probes; B answers for the closed stream with what it had completed
	auto probes = p.RunTimersUntilASends();
	ASSERT_FALSE(probes.empty());
	for (auto &pr : probes) {
		ASSERT_TRUE(pr.pkt.bth.flags & MR_F_MSG_PROBE);
		pr.pkt.payload = payload.data();
		EXPECT_EQ(mr_conn_receive(p.b.get(), p.now, &pr.pkt, false, &pl),
			  MR_RX_RESULT_DROP) << "nothing is placed";
	}
	bool msgack = false;
	while (mr_conn_next_ack(p.b.get(), p.now, &ack)) {
		ASSERT_EQ(ack.bth.opcode, MR_OP_ACK);
		for (u32 i = 0; i < ack.ack.n_msg_acks; i++)
			if (ack.ack.msg_acks[i].stream == 20) {
				EXPECT_EQ(ack.ack.msg_acks[i].msn_cum, 1u);
				msgack = true;
			}
		mr_conn_receive(p.a.get(), p.now, &ack, false, &pl);
	}
	EXPECT_TRUE(msgack) << "the probe is answered with the closed stream's MSGACK";
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 1u);
	EXPECT_EQ(ca[0].status, MR_WC_SUCCESS);
	EXPECT_EQ(ca[0].cookie, 1u);

	// msn 1 was never completed by the closed stream and never will be: a packet of it
	// gets no MSGACK but a NAK, and the Send fails instead of being probed for ever
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 2), 0);
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), p.now, &d));
	d.pkt.payload = payload.data();
	EXPECT_EQ(mr_conn_receive(p.b.get(), p.now, &d.pkt, false, &pl), MR_RX_RESULT_DROP);
	bool nak = false;
	while (mr_conn_next_ack(p.b.get(), p.now, &ack)) {
		if (ack.bth.opcode == MR_OP_NAK) {
			EXPECT_EQ(ack.nak.code, MR_NAK_INVALID_REQUEST);
			EXPECT_EQ(ack.bth.stream, 20u);
			EXPECT_EQ(ack.bth.msn, 1u);
			nak = true;
		}
		for (u32 i = 0; ack.bth.opcode == MR_OP_ACK && i < ack.ack.n_msg_acks; i++)
			EXPECT_NE(ack.ack.msg_acks[i].stream, 20u) << "msn 1 is not acknowledged";
		mr_conn_receive(p.a.get(), p.now, &ack, false, &pl);
	}
	EXPECT_TRUE(nak) << "a message of the closed stream is refused";
	ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 1u);
	EXPECT_EQ(ca[0].status, MR_WC_REM_INV_REQ_ERR);
	EXPECT_EQ(ca[0].cookie, 2u);

	// the id opened and closed again (a new QP with the old number): its newer record
	// is the one that counts
	ASSERT_EQ(p.pool.open(p.b.get(), 20, 30), 0);
	mr_conn_close_stream(p.b.get(), 0);	// it completed nothing
	d.pkt.bth.msn = 0;
	d.pkt.bth.flags |= MR_F_ACK_REQ;
	mr_conn_receive(p.b.get(), p.now, &d.pkt, false, &pl);
	nak = false;
	while (mr_conn_next_ack(p.b.get(), p.now, &ack)) {
		nak |= ack.bth.opcode == MR_OP_NAK && ack.bth.msn == 0;
		for (u32 i = 0; ack.bth.opcode == MR_OP_ACK && i < ack.ack.n_msg_acks; i++)
			EXPECT_NE(ack.ack.msg_acks[i].stream, 20u) << "the older stream's record";
	}
	EXPECT_TRUE(nak) << "the newer stream completed nothing";
	EXPECT_EQ(p.b->closed_due, 0u) << "every answer went: ACKs skip the ring again";
}

// [MR-ACK-9] a responder stream that stops (its QP moved to Error, or destroyed) repeats
// its MSGACK at once.  iSER's logout: the initiator received the response, the ACK that
// carried its MSGACK was lost, and the initiator tore its QP down before the target's
// probe: the target's QP then went to Error too and flushed a delivered Send (LIO
// WARNs on that flush).  The repeat goes out before any DREQ of the tear-down.
TEST(Ack, StreamThatStopsRepeatsItsMsgackAtOnce_MR_ACK_9)
{
	// B's consumer stops the stream: moves its QP to Error, or destroys it.
	auto stop = [](Pair &p, bool destroy) {
		if (destroy)
			mr_conn_close_stream(p.b.get(), 0);
		else
			mr_conn_error_stream(p.b.get(), 0, MR_NAK_REMOTE_OP_ERROR);
	};

	for (bool destroy : { false, true }) {
		SCOPED_TRACE(destroy ? "destroyed" : "moved to Error");
		Pair p;
		mr_tx_desc d;
		mr_place pl;
		mr_pkt ack;
		mr_completion x;

		ASSERT_NO_FATAL_FAILURE(p.SendOnePacketToB(7, &d));
		ASSERT_TRUE(mr_conn_poll_completion(p.b.get(), &x));
		EXPECT_EQ(x.status, MR_WC_SUCCESS);
		int lost = 0;
		while (mr_conn_next_ack(p.b.get(), p.now, &ack))
			lost++;	// the path ACK and the MSGACK: lost
		ASSERT_GT(lost, 0);
		EXPECT_TRUE(p.Poll(p.a.get()).empty()) << "A does not know yet";

		p.now += 1000;	// no timer runs: the repeat needs none
		stop(p, destroy);
		bool msgack = false;
		while (mr_conn_next_ack(p.b.get(), p.now, &ack)) {
			mr_conn_receive(p.a.get(), p.now, &ack, false, &pl);
			ASSERT_EQ(ack.bth.opcode, MR_OP_ACK) << "a NAK that nothing asked for";
			EXPECT_EQ(ack.ack.ts_echo, 0u) << "no packet triggered it: it echoes no time";
			EXPECT_EQ(ack.ack.pkt_count, 0u);
			for (u32 i = 0; i < ack.ack.n_msg_acks; i++)
				if (ack.ack.msg_acks[i].stream == 20) {
					EXPECT_EQ(ack.ack.msg_acks[i].msn_cum, 1u);
					msgack = true;
				}
		}
		EXPECT_TRUE(msgack) << "the stream's MSGACK goes out at once";
		auto ca = p.Poll(p.a.get());
		ASSERT_EQ(ca.size(), 1u);
		EXPECT_EQ(ca[0].status, MR_WC_SUCCESS) << "the delivered Send completes, not flushed";
		EXPECT_EQ(ca[0].cookie, 7u);
		EXPECT_EQ(p.b->closed_due, 0u);
	}

	// A stream that completed nothing has nothing to say: no ACK.
	for (bool destroy : { false, true }) {
		Pair p;
		mr_pkt ack;

		stop(p, destroy);
		while (mr_conn_next_ack(p.b.get(), p.now, &ack))
			EXPECT_NE(ack.bth.opcode, MR_OP_ACK) << destroy;
	}
}

// [MR-VERBS-8] a stream moved to Error answers the peer's packets with its NAK; it sends
// none of its own accord.  It did, at every tear-down: a NAK for a message the peer had not
// posted, which the peer could only count (naks_received 1 in every bench run).
TEST(Nak, StreamInErrorNaksOnlyWhatArrives_MR_VERBS_8)
{
	Pair p;

	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 1), 0);
	EXPECT_EQ(p.Pump(), 0);
	ASSERT_EQ(p.Poll(p.b.get()).size(), 1u);
	ASSERT_EQ(p.Poll(p.a.get()).size(), 1u);
	const u32 naks = p.b->naks_sent;

	mr_conn_error_stream(p.b.get(), 0, MR_NAK_REMOTE_OP_ERROR);
	for (int i = 0; i < 3; i++, p.now += 100000) {
		mr_conn_on_timer(p.b.get(), p.now);
		EXPECT_EQ(p.Pump(), 0) << "a NAK, and nothing arrived to answer";
	}
	EXPECT_EQ(p.b->naks_sent, naks);

	// The next Send arrives: it is answered with the fatal NAK, and fails with it.
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 2), 0);
	EXPECT_EQ(p.Pump(), 1) << "one NAK for the one packet";
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 1u);
	EXPECT_EQ(ca[0].status, MR_WC_REM_OP_ERR) << "the NAK's code: REMOTE_OP_ERROR";
	EXPECT_EQ(ca[0].cookie, 2u);
}

// [MR-ACK-9] the repeat of a stream moved to Error goes in two ACKs, on the two paths
// that heard from the peer last: at 5% loss on every link, one copy and the original
// MSGACK were both lost in 1 of 100 iSER logouts, and the target's logout response was
// flushed.  On one path both copies take it.  A destroyed stream's answer goes once: its
// Error came first.
TEST(Ack, StreamMovedToErrorRepeatsItsMsgackOnTwoPaths_MR_ACK_9)
{
	for (u32 paths : { 1u, 4u }) {
		for (bool destroy : { false, true }) {
			SCOPED_TRACE(testing::Message() << paths << " paths, "
							<< (destroy ? "destroyed" : "moved to Error"));
			Pair p(paths);
			mr_tx_desc d;
			mr_pkt ack;
			mr_place pl;
			u32 sends = 0;

			// Sends until two paths have heard from A, each delivered and
			// acknowledged; then one more, whose MSGACK is lost.
			std::set<u16> heard;
			while (sends < 64 && heard.size() < std::min(paths, 2u)) {
				p.now += 10000;
				ASSERT_NO_FATAL_FAILURE(p.SendOnePacketToB(++sends, &d));
				heard.insert(d.pkt.bth.path_id);
				ASSERT_EQ(p.Poll(p.b.get()).size(), 1u);
				while (mr_conn_next_ack(p.b.get(), p.now, &ack))
					mr_conn_receive(p.a.get(), p.now, &ack, false, &pl);
				ASSERT_EQ(p.Poll(p.a.get()).size(), 1u);
			}
			ASSERT_EQ(heard.size(), std::min(paths, 2u));
			p.now += 10000;
			ASSERT_NO_FATAL_FAILURE(p.SendOnePacketToB(++sends, &d));
			ASSERT_EQ(p.Poll(p.b.get()).size(), 1u);
			while (mr_conn_next_ack(p.b.get(), p.now, &ack))
				;	// the last MSGACK: lost

			if (destroy)
				mr_conn_close_stream(p.b.get(), 0);
			else
				mr_conn_error_stream(p.b.get(), 0, MR_NAK_REMOTE_OP_ERROR);
			std::vector<u16> copies;
			while (mr_conn_next_ack(p.b.get(), p.now, &ack)) {
				for (u32 i = 0; ack.bth.opcode == MR_OP_ACK && i < ack.ack.n_msg_acks; i++)
					if (ack.ack.msg_acks[i].stream == 20) {
						EXPECT_EQ(ack.ack.msg_acks[i].msn_cum, sends);
						copies.push_back(ack.bth.path_id);
					}
			}
			if (destroy) {
				EXPECT_EQ(copies.size(), 1u);
				continue;
			}
			ASSERT_EQ(copies.size(), 2u) << "two copies at once";
			if (paths == 1)
				continue;
			EXPECT_NE(copies[0], copies[1]) << "on two paths";
			EXPECT_TRUE(heard.count(copies[0]) && heard.count(copies[1]))
				<< "the paths that heard from the peer";
			EXPECT_FALSE(mr_conn_next_ack(p.b.get(), p.now, &ack)) << "and no more";
		}
	}
}

// [MR-CONN-14] only a stream that has neither sent nor received goes on when the peer
// ends its connection: one message posted, one packet received, or an error, and it has
// something to lose.
TEST(Close, OnlyAStreamThatCarriedNothingIsUnused_MR_CONN_14)
{
	Pair p;
	mr_tx_desc d;
	mr_completion x;

	EXPECT_TRUE(mr_conn_stream_unused(p.a.get(), 0));
	EXPECT_TRUE(mr_conn_stream_unused(p.b.get(), 0));
	EXPECT_FALSE(mr_conn_stream_unused(p.a.get(), 1)) << "a slot that is not open";
	EXPECT_FALSE(mr_conn_stream_unused(p.a.get(), MR_CONN_STREAMS));

	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 1), 0);
	EXPECT_FALSE(mr_conn_stream_unused(p.a.get(), 0)) << "posted, not sent yet";
	EXPECT_TRUE(mr_conn_stream_unused(p.b.get(), 0));
	mr_place pl;
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), p.now, &d));
	d.pkt.payload = p.send_payload.data();
	ASSERT_EQ(mr_conn_receive(p.b.get(), p.now, &d.pkt, false, &pl), MR_RX_RESULT_PLACE);
	EXPECT_FALSE(mr_conn_stream_unused(p.b.get(), 0)) << "received, not completed yet";
	ASSERT_TRUE(mr_conn_poll_completion(p.b.get(), &x));
	EXPECT_FALSE(mr_conn_stream_unused(p.b.get(), 0)) << "completed";

	Pair q;
	mr_conn_error_stream(q.b.get(), 0, MR_NAK_REMOTE_OP_ERROR);
	EXPECT_FALSE(mr_conn_stream_unused(q.b.get(), 0)) << "in the error state";
	// A read request's response is owed: the responder's side has something to lose.
	Pair r;
	ASSERT_EQ(mr_conn_post(r.a.get(), 0, MR_OP_READ_REQ, 64, 0x1000, 5, 2), 0);
	ASSERT_TRUE(mr_conn_next_packet(r.a.get(), r.now, &d));
	mr_conn_receive(r.b.get(), r.now, &d.pkt, false, &pl);
	EXPECT_FALSE(mr_conn_stream_unused(r.b.get(), 0)) << "a Read request received";
}

// [MR-CONN-14] once the peer ended the connection, a work request posted to a stream that
// carried nothing is not taken: the stream stays unused, and the WQE waits for the next
// connection.  Nothing leaves either.
TEST(Close, AnEndedConnectionTakesNoNewWork_MR_CONN_14)
{
	Pair p;
	mr_tx_desc d;

	mr_conn_end(p.a.get());
	EXPECT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 1), -1);
	EXPECT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_WRITE, 100, 0x1000, 5, 2), -1);
	EXPECT_TRUE(mr_conn_stream_unused(p.a.get(), 0));
	EXPECT_FALSE(mr_conn_next_packet(p.a.get(), p.now, &d));
}

// [MR-VERBS-11] a closed requester stream drops its messages; acknowledgments of its
// packets still in flight never count for the next stream in the slot.
TEST(Close, RequesterSlotReuseIgnoresAcksOfTheOldStream_MR_VERBS_11)
{
	Pair p;
	std::vector<u8> payload(4096);
	mr_tx_desc d;
	mr_place pl;
	mr_pkt ack;

	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 1), 0);
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d));
	d.pkt.payload = payload.data();
	mr_conn_close_stream(p.a.get(), 0);
	mr_completion x;
	EXPECT_FALSE(mr_conn_poll_completion(p.a.get(), &x)) << "no completion after close";
	ASSERT_EQ(p.pool.open(p.a.get(), 12, 20), 0);
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 7), 0);
	EXPECT_EQ(p.a->tx[0]->next_msn, 1u);
	// the old packet arrives and is acknowledged; the new msn 0 is not yet sent
	ASSERT_EQ(mr_conn_receive(p.b.get(), 0, &d.pkt, false, &pl), MR_RX_RESULT_PLACE);
	ASSERT_TRUE(mr_conn_next_ack(p.b.get(), 0, &ack));
	mr_conn_receive(p.a.get(), 0, &ack, false, &pl);
	EXPECT_EQ(p.a->tx_path[0].outstanding, 0u);
	EXPECT_EQ(p.a->tx[0]->msg[0].acked_count, 0u) << "old ack taken by the new stream";
	EXPECT_EQ(p.a->tx[0]->msg[0].next_new, 0u);
	// no tail-loss probe or timer ever resends for the closed stream
	mr_conn_close_stream(p.a.get(), 0);
	EXPECT_FALSE(mr_conn_next_packet(p.a.get(), 1000000000ULL, &d));
	EXPECT_TRUE(mr_conn_quiescent(p.a.get()));
	EXPECT_EQ(mr_conn_sender_deadline(p.a.get()), MR_NO_DEADLINE);
}

// [MR-VERBS-11] every slot can be opened, closed and opened again.
TEST(Close, AllSlotsOpenCloseReopen_MR_VERBS_11)
{
	Pair p;
	for (u32 i = 1; i < MR_CONN_STREAMS; i++)
		EXPECT_EQ(p.pool.open(p.a.get(), 100 + i, 200 + i), (int)i);
	EXPECT_EQ(p.pool.open(p.a.get(), 99, 99), -1);
	mr_conn_close_stream(p.a.get(), 5);
	mr_conn_close_stream(p.a.get(), MR_CONN_STREAMS);	// out of range: ignored
	EXPECT_EQ(p.pool.open(p.a.get(), 99, 99), 5);
	EXPECT_EQ(mr_conn_post(p.a.get(), 5, MR_OP_SEND, 1, 0, 0, 0), 0);
}

// [MR-WIRE-4] immediate data and invalidate only where the wire allows them.
TEST(Imm, PostRejectsFlagsTheWireCannotCarry_MR_WIRE_4)
{
	Pair p;
	mr_wr wr{};
	wr.opcode = MR_OP_WRITE;
	wr.flags = MR_WR_INV;
	EXPECT_EQ(mr_conn_post_wr(p.a.get(), 0, &wr), -1);
	wr.opcode = MR_OP_SEND;
	wr.flags = MR_WR_IMM | MR_WR_INV;
	EXPECT_EQ(mr_conn_post_wr(p.a.get(), 0, &wr), -1);
	wr.opcode = MR_OP_READ_REQ;
	wr.flags = MR_WR_IMM;
	EXPECT_EQ(mr_conn_post_wr(p.a.get(), 0, &wr), -1);
	wr.opcode = MR_OP_SEND;
	wr.flags = MR_WR_INV | MR_WR_SOLICITED;
	EXPECT_EQ(mr_conn_post_wr(p.a.get(), 0, &wr), 0);
	EXPECT_EQ(p.a->tx[0]->next_msn, 1u);
}

// [MR-WIRE-9] [MR-VERBS-2] [MR-VERBS-12] SEND_WITH_IMM, RDMA_WRITE_WITH_IMM and
// SEND_WITH_INV: IMMH/IETH only in the LAST packet, through the codec; at the responder
// a Write with immediate consumes the next receive WQE in MSN order and a plain Write
// completes nothing.
TEST(Imm, ImmediateAndInvalidateTravelInLastPacketAndComplete_MR_VERBS_12)
{
	Pair p;
	const u32 big = 2 * 4096 + 1;	// three packets
	struct {
		u8 op, flags;
		u32 len, imm, inv;
	} w[] = {
		{ MR_OP_SEND, 0, 10, 0, 0 },
		{ MR_OP_WRITE, MR_WR_IMM, big, 0xdeadbeef, 0 },
		{ MR_OP_WRITE, 0, big, 0, 0 },
		{ MR_OP_SEND, MR_WR_INV, big, 0, 0x1234 },
		{ MR_OP_WRITE, MR_WR_IMM | MR_WR_SOLICITED, 0, 7, 0 },
		{ MR_OP_SEND, MR_WR_IMM | MR_WR_SOLICITED, big, 0xcafe, 0 },
		{ MR_OP_WRITE, MR_WR_SOLICITED, 5, 0, 0 },	// no IMM: not solicited
	};
	for (u32 i = 0; i < 7; i++) {
		mr_wr wr{};
		wr.opcode = w[i].op;
		wr.flags = w[i].flags;
		wr.len = w[i].len;
		wr.va = 0x1000;
		wr.rkey = 1;
		wr.imm = w[i].imm;
		wr.inv_rkey = w[i].inv;
		wr.cookie = i;
		ASSERT_EQ(mr_conn_post_wr(p.a.get(), 0, &wr), 0);
	}
	std::vector<u8> payload(4096), buf(MR_MAX_HDR_LEN + 4096);
	mr_tx_desc d;
	mr_place pl;
	int lasts = 0;
	// deliver the LAST packets first: the extension headers are there whatever the order
	std::vector<mr_pkt> held;
	while (mr_conn_next_packet(p.a.get(), p.now, &d)) {
		d.pkt.payload = payload.data();
		u32 n = mr_pkt_build(&d.pkt, buf.data(), (u32)buf.size());
		ASSERT_GT(n, 0u);
		mr_pkt q;
		ASSERT_EQ(mr_pkt_parse(buf.data(), n, &q), MR_PARSE_OK);
		u32 i = q.bth.msn;
		u16 ext = q.bth.flags & (MR_F_IMM | MR_F_INV | MR_F_SOLICITED);
		if (!(q.bth.flags & MR_F_LAST)) {
			EXPECT_EQ(ext, 0) << "msn " << i;
			held.push_back(d.pkt);
			continue;
		}
		lasts++;
		u16 want = ((w[i].flags & MR_WR_IMM) ? MR_F_IMM : 0) |
			   ((w[i].flags & MR_WR_INV) ? MR_F_INV : 0) |
			   ((w[i].flags & MR_WR_SOLICITED) && (w[i].op == MR_OP_SEND ||
							      (w[i].flags & MR_WR_IMM)) ?
				    MR_F_SOLICITED : 0);
		EXPECT_EQ(ext, want) << "msn " << i;
		if (want & MR_F_IMM) {
			EXPECT_EQ(q.imm, w[i].imm);
		}
		if (want & MR_F_INV) {
			EXPECT_EQ(q.inv_rkey, w[i].inv);
		}
		q.payload = payload.data();
		mr_conn_receive(p.b.get(), p.now, &q, false, &pl);
	}
	EXPECT_EQ(lasts, 7);
	for (auto &q : held)
		mr_conn_receive(p.b.get(), p.now, &q, false, &pl);
	p.Pump();
	auto cb = p.Poll(p.b.get());
	ASSERT_EQ(cb.size(), 5u);
	const u32 msns[] = { 0, 1, 3, 4, 5 };
	for (u32 k = 0; k < 5; k++) {
		const mr_completion &c = cb[k];
		u32 i = msns[k];
		EXPECT_EQ(c.kind, MR_COMPL_RECV);
		EXPECT_EQ(c.status, MR_WC_SUCCESS);
		EXPECT_EQ(c.msn, i);
		EXPECT_EQ(c.opcode, w[i].op);
		EXPECT_EQ(c.rsn, k) << "the k-th receive WQE";
		EXPECT_EQ(c.len, w[i].len);
		EXPECT_EQ(!!(c.flags & MR_COMPL_F_IMM), !!(w[i].flags & MR_WR_IMM));
		EXPECT_EQ(!!(c.flags & MR_COMPL_F_INV), !!(w[i].flags & MR_WR_INV));
		EXPECT_EQ(!!(c.flags & MR_COMPL_F_SOLICITED), !!(w[i].flags & MR_WR_SOLICITED));
		EXPECT_EQ(c.imm, w[i].imm);
		EXPECT_EQ(c.inv_rkey, w[i].inv);
	}
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 7u);
	for (u32 i = 0; i < 7; i++)
		EXPECT_EQ(ca[i].status, MR_WC_SUCCESS);
	// the next Send takes the next receive WQE after the Write with immediate
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 1, 0, 0, 9), 0);
	EXPECT_EQ(p.a->tx[0]->msg[7].rsn, 5u);
}

} // namespace

// Feeds A's next data packet to B after edit() has changed it; returns B's verdict.
template <typename Edit>
mr_rx_result DeliverEdited(Pair &p, std::vector<u8> &payload, Edit edit)
{
	mr_tx_desc d;
	mr_place pl;

	EXPECT_TRUE(mr_conn_next_packet(p.a.get(), p.now, &d));
	d.pkt.payload = payload.data();
	edit(d.pkt);
	return mr_conn_receive(p.b.get(), p.now, &d.pkt, false, &pl);
}

// [MR-SEC-2] a Send naming a receive it cannot have (one already completed, one further
// ahead than its MSN allows) places nothing, is NAKed INVALID_REQUEST and fails its WQE.
TEST(Security, SendNamingACompletedReceiveIsNakedAndPlacesNothing_MR_SEC_2)
{
	for (u32 bad_rsn : { 0u, 2u, 0x80000000u }) {
		Pair p;
		std::vector<u8> payload(4096);

		ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 1), 0);
		p.Pump();
		auto first = p.Poll(p.b.get());
		ASSERT_EQ(first.size(), 1u);
		EXPECT_EQ(first[0].rsn, 0u);
		// msn 1 can only be rsn 1: rsn 0 has completed, rsn 2 needs a message before it
		ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 2), 0);
		EXPECT_EQ(DeliverEdited(p, payload, [&](mr_pkt &k) { k.msgh.rsn = bad_rsn; }),
			  MR_RX_RESULT_NONE)
			<< "rsn " << bad_rsn;
		EXPECT_EQ(p.b->rx_bad_rsns, 1u);
		EXPECT_GE(p.Pump(), 1) << "NAKed";
		auto ca = p.Poll(p.a.get());
		ASSERT_EQ(ca.size(), 2u);
		EXPECT_EQ(ca[0].status, MR_WC_SUCCESS);
		EXPECT_EQ(ca[1].status, MR_WC_REM_INV_REQ_ERR);
		auto cb = p.Poll(p.b.get());
		ASSERT_EQ(cb.size(), 1u);
		EXPECT_EQ(cb[0].kind, MR_COMPL_STREAM_ERROR) << "no receive completes";
		EXPECT_EQ(cb[0].nak_code, MR_NAK_INVALID_REQUEST);
	}
}

// [MR-SEC-2] every packet of a Send names the rsn its first packet named; a Send whose
// rsn is on the wrong side of a Send already seen is refused; honest out-of-order Sends
// (later MSN first) are accepted.
TEST(Security, RsnMustAgreeWithTheMessageAndItsNeighbours_MR_SEC_2)
{
	{
		Pair p;
		std::vector<u8> payload(4096);
		ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 3 * 4096, 0, 0, 1), 0);
		EXPECT_EQ(DeliverEdited(p, payload, [](mr_pkt &) {}), MR_RX_RESULT_PLACE);
		EXPECT_EQ(DeliverEdited(p, payload, [](mr_pkt &k) { k.msgh.rsn = 1; }),
			  MR_RX_RESULT_NONE);
		EXPECT_EQ(p.b->rx_bad_rsns, 1u);
	}
	{
		Pair p;
		std::vector<u8> payload(4096);
		mr_tx_desc d0, d1, d2;
		mr_place pl;
		for (u64 i = 0; i < 3; i++)
			ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, i), 0);
		ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d0));
		ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d1));
		ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d2));
		d0.pkt.payload = d1.pkt.payload = d2.pkt.payload = payload.data();
		// msn 2 first (rsn 2), then msn 1 claiming rsn 2 as well: refused
		EXPECT_EQ(mr_conn_receive(p.b.get(), 0, &d2.pkt, false, &pl), MR_RX_RESULT_PLACE);
		mr_pkt forged = d1.pkt;
		forged.msgh.rsn = 2;
		EXPECT_EQ(mr_conn_receive(p.b.get(), 0, &forged, false, &pl), MR_RX_RESULT_NONE);
		EXPECT_EQ(p.b->rx_bad_rsns, 1u);
	}
	{
		Pair p;
		std::vector<u8> payload(4096);
		mr_tx_desc d[3];
		mr_place pl;
		for (u64 i = 0; i < 3; i++)
			ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, i), 0);
		for (auto &x : d) {
			ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &x));
			x.pkt.payload = payload.data();
		}
		for (int i : { 2, 0, 1 })
			EXPECT_EQ(mr_conn_receive(p.b.get(), 0, &d[i].pkt, false, &pl),
				  MR_RX_RESULT_PLACE);
		EXPECT_EQ(p.b->rx_bad_rsns, 0u);
		p.Pump();
		auto cb = p.Poll(p.b.get());
		ASSERT_EQ(cb.size(), 3u);
		for (u32 i = 0; i < 3; i++)
			EXPECT_EQ(cb[i].rsn, i);
	}
}

// [MR-VERBS-8] a stream whose QP went to Error sends nothing more (no retransmission reads
// a flushed buffer), takes no Read response into a flushed WQE, and NAKs what arrives.
TEST(Verbs, ErroredStreamSendsNothingAndPlacesNothing_MR_VERBS_8)
{
	Pair p;
	std::vector<u8> payload(4096);
	mr_tx_desc d;
	mr_place pl;

	// A Read whose response is still on its way when A's QP goes to Error.
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_READ_REQ, 4096, 0x1000, 1, 7), 0);
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d));
	EXPECT_EQ(mr_conn_receive(p.b.get(), 0, &d.pkt, false, &pl), MR_RX_RESULT_NONE);
	mr_tx_desc resp;
	ASSERT_TRUE(mr_conn_next_packet(p.b.get(), 0, &resp));
	ASSERT_EQ(resp.pkt.bth.opcode, MR_OP_READ_RESP);
	resp.pkt.payload = payload.data();
	// and a three-packet Send of which one packet has left
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 3 * 4096, 0, 0, 8), 0);
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d));
	d.pkt.payload = payload.data();
	ASSERT_EQ(d.pkt.bth.opcode, MR_OP_SEND);

	mr_conn_error_stream(p.a.get(), 0, MR_NAK_REMOTE_OP_ERROR);
	EXPECT_NE(mr_conn_receive(p.a.get(), 0, &resp.pkt, false, &pl), MR_RX_RESULT_PLACE)
		<< "a late Read response is placed into a flushed WQE";
	mr_tx_desc more;
	while (mr_conn_next_packet(p.a.get(), 0, &more))
		EXPECT_NE(more.pkt.bth.opcode, MR_OP_SEND) << "the flushed Send is still sent";
	auto ca = p.Poll(p.a.get());
	ASSERT_EQ(ca.size(), 2u);
	for (auto &x : ca)
		EXPECT_EQ(x.status, MR_WC_WR_FLUSH_ERR);

	// B's Send to the errored QP is NAKed, and fails at B with REM_OP_ERR
	std::swap(p.a, p.b);
	p.b->ops = nullptr;
	ASSERT_EQ(mr_conn_post(p.a.get(), 0, MR_OP_SEND, 100, 0, 0, 9), 0);
	p.Pump();
	auto cb = p.Poll(p.a.get());
	ASSERT_GE(cb.size(), 1u);
	EXPECT_EQ(cb.back().status, MR_WC_REM_OP_ERR);
}

// [MR-CONN-7] a challenge is a PROBE with ACK_REQ that the peer answers at once.
TEST(Conn, ChallengeProbeIsAnsweredByAnAck_MR_CONN_7)
{
	Pair p;
	mr_tx_desc d;
	mr_place pl;
	mr_pkt ack;

	EXPECT_FALSE(mr_conn_next_packet(p.a.get(), 0, &d)) << "idle";
	mr_conn_challenge(p.a.get());
	EXPECT_EQ(mr_conn_next_deadline(p.a.get()), 0u);
	ASSERT_TRUE(mr_conn_next_packet(p.a.get(), 0, &d));
	EXPECT_EQ(d.pkt.bth.opcode, MR_OP_PROBE);
	EXPECT_TRUE(d.pkt.bth.flags & MR_F_ACK_REQ);
	EXPECT_FALSE(mr_conn_next_packet(p.a.get(), 0, &d)) << "one challenge, one PROBE";
	EXPECT_EQ(mr_conn_receive(p.b.get(), 0, &d.pkt, false, &pl), MR_RX_RESULT_NONE);
	ASSERT_TRUE(mr_conn_next_ack(p.b.get(), 0, &ack));
	EXPECT_EQ(ack.bth.opcode, MR_OP_ACK);

	// [MR-CONN-10] on a connection idle for longer than MR_CONN_TIMEOUT, the challenge
	// starts the silence clock: it does not fail the connection at the next timer
	const u64 later = 10 * MR_CONN_TIMEOUT_NS;
	mr_conn_challenge(p.b.get());
	ASSERT_TRUE(mr_conn_next_packet(p.b.get(), later, &d));
	mr_conn_on_timer(p.b.get(), later + 1000000);
	EXPECT_FALSE(p.b->failed) << "the challenge of an idle connection failed it";
}

// [MR-ACK-6] more streams touched than one ACK carries MSGACKs for: the rest go in the
// following ACKs, so that every stream's completion reaches its requester.
TEST(Ack, MoreThanSixteenTouchedStreamsAllGetTheirMsgAck_MR_ACK_6)
{
	Pair p;
	std::vector<u8> payload(4096);
	mr_place pl;
	const u32 n = 20;

	for (u32 s = 1; s < n; s++) {
		ASSERT_EQ(p.pool.open(p.a.get(), 10 + s, 20 + s), (int)s);
		ASSERT_EQ(p.pool.open(p.b.get(), 20 + s, 10 + s), (int)s);
	}
	for (u32 s = 0; s < n; s++)
		ASSERT_EQ(mr_conn_post(p.a.get(), s, MR_OP_WRITE, 100, 0x1000, 1, s), 0);
	// The initial window sends 16: their ACKs (without B's completions yet) open it for
	// the other 4.
	mr_tx_desc d;
	mr_pkt ack;
	for (int round = 0; round < 2; round++) {
		while (mr_conn_next_packet(p.a.get(), 0, &d)) {
			d.pkt.payload = payload.data();
			mr_conn_receive(p.b.get(), 0, &d.pkt, false, &pl);
		}
		while (round == 0 && mr_conn_next_ack(p.b.get(), 0, &ack))
			mr_conn_receive(p.a.get(), 0, &ack, false, &pl);
	}
	// B completes all 20 messages: every stream's msn_cum moved and wants a MSGACK.
	mr_completion x;
	while (mr_conn_poll_completion(p.b.get(), &x))
		;
	ASSERT_EQ(p.b->rx[n - 1]->msn_reported, 1u) << "the last stream's message arrived";
	std::set<u32> acked;
	for (int i = 0; i < 4 && mr_conn_next_ack(p.b.get(), 0, &ack); i++) {
		EXPECT_LE(ack.ack.n_msg_acks, MR_ACK_MAX_MSG_ACKS);
		for (u32 k = 0; k < ack.ack.n_msg_acks; k++)
			acked.insert(ack.ack.msg_acks[k].stream);
	}
	EXPECT_EQ(acked.size(), n) << "streams left without a MSGACK";
}
