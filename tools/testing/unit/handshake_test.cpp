// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The connection handshake: agreement, retries, duplicates, restarts, crossing requests, CLOSE.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core.hpp"

namespace {

mr_hs_local Local(u64 incarnation)
{
	mr_hs_local l;
	mr_hs_local_defaults(&l, incarnation);
	return l;
}

// Encode and parse, so that every handshake packet is also checked against the codec.
mr_pkt Wire(const mr_pkt &in)
{
	u8 buf[MR_MAX_HDR_LEN];
	mr_pkt out;
	u32 len = mr_pkt_build(&in, buf, sizeof(buf));
	EXPECT_EQ(mr_pkt_parse(buf, len, &out), MR_PARSE_OK);
	return out;
}

mr_pkt Next(mr_hs &hs, u64 now = 0)
{
	mr_pkt p;
	EXPECT_TRUE(mr_hs_next_packet(&hs, now, &p));
	return Wire(p);
}

// a (incarnation 0x1111, conn_id 7) asks, b (0x2222, conn_id 9) answers: both established,
// b's CONNECT_RESP sent.  Returns a's CONNECT_REQ.
mr_pkt Establish(mr_hs &a, mr_hs &b)
{
	mr_hs_local la = Local(0x1111), lb = Local(0x2222);
	mr_hs_connect(&a, &la, 0, 7, 1);
	mr_pkt req = Next(a);
	mr_hs_accept(&b, &lb, &req, 9, 2);
	Next(b);
	return req;
}

// [MR-CONN-4] [MR-CONN-6] the shared agreement cases.
TEST(Handshake, SharedCasesAgreeOnVersionPathsAndPmtu_MR_CONN_4)
{
	for (size_t i = 0; i < MR_HS_NR_CASES; i++) {
		const mr_hs_case &c = mr_hs_cases[i];
		mr_hs a, b;
		mr_pkt pkt;
		mr_hs_event ev = mr_hs_case_run(&c, &a, &b, &pkt);
		if (!c.accept) {
			EXPECT_EQ(ev, MR_HS_EV_FAILED) << c.name;
			mr_pkt close = Next(b);
			EXPECT_EQ(close.bth.opcode, MR_OP_CLOSE) << c.name;
			EXPECT_EQ(close.bth.conn_id, 0xau) << c.name;
			EXPECT_EQ(close.close.reason, u32(MR_CLOSE_ERROR)) << c.name;
			EXPECT_EQ(mr_hs_on_packet(&a, 1, &close), MR_HS_EV_FAILED) << c.name;
			continue;
		}
		ASSERT_EQ(ev, MR_HS_EV_ESTABLISHED) << c.name;
		EXPECT_EQ(b.ver, c.ver) << c.name;
		EXPECT_EQ(b.n_paths, c.n_paths) << c.name;
		EXPECT_EQ(b.pmtu, c.pmtu) << c.name;
		mr_pkt resp = Next(b);
		EXPECT_EQ(resp.bth.opcode, MR_OP_CONNECT_RESP);
		EXPECT_EQ(resp.conn.ver_min, c.ver);
		EXPECT_EQ(resp.conn.ver_max, c.ver);
		ASSERT_EQ(mr_hs_on_packet(&a, 1, &resp), MR_HS_EV_ESTABLISHED) << c.name;
		EXPECT_EQ(a.ver, c.ver) << c.name;
		EXPECT_EQ(a.n_paths, c.n_paths) << c.name;
		EXPECT_EQ(a.pmtu, c.pmtu) << c.name;
	}
}

// [MR-CONN-2] [MR-CONN-3] [MR-PATH-3] the agreed ids and PSNs cross over into both configs.
TEST(Handshake, BothSidesDeriveMatchingConnectionConfigs_MR_CONN_3)
{
	mr_hs_local la = Local(0x1111), lb = Local(0x2222);
	mr_hs a, b;
	EXPECT_EQ(mr_hs_connect(&a, &la, 0, 0, 1), -1) << "conn_id 0 is not allowed";
	ASSERT_EQ(mr_hs_connect(&a, &la, 0, 0xaaaa, 1000), 0);
	mr_pkt req = Next(a);
	EXPECT_EQ(req.bth.opcode, MR_OP_CONNECT_REQ);
	EXPECT_EQ(req.bth.conn_id, 0u);
	EXPECT_EQ(req.conn.peer_incarnation, 0u);
	EXPECT_EQ(mr_hs_classify_req(nullptr, &req), MR_HS_REQ_NEW);
	ASSERT_EQ(mr_hs_accept(&b, &lb, &req, 0xbbbb, 5000), MR_HS_EV_ESTABLISHED);
	mr_pkt resp = Next(b);
	EXPECT_EQ(resp.bth.conn_id, 0xaaaau);
	EXPECT_EQ(resp.conn.peer_incarnation, 0x1111u);
	ASSERT_EQ(mr_hs_on_packet(&a, 20, &resp), MR_HS_EV_ESTABLISHED);

	mr_conn_cfg ca, cb;
	mr_conn_cfg_defaults(&ca);
	mr_conn_cfg_defaults(&cb);
	mr_hs_conn_cfg(&a, &ca);
	mr_hs_conn_cfg(&b, &cb);
	EXPECT_EQ(ca.local_conn_id, 0xaaaau);
	EXPECT_EQ(ca.peer_conn_id, 0xbbbbu);
	EXPECT_EQ(cb.local_conn_id, ca.peer_conn_id);
	EXPECT_EQ(cb.peer_conn_id, ca.local_conn_id);
	EXPECT_EQ(ca.tx_initial_psn, cb.rx_initial_psn);
	EXPECT_EQ(cb.tx_initial_psn, ca.rx_initial_psn);
	EXPECT_EQ(ca.n_paths, cb.n_paths);
	EXPECT_EQ(ca.pmtu, cb.pmtu);
}

// [MR-CONN-5] CONNECT_REQ goes again after 1 ms, 2 ms, 4 ms, ... 8 times, then fails.
TEST(Handshake, RequestRetransmitsWithDoublingTimeoutThenFails_MR_CONN_5)
{
	mr_hs_local la = Local(0x1111);
	mr_hs a;
	ASSERT_EQ(mr_hs_connect(&a, &la, 0, 7, 1), 0);
	Next(a);
	u64 t = 0, rto = MR_CONNECT_RTO_NS;
	for (int i = 0; i < MR_CONNECT_RETRIES; i++) {
		EXPECT_EQ(mr_hs_next_deadline(&a), t + rto);
		EXPECT_EQ(mr_hs_on_timer(&a, t + rto - 1), MR_HS_EV_NONE);
		EXPECT_FALSE(mr_hs_next_packet(&a, t, nullptr)) << "nothing before the deadline";
		t += rto;
		EXPECT_EQ(mr_hs_on_timer(&a, t), MR_HS_EV_NONE);
		mr_pkt req = Next(a, t);
		EXPECT_EQ(req.bth.opcode, MR_OP_CONNECT_REQ);
		EXPECT_EQ(req.conn.src_conn_id, 7u) << "the same request each time";
		rto *= 2;
	}
	EXPECT_EQ(mr_hs_on_timer(&a, t + rto), MR_HS_EV_FAILED);
	EXPECT_EQ(a.state, MR_HS_FAILED);
}

// [MR-ENC-2] a handshake packet belongs to no path: the engine gives each one, first
// sending and retransmissions alike, a random port in 49152..65535, so a retransmission
// need not follow a dead link.
TEST(Handshake, EachPacketTakesANewRandomPort_MR_ENC_2)
{
	mr_hs_local la = Local(0x1111);
	mr_hs a;
	ASSERT_EQ(mr_hs_connect(&a, &la, 0, 7, 0x5eed), 0);
	std::set<u16> ports;
	u64 t = 0, rto = MR_CONNECT_RTO_NS;
	for (int i = 0; i <= MR_CONNECT_RETRIES; i++) {
		mr_pkt req;
		ASSERT_TRUE(mr_hs_next_packet(&a, t, &req));
		EXPECT_GE(req.sport, MR_ENTROPY_MIN);
		EXPECT_LE(req.sport, MR_ENTROPY_MAX);
		ports.insert(req.sport);
		t += rto;
		rto *= 2;
		mr_hs_on_timer(&a, t);
	}
	EXPECT_GE(ports.size(), size_t(MR_CONNECT_RETRIES)) << "the same port again and again";
}

// [MR-CONN-5] the timer counts from when the request left: a request that waited for the
// transmit path (a busy softirq, a stalled guest) is not followed by an early retry.
TEST(Handshake, RetransmitTimerStartsWhenTheRequestIsSent_MR_CONN_5)
{
	mr_hs_local la = Local(0x1111);
	mr_hs a;
	ASSERT_EQ(mr_hs_connect(&a, &la, 0, 7, 1), 0);
	EXPECT_EQ(mr_hs_next_deadline(&a), 0u) << "a request is waiting to go";
	Next(a, 700000);
	EXPECT_EQ(mr_hs_next_deadline(&a), 700000 + MR_CONNECT_RTO_NS);
	EXPECT_EQ(mr_hs_on_timer(&a, MR_CONNECT_RTO_NS), MR_HS_EV_NONE);
	EXPECT_FALSE(mr_hs_next_packet(&a, MR_CONNECT_RTO_NS, nullptr)) << "no early retry";
	EXPECT_EQ(mr_hs_on_timer(&a, 900000 + MR_CONNECT_RTO_NS), MR_HS_EV_NONE);
	Next(a, 1000000 + MR_CONNECT_RTO_NS);
	EXPECT_EQ(mr_hs_next_deadline(&a), 1000000 + 3 * MR_CONNECT_RTO_NS) << "doubled, from then";
}

// [MR-CONN-5] a duplicate request gets the very same response, and no second connection.
TEST(Handshake, DuplicateRequestIsAnsweredWithTheSameResponse_MR_CONN_5)
{
	mr_hs_local la = Local(0x1111), lb = Local(0x2222);
	mr_hs a, b;
	mr_hs_connect(&a, &la, 0, 7, 1);
	mr_pkt req = Next(a);
	mr_hs_accept(&b, &lb, &req, 9, 2);
	mr_pkt resp1 = Next(b);	// lost
	mr_hs_on_timer(&a, MR_CONNECT_RTO_NS);
	mr_pkt req2 = Next(a);
	ASSERT_EQ(mr_hs_classify_req(&b, &req2), MR_HS_REQ_DUPLICATE);
	mr_hs_on_duplicate_req(&b, 1);
	mr_pkt resp2 = Next(b);
	u8 x[MR_MAX_HDR_LEN], y[MR_MAX_HDR_LEN];
	u32 lx = mr_pkt_build(&resp1, x, sizeof(x)), ly = mr_pkt_build(&resp2, y, sizeof(y));
	ASSERT_EQ(lx, ly);
	EXPECT_EQ(memcmp(x, y, lx), 0);
	EXPECT_EQ(mr_hs_on_packet(&a, 1, &resp2), MR_HS_EV_ESTABLISHED);
	EXPECT_EQ(mr_hs_on_packet(&a, 2, &resp1), MR_HS_EV_NONE) << "a late duplicate";
}

// [MR-CONN-7] a request from a new incarnation of a connected peer proves a restart;
// a response echoing another incarnation is dropped.
TEST(Handshake, NewIncarnationIsARestartAndForeignResponsesAreDropped_MR_CONN_7)
{
	mr_hs_local la = Local(0x1111), la2 = Local(0x3333), lb = Local(0x2222);
	mr_hs a, a2, b;
	mr_hs_connect(&a, &la, 0, 7, 1);
	mr_pkt req = Next(a);
	mr_hs_accept(&b, &lb, &req, 9, 2);
	Next(b);
	mr_hs_connect(&a2, &la2, 0, 7, 1);	// same conn id by chance, new incarnation
	mr_pkt req2 = Next(a2);
	EXPECT_EQ(mr_hs_classify_req(&b, &req2), MR_HS_REQ_RESTARTED);

	mr_hs b2;
	mr_hs_accept(&b2, &lb, &req2, 10, 3);
	mr_pkt resp = Next(b2);
	EXPECT_EQ(mr_hs_on_packet(&a, 0, &resp), MR_HS_EV_NONE) << "answers a2, not a";
	EXPECT_EQ(a.state, MR_HS_REQ_SENT);
	EXPECT_EQ(mr_hs_on_packet(&a2, 0, &resp), MR_HS_EV_ESTABLISHED);
}

// [MR-CONN-11] crossing requests: the higher incarnation's request survives.
TEST(Handshake, CrossingRequestsConvergeOnOneConnection_MR_CONN_11)
{
	mr_hs_local la = Local(0x1111), lb = Local(0x2222);
	mr_hs a, b;
	mr_hs_connect(&a, &la, 0, 7, 1);
	mr_hs_connect(&b, &lb, 0, 9, 2);
	mr_pkt ra = Next(a), rb = Next(b);
	EXPECT_EQ(mr_hs_classify_req(&b, &ra), MR_HS_REQ_IGNORE);
	ASSERT_EQ(mr_hs_classify_req(&a, &rb), MR_HS_REQ_YIELD);
	ASSERT_EQ(mr_hs_yield(&a, &rb), MR_HS_EV_ESTABLISHED);
	EXPECT_EQ(a.local_conn_id, 7u) << "the loser keeps its own id";
	mr_pkt resp = Next(a);
	ASSERT_EQ(mr_hs_on_packet(&b, 1, &resp), MR_HS_EV_ESTABLISHED);
	EXPECT_EQ(b.peer_conn_id, 7u);
	EXPECT_EQ(a.peer_conn_id, 9u);
	EXPECT_EQ(mr_hs_on_timer(&a, 10 * MR_CONNECT_RTO_NS), MR_HS_EV_NONE);
	EXPECT_FALSE(mr_hs_next_packet(&a, 0, nullptr)) << "the loser stops requesting";
	// the same peer connecting again under a new conn id abandoned the old connection
	mr_hs a3;
	mr_hs_connect(&a3, &la, 0, 8, 1);
	mr_pkt r3 = Next(a3);
	EXPECT_EQ(mr_hs_classify_req(&b, &r3), MR_HS_REQ_REPLACED);
}

// [MR-CONN-9] CLOSE is answered by CLOSE_ACK, retried like CONNECT_REQ, and ends both sides.
TEST(Handshake, CloseIsAcknowledgedAndRetried_MR_CONN_9)
{
	mr_hs_local la = Local(0x1111), lb = Local(0x2222);
	mr_hs a, b;
	mr_hs_connect(&a, &la, 0, 7, 1);
	mr_pkt req = Next(a);
	mr_hs_accept(&b, &lb, &req, 9, 2);
	mr_pkt resp = Next(b);
	mr_hs_on_packet(&a, 0, &resp);
	ASSERT_EQ(mr_hs_close(&a, 100, MR_CLOSE_IDLE), 0);
	mr_pkt close = Next(a, 100);	// lost
	EXPECT_EQ(close.bth.conn_id, 9u);
	EXPECT_EQ(mr_hs_on_timer(&a, 100 + MR_CONNECT_RTO_NS), MR_HS_EV_NONE);
	close = Next(a);
	EXPECT_EQ(close.close.reason, u32(MR_CLOSE_IDLE));
	EXPECT_EQ(mr_hs_on_packet(&b, 0, &close), MR_HS_EV_CLOSED);
	mr_pkt ack = Next(b);
	EXPECT_EQ(ack.bth.opcode, MR_OP_CLOSE_ACK);
	EXPECT_EQ(ack.bth.conn_id, 7u);
	EXPECT_EQ(mr_hs_on_packet(&b, 0, &close), MR_HS_EV_NONE) << "a repeated CLOSE";
	EXPECT_EQ(Next(b).bth.opcode, MR_OP_CLOSE_ACK) << "is answered again";
	EXPECT_EQ(mr_hs_on_packet(&a, 0, &ack), MR_HS_EV_CLOSED);
	EXPECT_EQ(a.state, MR_HS_CLOSED);
}

// [MR-CONN-14] the streams that carried nothing go on after the peer's idle CLOSE, or a
// replacing request of the same incarnation; not after another CLOSE or a restart.
TEST(Handshake, OnlyAnIdleCloseOrAReplacementSparesUnusedStreams_MR_CONN_14)
{
	mr_hs_local la = Local(0x1111), lb = Local(0x2222), restarted = Local(0x3333);

	for (u32 reason : { MR_CLOSE_NORMAL, MR_CLOSE_IDLE, MR_CLOSE_ERROR, MR_CLOSE_RESTARTED }) {
		mr_hs a, b;
		mr_hs_connect(&a, &la, 0, 7, 1);
		mr_pkt req = Next(a);
		mr_hs_accept(&b, &lb, &req, 9, 2);
		mr_pkt resp = Next(b);
		ASSERT_EQ(mr_hs_on_packet(&a, 0, &resp), MR_HS_EV_ESTABLISHED);
		EXPECT_FALSE(mr_hs_renewable(&b, nullptr)) << "not closed";
		ASSERT_EQ(mr_hs_close(&a, 100, reason), 0);
		mr_pkt close = Next(a, 100);
		ASSERT_EQ(mr_hs_on_packet(&b, 100, &close), MR_HS_EV_CLOSED);
		EXPECT_EQ(mr_hs_renewable(&b, nullptr), reason == MR_CLOSE_IDLE) << reason;
	}
	mr_hs a, b, a2, a3;
	Establish(a, b);
	mr_hs_connect(&a2, &la, 0, 8, 3);
	mr_pkt replacing = Next(a2);
	EXPECT_TRUE(mr_hs_renewable(&b, &replacing)) << "the same incarnation, a new conn_id";
	mr_hs_connect(&a3, &restarted, 0, 8, 3);
	mr_pkt restart = Next(a3);
	EXPECT_FALSE(mr_hs_renewable(&b, &restart)) << "a new incarnation";
}

// [MR-CONN-7] a restart claim for a live connection is challenged, refused while the old
// peer answers, and believed only after MR_RESTART_CHALLENGE_NS of silence since.
TEST(Handshake, RestartIsBelievedOnlyAfterAChallengeGoesUnanswered_MR_CONN_7)
{
	mr_hs_local lb = Local(0x2222);
	mr_hs a, b;
	mr_pkt req = Establish(a, b);
	const u64 t0 = 5 * MR_RESTART_CHALLENGE_NS;

	// a spoofed claim while the old peer is alive: challenged, then refused
	EXPECT_EQ(mr_hs_restart_check(&b, t0, t0 - 1000), MR_HS_RESTART_CHALLENGE);
	EXPECT_EQ(mr_hs_restart_check(&b, t0 + 1000, t0 - 1000), MR_HS_RESTART_WAIT)
		<< "a second claim during the challenge is not believed either";
	EXPECT_EQ(mr_hs_restart_check(&b, t0 + MR_RESTART_CHALLENGE_NS, t0 + 2000),
		  MR_HS_RESTART_WAIT) << "the old peer answered the challenge";
	EXPECT_EQ(b.state, MR_HS_ESTABLISHED);

	// a real restart: the challenge goes unanswered, the retried request is believed
	const u64 t1 = t0 + 3 * MR_RESTART_CHALLENGE_NS;
	EXPECT_EQ(mr_hs_restart_check(&b, t1, t0 + 2000), MR_HS_RESTART_CHALLENGE);
	EXPECT_EQ(mr_hs_restart_check(&b, t1 + MR_RESTART_CHALLENGE_NS / 2, t0 + 2000),
		  MR_HS_RESTART_WAIT);
	EXPECT_EQ(mr_hs_restart_check(&b, t1 + MR_RESTART_CHALLENGE_NS, t0 + 2000),
		  MR_HS_RESTART_ACCEPT);

	// a challenge long past proves nothing about a claim made now
	mr_hs c;
	mr_hs_accept(&c, &lb, &req, 10, 3);
	EXPECT_EQ(mr_hs_restart_check(&c, t0, 0), MR_HS_RESTART_CHALLENGE);
	EXPECT_EQ(mr_hs_restart_check(&c, t0 + MR_RESTART_CHALLENGE_MAX_NS + 1, 0),
		  MR_HS_RESTART_CHALLENGE);
}

// The connection table's rules, in the engine so that the kernel and the simulator run the
// same ones: what a CONNECT_REQ from a known peer address does to its connection.
TEST(Handshake, ConnectRequestsForAKnownPeerGetOneAction_MR_CONN_7)
{
	mr_hs a, b;
	mr_hs idle{};
	mr_pkt req = Establish(a, b);
	EXPECT_EQ(mr_hs_on_connect_req(&idle, 0, 0, &req), MR_HS_ACT_ACCEPT)
		<< "our QP waits for this request [MR-CONN-12]";
	EXPECT_EQ(mr_hs_on_connect_req(&b, 1, 0, &req), MR_HS_ACT_NONE)
		<< "a duplicate is answered again [MR-CONN-5]";

	// a's next incarnation asks: challenged, refused meanwhile, believed after the silence
	mr_hs a2;
	mr_hs_local la2 = Local(0x3333);
	mr_hs_connect(&a2, &la2, 0, 11, 4);
	mr_pkt req2 = Next(a2);
	const u64 t0 = 5 * MR_RESTART_CHALLENGE_NS;
	EXPECT_EQ(mr_hs_on_connect_req(&b, t0, 0, &req2), MR_HS_ACT_CHALLENGE);
	EXPECT_EQ(mr_hs_on_connect_req(&b, t0 + 1000, 0, &req2), MR_HS_ACT_WAIT);
	EXPECT_EQ(mr_hs_on_connect_req(&b, t0 + MR_RESTART_CHALLENGE_NS, 0, &req2),
		  MR_HS_ACT_REPLACE);

	// the old peer answers the challenge: the claim is refused
	mr_hs c;
	Establish(a, c);
	EXPECT_EQ(mr_hs_on_connect_req(&c, t0, 0, &req2), MR_HS_ACT_CHALLENGE);
	EXPECT_EQ(mr_hs_on_connect_req(&c, t0 + MR_RESTART_CHALLENGE_NS, t0 + 1, &req2),
		  MR_HS_ACT_WAIT);
	EXPECT_EQ(c.state, MR_HS_ESTABLISHED);

	// [MR-CONN-11] crossing requests: exactly one side yields and is up at once
	mr_hs x, y;
	mr_hs_local lx = Local(0x1111), ly = Local(0x2222);
	mr_hs_connect(&x, &lx, 0, 7, 1);
	mr_hs_connect(&y, &ly, 0, 9, 2);
	mr_pkt rx = Next(x), ry = Next(y);
	mr_hs_req_action to_x = mr_hs_on_connect_req(&x, 0, 0, &ry);
	mr_hs_req_action to_y = mr_hs_on_connect_req(&y, 0, 0, &rx);
	EXPECT_EQ((to_x == MR_HS_ACT_ESTABLISHED) + (to_y == MR_HS_ACT_ESTABLISHED), 1);
	EXPECT_EQ((to_x == MR_HS_ACT_NONE) + (to_y == MR_HS_ACT_NONE), 1);

	// nothing left to keep of a closed connection
	mr_hs d;
	Establish(a, d);
	d.state = MR_HS_CLOSED;
	EXPECT_EQ(mr_hs_on_connect_req(&d, 0, 0, &req), MR_HS_ACT_REPLACE);
}

// [MR-CONN-12] the lower address asks, compared as 16 bytes (IPv4 v4-mapped).
TEST(Handshake, TheLowerAddressAsks_MR_CONN_12)
{
	const u8 v4_2[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 1, 2 };
	const u8 v4_21[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 1, 21 };
	const u8 v6[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	EXPECT_TRUE(mr_hs_we_ask(v4_2, v4_21));
	EXPECT_FALSE(mr_hs_we_ask(v4_21, v4_2));
	EXPECT_FALSE(mr_hs_we_ask(v4_2, v4_2)) << "nobody asks itself";
	EXPECT_TRUE(mr_hs_we_ask(v4_21, v6)) << "byte by byte from the first";
}

// [MR-CONN-2] which connection a new QP to the peer joins.
TEST(Handshake, NewStreamsJoinLiveOrEstablishedConnections_MR_CONN_2)
{
	mr_hs a, b;
	mr_hs idle{};
	Establish(a, b);
	EXPECT_TRUE(mr_hs_joinable(&idle, false, false)) << "a handshake our QPs wait for";
	EXPECT_FALSE(mr_hs_joinable(&idle, false, true))
		<< "one that never came up and lost its QPs: the peer may have restarted since";
	EXPECT_TRUE(mr_hs_joinable(&b, false, true)) << "retiring but established";
	EXPECT_FALSE(mr_hs_joinable(&b, true, false)) << "failed";
	b.state = MR_HS_CLOSED;
	EXPECT_FALSE(mr_hs_joinable(&b, false, false)) << "closed";
}

// [MR-CONN-9] a connection without streams waits MR_CONN_IDLE, then closes (established) or goes.
TEST(Handshake, IdleConnectionsCloseAfterTheIdleTime_MR_CONN_9)
{
	mr_hs a, b;
	mr_hs idle{};
	Establish(a, b);
	const u64 t0 = 1000;
	u64 wait = 1;
	EXPECT_EQ(mr_hs_idle(&b, true, false, t0, t0 + MR_CONN_IDLE_NS, &wait), MR_HS_IDLE_KEEP);
	EXPECT_EQ(wait, 0u);
	EXPECT_EQ(mr_hs_idle(&b, false, true, t0, t0, &wait), MR_HS_IDLE_DROP) << "failed: at once";
	EXPECT_EQ(mr_hs_idle(&b, false, false, t0, t0 + 3000, &wait), MR_HS_IDLE_WAIT);
	EXPECT_EQ(wait, MR_CONN_IDLE_NS - 3000);
	EXPECT_EQ(mr_hs_idle(&b, false, false, t0, t0 + MR_CONN_IDLE_NS, &wait), MR_HS_IDLE_CLOSE);
	EXPECT_EQ(mr_hs_idle(&idle, false, false, t0, t0 + MR_CONN_IDLE_NS, &wait),
		  MR_HS_IDLE_DROP) << "a handshake nobody waits for";
}

// [MR-SEC-5] a flood of duplicate requests gets one CONNECT_RESP per MR_CONNECT_RESP_GAP_NS.
TEST(Handshake, DuplicateRequestsAreAnsweredAtALimitedRate_MR_SEC_5)
{
	mr_hs a, b;
	Establish(a, b);
	mr_pkt out;
	int answers = 0;
	for (u64 t = 1; t <= 10 * MR_CONNECT_RESP_GAP_NS; t += MR_CONNECT_RESP_GAP_NS / 100) {
		mr_hs_on_duplicate_req(&b, t);
		answers += mr_hs_next_packet(&b, t, &out);
	}
	EXPECT_GE(answers, 9);
	EXPECT_LE(answers, 11);
}

// [MR-CONN-6] a connection cuts messages at the agreed pmtu rounded down to a multiple
// of 64 (MR_PMTU_ALIGN), at least 256: 1408, what a 1500-byte IPv4 frame carries, is
// kept whole (the rule of 256 made it 1280), 1400 becomes 1344.
TEST(Handshake, PmtuIsAMultipleOf64_MR_CONN_6)
{
	const std::pair<u32, u32> cases[] = {
		{ 1408, 1408 }, { 1400, 1344 }, { 1344, 1344 }, { 1280, 1280 },
		{ 4096, 4096 }, { 300, 256 }, { 200, 256 },
	};
	for (auto [agreed, want] : cases) {
		mr_conn_cfg cfg;
		mr_conn_cfg_defaults(&cfg);
		cfg.pmtu = agreed;
		cfg.local_conn_id = 1;
		cfg.peer_conn_id = 2;
		auto e = std::make_unique<mr_conn>();
		mr_conn_init(e.get(), &cfg);
		EXPECT_EQ(e->cfg.pmtu, want) << "agreed " << agreed;
	}

	// The packets of a 3000-byte Send on a 1408 connection: 1408, 1408 and 184.
	mr_conn_cfg cfg;
	mr_conn_cfg_defaults(&cfg);
	cfg.pmtu = 1408;
	cfg.local_conn_id = 1;
	cfg.peer_conn_id = 2;
	StreamPool pool;
	auto e = std::make_unique<mr_conn>();
	mr_conn_init(e.get(), &cfg);
	ASSERT_EQ(pool.open(e.get(), 10, 20), 0);
	ASSERT_EQ(mr_conn_post(e.get(), 0, MR_OP_SEND, 3000, 0, 0, 1), 0);
	std::vector<u32> lens;
	mr_tx_desc d;
	for (u64 now = 1000; lens.size() < 3 && now < 1000000; now += 10000)
		while (mr_conn_next_packet(e.get(), now, &d))
			lens.push_back(d.pkt.bth.payload_len);
	EXPECT_EQ(lens, (std::vector<u32>{ 1408, 1408, 184 }));
}

// [MR-CONN-6] what an endpoint offers: a frame's bytes after the IP header of the
// connection's family, UDP and 64 bytes of headers, in steps of 64. At 1500 that is
// 1408 over IPv4 (1500 - 20 - 8 - 64 = 1408) and 1344 over IPv6 (1500 - 40 - 8 - 64 =
// 1388, rounded down); never under 256 however small the frame, never over the cap.
TEST(Handshake, PmtuOfferFillsTheFrame_MR_CONN_6)
{
	struct Case {
		u32 mtu, iph, cap, want;
	};
	const Case cases[] = {
		{ 1500, 20, 4096, 1408 }, { 1500, 40, 4096, 1344 },
		{ 9000, 20, 4096, 4096 }, { 9000, 40, 16384, 8832 },
		{ 4200, 20, 4096, 4096 }, { 4180, 20, 4096, 4032 },
		{ 1280, 40, 4096, 1152 }, { 576, 20, 4096, 448 },
		{ 348, 20, 4096, 256 }, { 347, 20, 4096, 256 }, { 68, 20, 4096, 256 },
		{ 1500, 20, 1000, 960 }, { 1500, 20, 100, 256 },
	};
	for (const Case &c : cases) {
		u32 got = mr_pmtu_offer(c.mtu, c.iph, c.cap);
		EXPECT_EQ(got, c.want) << "mtu " << c.mtu << " ip header " << c.iph << " cap " << c.cap;
		EXPECT_EQ(got % MR_PMTU_ALIGN, 0u);
		if (c.mtu >= c.iph + 8 + MR_MAX_HDR_STACK + MR_MIN_PMTU) {
			EXPECT_LE(got + c.iph + 8 + MR_MAX_HDR_STACK, c.mtu) << "the frame overflows";
		}
	}
}

// [MR-CONN-13] a connection to our own address is its own peer: up at once with no
// CONNECT_REQ, one conn_id and PSN for both directions; its packets, fed back into it,
// reach the partner QP's stream (streams are addressed by QP number), and its ACKs
// complete the sender.
TEST(Handshake, LoopbackIsItsOwnPeer_MR_CONN_13)
{
	mr_hs_local l = Local(0x1111);
	mr_hs hs;
	ASSERT_EQ(mr_hs_loopback(&hs, &l, 7, 0x5eed), MR_HS_EV_ESTABLISHED);
	EXPECT_EQ(hs.state, MR_HS_ESTABLISHED);
	mr_pkt none;
	EXPECT_FALSE(mr_hs_next_packet(&hs, 0, &none)) << "no handshake packet";
	EXPECT_EQ(mr_hs_loopback(&hs, &l, 0, 1), MR_HS_EV_NONE) << "conn_id 0 is not allowed";

	ASSERT_EQ(mr_hs_loopback(&hs, &l, 7, 0x5eed), MR_HS_EV_ESTABLISHED);
	mr_conn_cfg cfg;
	mr_conn_cfg_defaults(&cfg);
	mr_hs_conn_cfg(&hs, &cfg);
	EXPECT_EQ(cfg.local_conn_id, 7u);
	EXPECT_EQ(cfg.peer_conn_id, 7u);
	EXPECT_EQ(cfg.tx_initial_psn, cfg.rx_initial_psn);
	EXPECT_EQ(cfg.n_paths, std::min<u32>(l.max_paths, MR_MAX_PATHS));
	EXPECT_EQ(cfg.pmtu, l.pmtu);

	StreamPool pool;
	auto e = std::make_unique<mr_conn>();
	mr_conn_init(e.get(), &cfg);
	ASSERT_EQ(pool.open(e.get(), 10, 20), 0);	// QP 10, connected to QP 20
	ASSERT_EQ(pool.open(e.get(), 20, 10), 1);	// QP 20, connected to QP 10
	ASSERT_EQ(mr_conn_post(e.get(), 0, MR_OP_SEND, 3000, 0, 0, 100), 0);
	ASSERT_EQ(mr_conn_post(e.get(), 1, MR_OP_SEND, 50, 0, 0, 200), 0);

	std::vector<u8> payload(4096, 0xab);
	std::map<std::pair<int, int>, mr_completion> got;	// (kind, slot)
	u32 placed[2] = {}, sent = 0;
	u64 now = 1000;
	mr_tx_desc d;
	mr_completion c;
	mr_pkt ack;
	mr_place pl;
	for (int round = 0; round < 8; round++, now += 10000) {
		while (mr_conn_next_packet(e.get(), now, &d)) {
			d.pkt.payload = payload.data();
			ASSERT_EQ(d.pkt.bth.conn_id, 7u) << "addressed to itself";
			ASSERT_EQ(mr_conn_receive(e.get(), now, &d.pkt, false, &pl),
				  MR_RX_RESULT_PLACE);
			ASSERT_LT(pl.stream_slot, 2u);
			placed[pl.stream_slot] += pl.len;
			sent++;
		}
		// The receive completions are taken as they come, as the glue does.
		while (mr_conn_poll_completion(e.get(), &c))
			got[{c.kind, c.stream_slot}] = c;
		while (mr_conn_next_ack(e.get(), now, &ack))
			mr_conn_receive(e.get(), now, &ack, false, &pl);
	}
	EXPECT_EQ(placed[1], 3000u) << "QP 10's Send went to QP 20's stream";
	EXPECT_EQ(placed[0], 50u) << "QP 20's Send went to QP 10's stream";
	EXPECT_GE(sent, 2u);
	ASSERT_EQ(got.size(), 4u);
	EXPECT_EQ((got[{MR_COMPL_SEND, 0}].cookie), 100u);
	EXPECT_EQ((got[{MR_COMPL_SEND, 1}].cookie), 200u);
	EXPECT_EQ((got[{MR_COMPL_RECV, 1}].len), 3000u);
	EXPECT_EQ((got[{MR_COMPL_RECV, 0}].len), 50u);
	EXPECT_TRUE(mr_conn_quiescent(e.get()));
	EXPECT_EQ(e->rx_duplicates, 0u);
}

} // namespace
