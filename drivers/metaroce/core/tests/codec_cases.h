/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Codec vectors shared by the GoogleTest and KUnit suites: bytes in, verdict and fields out. */
#ifndef MR_TESTS_CODEC_CASES_H
#define MR_TESTS_CODEC_CASES_H

#include "../codec.h"

#define MR_CODEC_CASE_MAX	160
#define MR_CODEC_HEX_LINES	4

#define MR_TS		0x01020304

struct mr_codec_case {
	const char *name;
	const char *clause;
	const char *hex[MR_CODEC_HEX_LINES];	/* packet bytes; spaces separate fields */
	enum mr_parse_result expect;
	u8 opcode;
	u32 psn;
	u32 stream;
	u32 msn;
	u32 offset;
	u16 payload_len;
	u64 key;	/* see mr_codec_case_key() */
	u64 key2;	/* see mr_codec_case_key2() */
};

/* Decode a case's hex into out; returns the byte count, or cap + 1 if it does not fit. */
static inline u32 mr_codec_case_bytes(const struct mr_codec_case *c, u8 *out, u32 cap)
{
	int nibbles = 0, line;
	const char *h;
	u32 n = 0;
	u8 v = 0;

	for (line = 0; line < MR_CODEC_HEX_LINES && c->hex[line]; line++) {
		for (h = c->hex[line]; *h; h++) {
			char ch = *h;

			if (ch == ' ')
				continue;
			v = (u8)(v << 4);
			if (ch >= '0' && ch <= '9')
				v |= (u8)(ch - '0');
			else if (ch >= 'a' && ch <= 'f')
				v |= (u8)(ch - 'a' + 10);
			if (++nibbles == 2) {
				if (n == cap)
					return cap + 1;
				out[n++] = v;
				nibbles = 0;
				v = 0;
			}
		}
	}
	return n;
}

/* The field each case checks beyond the BTH, chosen by opcode. */
static inline u64 mr_codec_case_key(const struct mr_pkt *pkt)
{
	switch (pkt->bth.opcode) {
	case MR_OP_SEND:
	case MR_OP_READ_RESP:
		return pkt->msgh.msg_len;
	case MR_OP_WRITE:
	case MR_OP_READ_REQ:
		return pkt->reth.va;
	case MR_OP_ATOMIC_CAS:
	case MR_OP_ATOMIC_FADD:
		return pkt->atomic.compare;
	case MR_OP_ATOMIC_RESP:
		return pkt->atomic_orig;
	case MR_OP_UD_SEND:
		return pkt->udh.qkey;
	case MR_OP_ACK:
		return pkt->ack.cum_psn;
	case MR_OP_NAK:
		return pkt->nak.code;
	case MR_OP_CONNECT_REQ:
	case MR_OP_CONNECT_RESP:
		return pkt->conn.incarnation;
	case MR_OP_CLOSE:
	case MR_OP_CLOSE_ACK:
		return pkt->close.reason;
	default:
		return 0;
	}
}

static inline u64 mr_codec_case_key2(const struct mr_pkt *pkt)
{
	if (pkt->bth.flags & MR_F_IMM)
		return pkt->imm;
	if (pkt->bth.flags & MR_F_INV)
		return pkt->inv_rkey;
	switch (pkt->bth.opcode) {
	case MR_OP_SEND:
		return pkt->msgh.rsn;
	case MR_OP_WRITE:
	case MR_OP_READ_REQ:
		return pkt->reth.rkey;
	case MR_OP_ATOMIC_CAS:
	case MR_OP_ATOMIC_FADD:
		return pkt->atomic.swap_add;
	case MR_OP_UD_SEND:
		return pkt->udh.src_qpn;
	case MR_OP_ACK:
		return ((u64)pkt->ack.sack[7] << 32) | pkt->ack.sack[0] |
		       ((u64)pkt->ack.msg_acks[1].msn_cum << 8);
	case MR_OP_NAK:
		return pkt->nak.info;
	case MR_OP_CONNECT_REQ:
	case MR_OP_CONNECT_RESP:
		return pkt->conn.initial_psn;
	default:
		return 0;
	}
}

#define MR_VA	0x00007f0000001000ULL

static const struct mr_codec_case mr_codec_cases[] = {
	/* Valid packets: one per opcode and flag combination. */
	{ "send middle packet is matched by stream, msn and offset", "MR-WIRE-6",
	  { "01 01 0000 a1b2c3d4 0003 0004 00000064 00000011 00000007 00001000 01020304",
	    "00002000 00000002 deadbeef" },
	  MR_PARSE_OK, MR_OP_SEND, 100, 0x11, 7, 4096, 4, 8192, 2 },
	{ "send last packet carries the immediate", "MR-WIRE-9",
	  { "01 01 0012 00000001 0000 0003 00000005 00000011 00000007 00001ffd 01020304",
	    "00002000 00000002 cafebabe 010203" },
	  MR_PARSE_OK, MR_OP_SEND, 5, 0x11, 7, 8189, 3, 8192, 0xcafebabe },
	{ "send last packet carries the invalidated rkey", "MR-WIRE-9",
	  { "01 01 002a 00000001 0000 0001 00000006 00000012 00000000 00000000 01020304",
	    "00000001 00000000 00abcdef 09" },
	  MR_PARSE_OK, MR_OP_SEND, 6, 0x12, 0, 0, 1, 1, 0x00abcdef },
	{ "zero-length send is one packet with LAST", "MR-WIRE-10",
	  { "01 01 0002 00000001 0000 0000 00000006 00000012 00000001 00000000 01020304",
	    "00000000 00000001" },
	  MR_PARSE_OK, MR_OP_SEND, 6, 0x12, 1, 0, 0, 0, 1 },
	{ "every write packet carries the RETH", "MR-WIRE-7",
	  { "01 02 0001 00000007 000f 0004 fffffff0 00ffffff 00000003 00000000 01020304",
	    "00007f00 00001000 00001234 00000010 01020304" },
	  MR_PARSE_OK, MR_OP_WRITE, 0xfffffff0, 0x00ffffff, 3, 0, 4, MR_VA, 0x1234 },
	{ "write last packet with immediate", "MR-WIRE-9",
	  { "01 02 0012 00000007 0001 0004 00000009 00000020 00000003 0000000c 01020304",
	    "00007f00 00001000 00001234 00000010 00000007 01020304" },
	  MR_PARSE_OK, MR_OP_WRITE, 9, 0x20, 3, 12, 4, MR_VA, 7 },
	{ "read request is one packet with a RETH", "MR-WIRE-7",
	  { "01 03 0002 00000007 0002 0000 0000000a 00000020 00000004 00000000 01020304",
	    "00007f00 00001000 00000099 00010000" },
	  MR_PARSE_OK, MR_OP_READ_REQ, 10, 0x20, 4, 0, 0, MR_VA, 0x99 },
	{ "read response carries msg_len", "MR-WIRE-7",
	  { "01 04 0002 00000007 0002 0004 0000000b 00000021 00000004 0000fffc 01020304",
	    "00010000 00000000 05060708" },
	  MR_PARSE_OK, MR_OP_READ_RESP, 11, 0x21, 4, 65532, 4, 65536, 0 },
	{ "atomic compare-and-swap", "MR-WIRE-8",
	  { "01 05 0002 00000007 0002 0000 0000000c 00000020 00000005 00000000 01020304",
	    "00007f00 00001000 00000099 00000000 00000000 00001111 00000000 00002222" },
	  MR_PARSE_OK, MR_OP_ATOMIC_CAS, 12, 0x20, 5, 0, 0, 0x2222, 0x1111 },
	{ "atomic fetch-and-add", "MR-WIRE-8",
	  { "01 06 0006 00000007 0002 0000 0000000d 00000020 00000006 00000000 01020304",
	    "00007f00 00001000 00000099 00000000 00000000 00000005 00000000 00000000" },
	  MR_PARSE_OK, MR_OP_ATOMIC_FADD, 13, 0x20, 6, 0, 0, 0, 5 },
	{ "atomic response returns the original value", "MR-WIRE-8",
	  { "01 07 0002 00000007 0002 0000 0000000e 00000021 00000005 00000000 01020304",
	    "feedface 00000001" },
	  MR_PARSE_OK, MR_OP_ATOMIC_RESP, 14, 0x21, 5, 0, 0, 0xfeedface00000001ULL, 0 },
	{ "UD send to GSI", "MR-VERBS-10",
	  { "01 08 0002 00000000 0000 0002 00000000 00000001 00000000 00000000 01020304",
	    "80010000 00000001 aabb" },
	  MR_PARSE_OK, MR_OP_UD_SEND, 0, 1, 0, 0, 2, MR_GSI_QKEY, 1 },
	{ "ACK SACK bit i reports cum_psn + 1 + i, LSB first", "MR-ACK-2",
	  { "01 10 0000 00000007 0005 0000 00000000 00000000 00000000 00000000 01020304",
	    "000003e8 00000055 1fa00001 00040200 05000000 00000000 00000000 00000000 00000000",
	    "00000000 00000000 00000080 00000011 00000008 00000012 00000003" },
	  MR_PARSE_OK, MR_OP_ACK, 0, 0, 0, 0, 0, 1000, 0x8000000000000305ULL },
	{ "NAK RNR carries the delay", "MR-NAK-4",
	  { "01 11 0000 00000007 0000 0000 00000000 00000020 00000009 00000000 01020304",
	    "01000000 000001f4" }, MR_PARSE_OK, MR_OP_NAK, 0, 0x20, 9, 0, 0, MR_NAK_RNR, 500 },
	{ "probe is sequenced and has no payload", "MR-PATH-8",
	  { "01 12 0001 00000007 0004 0000 0000004d 00000000 00000000 00000000 01020304" },
	  MR_PARSE_OK, MR_OP_PROBE, 77, 0, 0, 0, 0, 0, 0 },
	{ "connect request announces incarnation and initial PSN", "MR-CONN-7",
	  { "01 20 0000 00000000 0000 0000 00000000 00000000 00000000 00000000 01020304",
	    "01010800 01020304 11223344 55667788 10000000 000186a0 00000000 00000000 abcd0000",
	    "00000000" },
	  MR_PARSE_OK, MR_OP_CONNECT_REQ, 0, 0, 0, 0, 0, 0x1122334455667788ULL, 0xabcd0000 },
	{ "close carries a reason", "MR-CONN-9",
	  { "01 22 0000 00000007 0000 0000 00000000 00000000 00000000 00000000 01020304",
	    "00000001 00000000" },
	  MR_PARSE_OK, MR_OP_CLOSE, 0, 0, 0, 0, 0, 1, 0 },

	/* Rejections, in the order of the checks. */
	{ "empty buffer is truncated", "MR-WIRE-12", { "" }, MR_PARSE_TRUNCATED },
	{ "31 bytes is truncated", "MR-WIRE-12",
	  { "01 12 0000 00000007 0000 0000 00000001 00000000 00000000 00000000 010203" },
	  MR_PARSE_TRUNCATED },
	{ "version 2 is dropped", "MR-WIRE-1",
	  { "02 12 0000 00000007 0000 0000 00000001 00000000 00000000 00000000 01020304" },
	  MR_PARSE_BAD_VERSION },
	{ "unknown opcode is dropped", "MR-WIRE-2",
	  { "01 09 0000 00000007 0000 0000 00000001 00000000 00000000 00000000 01020304" },
	  MR_PARSE_BAD_OPCODE },
	{ "reserved flag bit is dropped", "MR-WIRE-4",
	  { "01 01 0082 00000007 0000 0000 00000001 00000001 00000000 00000000 01020304",
	    "00000000 00000000" }, MR_PARSE_BAD_FLAGS },
	{ "message probe without LAST is dropped", "MR-WIRE-4",
	  { "01 01 0040 00000007 0000 0000 00000001 00000001 00000000 00000000 01020304",
	    "00000008 00000000" }, MR_PARSE_BAD_FLAGS },
	{ "message probe on a read response is dropped", "MR-WIRE-4",
	  { "01 04 0042 00000007 0000 0000 00000001 00000001 00000000 00000000 01020304",
	    "00000000 00000000" }, MR_PARSE_BAD_FLAGS },
	{ "immediate without LAST is dropped", "MR-WIRE-4",
	  { "01 01 0010 00000007 0000 0000 00000001 00000001 00000000 00000000 01020304",
	    "00000008 00000000 00000000" }, MR_PARSE_BAD_FLAGS },
	{ "invalidate on a write is dropped", "MR-WIRE-4",
	  { "01 02 0022 00000007 0000 0000 00000001 00000001 00000000 00000000 01020304",
	    "00007f00 00001000 00000000 00000000 00000000" }, MR_PARSE_BAD_FLAGS },
	{ "immediate and invalidate together are dropped", "MR-WIRE-4",
	  { "01 01 0032 00000007 0000 0000 00000001 00000001 00000000 00000000 01020304",
	    "00000000 00000000 00000000 00000000" }, MR_PARSE_BAD_FLAGS },
	{ "ACK with flags is dropped", "MR-WIRE-4",
	  { "01 10 0001 00000007 0000 0000 00000000 00000000 00000000 00000000 01020304",
	    "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000",
	    "00000000 00000000 00000000" }, MR_PARSE_BAD_FLAGS },
	{ "path id 16 is dropped", "MR-WIRE-5",
	  { "01 12 0000 00000007 0010 0000 00000001 00000000 00000000 00000000 01020304" },
	  MR_PARSE_BAD_PATH },
	{ "stream with top bits set is dropped", "MR-WIRE-5",
	  { "01 12 0000 00000007 0000 0000 00000001 01000011 00000000 00000000 01020304" },
	  MR_PARSE_BAD_STREAM },
	{ "unsequenced packet with a PSN is dropped", "MR-WIRE-3",
	  { "01 10 0000 00000007 0000 0000 00000005 00000000 00000000 00000000 01020304",
	    "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000",
	    "00000000 00000000 00000000" }, MR_PARSE_BAD_PSN },
	{ "ACK with 17 message acks is dropped", "MR-WIRE-12",
	  { "01 10 0000 00000007 0000 0000 00000000 00000000 00000000 00000000 01020304",
	    "00000000 00000000 00000000 00001100 00000000 00000000 00000000 00000000 00000000",
	    "00000000 00000000 00000000" }, MR_PARSE_BAD_ACK_COUNT },
	{ "ACK whose message acks do not fit is truncated", "MR-WIRE-12",
	  { "01 10 0000 00000007 0000 0000 00000000 00000000 00000000 00000000 01020304",
	    "00000000 00000000 00000000 00000200 00000000 00000000 00000000 00000000 00000000",
	    "00000000 00000000 00000000 00000000 00000000" }, MR_PARSE_TRUNCATED },
	{ "write shorter than its RETH is truncated", "MR-WIRE-12",
	  { "01 02 0000 00000007 0000 0000 00000001 00000001 00000000 00000000 01020304",
	    "00000000 00000000" }, MR_PARSE_TRUNCATED },
	{ "payload_len longer than the packet is dropped", "MR-WIRE-12",
	  { "01 01 0000 00000007 0000 0008 00000001 00000001 00000000 00000000 01020304",
	    "00000040 00000000 01020304" }, MR_PARSE_BAD_LENGTH },
	{ "trailing byte after the payload is dropped", "MR-WIRE-12",
	  { "01 01 0000 00000007 0000 0004 00000001 00000001 00000000 00000000 01020304",
	    "00000040 00000000 01020304 05" }, MR_PARSE_BAD_LENGTH },
	{ "read request with payload is dropped", "MR-WIRE-12",
	  { "01 03 0002 00000007 0000 0002 00000001 00000001 00000000 00000000 01020304",
	    "00007f00 00001000 00000000 00000002 0102" }, MR_PARSE_BAD_PAYLOAD },
	{ "send message longer than 2^31 is dropped", "MR-WIRE-12",
	  { "01 01 0000 00000007 0000 0001 00000001 00000001 00000000 00000000 01020304",
	    "80000001 00000000 01" }, MR_PARSE_BAD_MSG_LEN },
	{ "write length longer than 2^31 is dropped", "MR-WIRE-12",
	  { "01 02 0000 00000007 0000 0001 00000001 00000001 00000000 00000000 01020304",
	    "00007f00 00001000 00000000 90000000 01" }, MR_PARSE_BAD_MSG_LEN },
	{ "atomic at a nonzero offset is dropped", "MR-WIRE-8",
	  { "01 06 0002 00000007 0000 0000 00000001 00000001 00000000 00000008 01020304",
	    "00007f00 00001000 00000000 00000000 00000000 00000000 00000000 00000000" },
	  MR_PARSE_BAD_OFFSET },
	{ "payload past the message end is dropped", "MR-WIRE-12",
	  { "01 01 0002 00000007 0000 0004 00000001 00000001 00000000 00001ffe 01020304",
	    "00002000 00000000 01020304" }, MR_PARSE_BAD_RANGE },
	{ "offset plus length is summed without wrapping", "MR-WIRE-12",
	  { "01 01 0002 00000007 0000 0004 00000001 00000001 00000000 fffffffe 01020304",
	    "80000000 00000000 01020304" }, MR_PARSE_BAD_RANGE },
	{ "packet that ends the message must have LAST", "MR-WIRE-11",
	  { "01 01 0000 00000007 0000 0004 00000001 00000001 00000000 00000004 01020304",
	    "00000008 00000000 01020304" }, MR_PARSE_BAD_LAST },
	{ "LAST before the message end is dropped", "MR-WIRE-11",
	  { "01 02 0002 00000007 0000 0004 00000001 00000001 00000000 00000000 01020304",
	    "00007f00 00001000 00000000 00000008 01020304" }, MR_PARSE_BAD_LAST },
	{ "read request without LAST is dropped", "MR-WIRE-11",
	  { "01 03 0000 00000007 0000 0000 00000001 00000001 00000000 00000000 01020304",
	    "00007f00 00001000 00000000 00000008" }, MR_PARSE_BAD_LAST },
};

#define MR_CODEC_NR_CASES (sizeof(mr_codec_cases) / sizeof(*mr_codec_cases))

#endif /* MR_TESTS_CODEC_CASES_H */
