// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* KUnit suite for the MetaRoCE protocol engine, driven by the tables shared with GoogleTest. */
#include <kunit/test.h>
#include <linux/module.h>

#include "core/cc.h"
#include "core/codec.h"
#include "core/conn.h"
#include "core/handshake.h"
#include "core/sack.h"
#include "core/tests/codec_cases.h"
#include "core/tests/hs_cases.h"
#include "core/tests/nak_cases.h"
#include "core/tests/sack_cases.h"

/* [MR-WIRE-12] every shared vector parses to its verdict and fields. */
static void mr_codec_vectors_parse_as_expected(struct kunit *test)
{
	u8 buf[MR_CODEC_CASE_MAX];
	struct mr_pkt pkt;
	size_t i;

	for (i = 0; i < MR_CODEC_NR_CASES; i++) {
		const struct mr_codec_case *c = &mr_codec_cases[i];
		u32 len = mr_codec_case_bytes(c, buf, sizeof(buf));
		enum mr_parse_result res;

		KUNIT_ASSERT_LE(test, len, (u32)sizeof(buf));
		res = mr_pkt_parse(buf, len, &pkt);

		KUNIT_EXPECT_EQ_MSG(test, (int)res, (int)c->expect, "%s [%s]", c->name, c->clause);
		if (res != MR_PARSE_OK || c->expect != MR_PARSE_OK)
			continue;
		KUNIT_EXPECT_EQ_MSG(test, pkt.bth.opcode, c->opcode, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, pkt.bth.psn, c->psn, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, pkt.bth.stream, c->stream, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, pkt.bth.msn, c->msn, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, pkt.bth.offset, c->offset, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, pkt.bth.payload_len, c->payload_len, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, mr_codec_case_key(&pkt), c->key, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, mr_codec_case_key2(&pkt), c->key2, "%s", c->name);
	}
}

/* [MR-GEN-2] building a parsed valid vector reproduces its bytes. */
static void mr_codec_vectors_round_trip(struct kunit *test)
{
	u8 out[MR_CODEC_CASE_MAX];
	u8 buf[MR_CODEC_CASE_MAX];
	struct mr_pkt pkt;
	size_t i;
	u32 len;

	for (i = 0; i < MR_CODEC_NR_CASES; i++) {
		const struct mr_codec_case *c = &mr_codec_cases[i];

		if (c->expect != MR_PARSE_OK)
			continue;
		len = mr_codec_case_bytes(c, buf, sizeof(buf));
		KUNIT_ASSERT_LE(test, len, (u32)sizeof(buf));
		KUNIT_ASSERT_EQ(test, (int)mr_pkt_parse(buf, len, &pkt), (int)MR_PARSE_OK);
		KUNIT_EXPECT_EQ_MSG(test, mr_pkt_build(&pkt, out, sizeof(out)), len, "%s", c->name);
		KUNIT_EXPECT_MEMEQ_MSG(test, out, buf, len, "%s", c->name);
	}
}

/* [MR-GEN-5] every strict prefix of a valid vector is rejected. */
static void mr_codec_truncations_rejected(struct kunit *test)
{
	u8 buf[MR_CODEC_CASE_MAX];
	struct mr_pkt pkt;
	u32 len, full;
	size_t i;

	for (i = 0; i < MR_CODEC_NR_CASES; i++) {
		const struct mr_codec_case *c = &mr_codec_cases[i];

		if (c->expect != MR_PARSE_OK)
			continue;
		full = mr_codec_case_bytes(c, buf, sizeof(buf));
		KUNIT_ASSERT_LE(test, full, (u32)sizeof(buf));
		for (len = 0; len < full; len++)
			KUNIT_EXPECT_NE_MSG(test, (int)mr_pkt_parse(buf, len, &pkt),
					    (int)MR_PARSE_OK, "%s prefix %u", c->name, len);
	}
}

/* [MR-SACK-4] [MR-SACK-5] the shared arrival patterns. */
static void mr_sack_patterns_as_expected(struct kunit *test)
{
	enum mr_sack_verdict v;
	struct mr_sack_rx s;
	size_t i;
	u32 k;

	for (i = 0; i < MR_SACK_NR_CASES; i++) {
		const struct mr_sack_case *c = &mr_sack_cases[i];

		mr_sack_rx_init(&s, c->initial_psn);
		v = MR_SACK_IN_ORDER;
		for (k = 0; k < c->n; k++)
			v = mr_sack_rx_record(&s, c->psns[k]);
		KUNIT_EXPECT_EQ_MSG(test, s.cum_psn, c->expect_cum, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, s.bits[0], c->expect_word0, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, s.bits[7], c->expect_word7, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, (int)v, (int)c->expect_last, "%s", c->name);
	}
}

/* [MR-CC-10] hints round down and never exceed the encoded rate. */
static void mr_rate_hint_rounds_down(struct kunit *test)
{
	u32 r;

	KUNIT_EXPECT_EQ(test, mr_rate_hint_decode(0), 0U);
	KUNIT_EXPECT_EQ(test, mr_rate_hint_encode(4095), (u16)4095);
	for (r = 1; r < 50000000; r = r * 3 + 1)
		KUNIT_EXPECT_LE(test, mr_rate_hint_decode(mr_rate_hint_encode(r)), r);
}

/* [MR-CONN-4] [MR-CONN-6] the shared agreement cases. */
static void mr_hs_agreement_as_expected(struct kunit *test)
{
	enum mr_hs_event ev;
	struct mr_hs a, b;
	struct mr_pkt pkt;
	size_t i;

	for (i = 0; i < MR_HS_NR_CASES; i++) {
		const struct mr_hs_case *c = &mr_hs_cases[i];

		ev = mr_hs_case_run(c, &a, &b, &pkt);
		KUNIT_EXPECT_EQ_MSG(test, (int)ev,
				    (int)(c->accept ? MR_HS_EV_ESTABLISHED : MR_HS_EV_FAILED),
				    "%s [%s]", c->name, c->clause);
		if (!c->accept)
			continue;
		KUNIT_EXPECT_EQ_MSG(test, b.ver, c->ver, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, b.n_paths, c->n_paths, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, b.pmtu, c->pmtu, "%s", c->name);
		KUNIT_ASSERT_TRUE(test, mr_hs_next_packet(&b, 0, &pkt));
		KUNIT_EXPECT_EQ_MSG(test, (int)mr_hs_on_packet(&a, 1, &pkt),
				    (int)MR_HS_EV_ESTABLISHED, "%s", c->name);
		KUNIT_EXPECT_EQ_MSG(test, a.pmtu, c->pmtu, "%s", c->name);
	}
}

/* [MR-NAK-2] [MR-NAK-4] each NAK code completes the WQE with its status. */
static void mr_nak_codes_map_to_status(struct kunit *test)
{
	size_t i;

	for (i = 0; i < MR_NAK_NR_CASES; i++)
		KUNIT_EXPECT_EQ_MSG(test, mr_nak_status(mr_nak_cases[i].code),
				    mr_nak_cases[i].status, "%s [%s]", mr_nak_cases[i].name,
				    mr_nak_cases[i].clause);
}

/*
 * [MR-VERBS-11] a closed stream's late packet is dropped and its slot reused; the closed
 * stream answers a message it completed with its MSGACK, any other with a NAK;
 * [MR-WIRE-9] [MR-VERBS-12] a Write with immediate carries IMMH in its LAST packet and
 * completes as the next receive WQE, a plain Write completes nothing.
 */
/* A stream's memory, freed with the test. */
static struct mr_stream *mr_test_stream(struct kunit *test)
{
	return kunit_kzalloc(test, sizeof(struct mr_stream), GFP_KERNEL);
}

static void mr_close_and_write_imm(struct kunit *test)
{
	struct mr_conn *a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	struct mr_conn *b = kunit_kzalloc(test, sizeof(*b), GFP_KERNEL);
	struct mr_wr wr = { .opcode = MR_OP_WRITE, .flags = MR_WR_IMM, .len = 8, .imm = 42 };
	struct mr_tx_desc d, imm_pkt;
	struct mr_completion cm;
	struct mr_conn_cfg cfg;
	struct mr_place pl;
	static u8 payload[64];
	struct mr_pkt ack;
	int nak, msgack;
	u32 dropped, i;

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	mr_conn_cfg_defaults(&cfg);
	cfg.n_paths = 1;
	cfg.local_conn_id = 1;
	cfg.peer_conn_id = 2;
	mr_conn_init(a, &cfg);
	cfg.local_conn_id = 2;
	cfg.peer_conn_id = 1;
	mr_conn_init(b, &cfg);
	KUNIT_ASSERT_EQ(test, mr_conn_open_stream(a, 10, 20, mr_test_stream(test)), 0);
	KUNIT_ASSERT_EQ(test, mr_conn_open_stream(b, 20, 10, mr_test_stream(test)), 0);

	KUNIT_ASSERT_EQ(test, mr_conn_post(a, 0, MR_OP_WRITE, 8, 0, 0, 1), 0);
	KUNIT_ASSERT_EQ(test, mr_conn_post_wr(a, 0, &wr), 0);
	KUNIT_ASSERT_TRUE(test, mr_conn_next_packet(a, 0, &d));
	d.pkt.payload = payload;
	KUNIT_EXPECT_EQ(test, (int)mr_conn_receive(b, 0, &d.pkt, false, &pl),
			(int)MR_RX_RESULT_PLACE);
	KUNIT_EXPECT_FALSE(test, mr_conn_poll_completion(b, &cm));
	KUNIT_ASSERT_TRUE(test, mr_conn_next_packet(a, 0, &d));
	KUNIT_EXPECT_TRUE(test, d.pkt.bth.flags & MR_F_IMM);
	KUNIT_EXPECT_EQ(test, d.pkt.imm, 42u);
	d.pkt.payload = payload;
	imm_pkt = d;
	mr_conn_receive(b, 0, &d.pkt, false, &pl);
	KUNIT_ASSERT_TRUE(test, mr_conn_poll_completion(b, &cm));
	KUNIT_EXPECT_EQ(test, cm.kind, (u8)MR_COMPL_RECV);
	KUNIT_EXPECT_EQ(test, cm.opcode, (u8)MR_OP_WRITE);
	KUNIT_EXPECT_EQ(test, cm.msn, 1u);
	KUNIT_EXPECT_EQ(test, cm.rsn, 0u);
	KUNIT_EXPECT_EQ(test, cm.imm, 42u);
	KUNIT_EXPECT_EQ(test, cm.flags, (u16)MR_COMPL_F_IMM);

	KUNIT_ASSERT_EQ(test, mr_conn_post(a, 0, MR_OP_SEND, 8, 0, 0, 3), 0);
	KUNIT_ASSERT_TRUE(test, mr_conn_next_packet(a, 0, &d));
	d.pkt.payload = payload;
	KUNIT_EXPECT_NOT_NULL(test, mr_conn_close_stream(b, 0));
	dropped = b->rx_dropped;
	KUNIT_EXPECT_EQ(test, (int)mr_conn_receive(b, 0, &d.pkt, false, &pl),
			(int)MR_RX_RESULT_DROP);
	KUNIT_EXPECT_EQ(test, b->rx_dropped, dropped + 1);
	KUNIT_EXPECT_FALSE(test, mr_conn_poll_completion(b, &cm));
	/* the closed stream completed msn 0 and 1: msn 2 never will, and is refused */
	nak = 0;
	while (mr_conn_next_ack(b, 0, &ack))
		if (ack.bth.opcode == MR_OP_NAK && ack.bth.stream == 20 && ack.bth.msn == 2 &&
		    ack.nak.code == MR_NAK_INVALID_REQUEST)
			nak++;
	KUNIT_EXPECT_EQ(test, nak, 1);
	/* msn 1 again (its MSGACK was lost): answered with the closed stream's MSGACK */
	imm_pkt.pkt.payload = payload;
	imm_pkt.pkt.bth.flags |= MR_F_ACK_REQ;
	KUNIT_EXPECT_EQ(test, (int)mr_conn_receive(b, 0, &imm_pkt.pkt, false, &pl),
			(int)MR_RX_RESULT_DROP);
	msgack = 0;
	while (mr_conn_next_ack(b, 0, &ack))
		for (i = 0; ack.bth.opcode == MR_OP_ACK && i < ack.ack.n_msg_acks; i++)
			if (ack.ack.msg_acks[i].stream == 20 && ack.ack.msg_acks[i].msn_cum == 2)
				msgack++;
	KUNIT_EXPECT_EQ(test, msgack, 1);
	KUNIT_EXPECT_EQ(test, mr_conn_open_stream(b, 21, 11, mr_test_stream(test)), 0);
}

static struct kunit_case mr_core_test_cases[] = {
	KUNIT_CASE(mr_codec_vectors_parse_as_expected),
	KUNIT_CASE(mr_codec_vectors_round_trip),
	KUNIT_CASE(mr_codec_truncations_rejected),
	KUNIT_CASE(mr_sack_patterns_as_expected),
	KUNIT_CASE(mr_rate_hint_rounds_down),
	KUNIT_CASE(mr_hs_agreement_as_expected),
	KUNIT_CASE(mr_nak_codes_map_to_status),
	KUNIT_CASE(mr_close_and_write_imm),
	{}
};

static struct kunit_suite mr_core_test_suite = {
	.name = "metaroce_core",
	.test_cases = mr_core_test_cases,
};

kunit_test_suite(mr_core_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests of the MetaRoCE protocol engine");
