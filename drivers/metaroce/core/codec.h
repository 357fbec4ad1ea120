/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Parse and build MetaRoCE packets with explicit bounds checks. */
#ifndef MR_CODEC_H
#define MR_CODEC_H

#include "wire.h"

/* Why a packet was rejected; the order of checks is that of [MR-WIRE-12]. */
enum mr_parse_result {
	MR_PARSE_OK = 0,
	MR_PARSE_TRUNCATED,
	MR_PARSE_BAD_VERSION,
	MR_PARSE_BAD_OPCODE,
	MR_PARSE_BAD_FLAGS,
	MR_PARSE_BAD_PATH,
	MR_PARSE_BAD_STREAM,
	MR_PARSE_BAD_PSN,
	MR_PARSE_BAD_ACK_COUNT,
	MR_PARSE_BAD_LENGTH,
	MR_PARSE_BAD_PAYLOAD,
	MR_PARSE_BAD_MSG_LEN,
	MR_PARSE_BAD_OFFSET,
	MR_PARSE_BAD_RANGE,
	MR_PARSE_BAD_LAST,
	MR_PARSE_NR_RESULTS
};

bool mr_opcode_known(u8 opcode);
bool mr_opcode_sequenced(u8 opcode);
bool mr_opcode_has_payload(u8 opcode);
u16 mr_opcode_allowed_flags(u8 opcode);

/* Header bytes for this opcode, flags and ACK count; 0 for an unknown opcode. */
u32 mr_pkt_header_len(u8 opcode, u16 flags, u8 n_msg_acks);

/* Message length of a packet that passed parsing (payload_len for one-packet opcodes). */
u32 mr_pkt_msg_len(const struct mr_pkt *pkt);

enum mr_parse_result mr_pkt_parse(const u8 *buf, u32 len, struct mr_pkt *pkt);

/* The bytes that say how long a packet's headers are: the BTH and an ACK's MSGACK count. */
#define MR_PEEK_LEN		(MR_BTH_LEN + 16)

/*
 * How many leading bytes of a packet mr_pkt_parse() may read, from its first have
 * bytes: MR_PEEK_LEN until have reaches it, then the length of the headers the BTH
 * names (at least MR_PEEK_LEN, at most MR_MAX_HDR_LEN).  A receiver that holds a
 * packet in pieces needs that many bytes in one piece to parse it; the payload may
 * lie elsewhere (the parser only points at it).
 */
u32 mr_pkt_header_need(const u8 *buf, u32 have);

/*
 * Whether a packet's payload may stay where it arrived, from its first have bytes:
 * a Write's, a Send's or a Read response's, which the engine never reads but hands
 * to the caller's placement (struct mr_place).  False for every other opcode, whose
 * payload the engine or the caller reads whole, and before MR_PEEK_LEN bytes.
 */
bool mr_pkt_payload_placed(const u8 *buf, u32 have);

/*
 * Encode pkt (and payload_len bytes at pkt->payload, if any, else zeros) into buf.
 * Returns the packet length, or 0 if the opcode is unknown or cap is too small. The
 * encoder does no semantic validation so that tests can build malformed packets with it.
 */
u32 mr_pkt_build(const struct mr_pkt *pkt, u8 *buf, u32 cap);
/*
 * The headers alone: the payload_len bytes after them are the caller's to fill (the
 * kernel copies them straight from memory). Returns the packet length, or 0.
 */
u32 mr_pkt_build_header(const struct mr_pkt *pkt, u8 *buf, u32 cap);

const char *mr_parse_result_name(enum mr_parse_result res);

#endif /* MR_CODEC_H */
