/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* 256-bit selective acknowledgment: the receiver's per-path state and bit helpers. */
#ifndef MR_SACK_H
#define MR_SACK_H

#include "wire.h"

#define MR_PSN_JUMP_MAX		MR_PATH_PSN_STRIDE

enum mr_sack_verdict {
	MR_SACK_IN_ORDER,	/* new, psn == cum_psn */
	MR_SACK_OUT_OF_ORDER,	/* new, leaves a gap */
	MR_SACK_DUPLICATE,	/* already received */
	MR_SACK_BEYOND_WINDOW,	/* MR_PSN_JUMP_MAX or more ahead: drop without acknowledging */
};

/* What a receiver keeps for one of the peer's paths, [MR-PATH-9]. */
struct mr_sack_rx {
	u32 cum_psn;
	u32 bits[MR_SACK_WORDS];
	u32 ts_echo;
	u16 ce_count;
	u16 pkt_count;
	u16 unacked;
	bool ack_now;
	u16 entropy;		/* source port of the newest packet, for its ACKs, [MR-ACK-8] */
	u64 ack_deadline_ns;	/* 0: no delayed ACK armed */
};

void mr_sack_rx_init(struct mr_sack_rx *s, u32 initial_psn);
enum mr_sack_verdict mr_sack_rx_classify(const struct mr_sack_rx *s, u32 psn);
enum mr_sack_verdict mr_sack_rx_record(struct mr_sack_rx *s, u32 psn);

static inline bool mr_bits_test(const u32 *bits, u32 i)
{
	return i < MR_SACK_BITS && (bits[i / 32] >> (i % 32)) & 1;
}

static inline void mr_bits_set(u32 *bits, u32 i)
{
	if (i < MR_SACK_BITS)
		bits[i / 32] |= 1U << (i % 32);
}

static inline void mr_bits_clear(u32 *bits, u32 i)
{
	if (i < MR_SACK_BITS)
		bits[i / 32] &= ~(1U << (i % 32));
}

/* Drop the n lowest bits, moving the rest toward bit 0. */
void mr_bits_shift_down_wide(u32 *bits, u32 n);
u32 mr_bits_trailing_ones_wide(const u32 *bits);

/*
 * Shift a 256-bit vector down by n bits (bit n becomes bit 0).  Per packet a receiver
 * shifts its path's vector and its message's, which in order hold bits in word 0 at
 * most: that case stays inline.
 */
static inline void mr_bits_shift_down(u32 *bits, u32 n)
{
	u32 rest = 0, i;

	if (!n)
		return;
	for (i = 1; i < MR_SACK_WORDS; i++)
		rest |= bits[i];
	if (rest) {
		mr_bits_shift_down_wide(bits, n);
		return;
	}
	bits[0] = n < 32 ? bits[0] >> n : 0;
}

/* The run of set bits from bit 0: usually shorter than a word. */
static inline u32 mr_bits_trailing_ones(const u32 *bits)
{
	if (bits[0] != 0xffffffffU)
		return (u32)__builtin_ctz(~bits[0]);
	return mr_bits_trailing_ones_wide(bits);
}

/* Index of the lowest set bit, or MR_SACK_BITS if none. */
u32 mr_bits_first_set(const u32 *bits);

/* Sender side: does this ACK report psn as received? [MR-ACK-2] */
bool mr_sack_ack_covers(const struct mr_ackh *ack, u32 psn);

#endif /* MR_SACK_H */
