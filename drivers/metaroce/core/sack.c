// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Per-path receive SACK state: cum_psn plus a bitvector of the 256 PSNs after it. */
#include "sack.h"

void mr_bits_shift_down_wide(u32 *bits, u32 n)
{
	u32 words = n / 32, shift = n % 32, top, i;

	/* Only the words up to the last that holds a bit change: usually one, or none. */
	for (top = MR_SACK_WORDS; top && !bits[top - 1]; top--)
		;
	if (n >= MR_SACK_BITS || top <= words) {
		memset(bits, 0, top * sizeof(u32));
		return;
	}
	for (i = 0; i + words < top; i++) {
		u32 lo = bits[i + words];
		u32 hi = i + words + 1 < top ? bits[i + words + 1] : 0;

		bits[i] = shift ? (lo >> shift) | (hi << (32 - shift)) : lo;
	}
	for (; i < top; i++)
		bits[i] = 0;
}

u32 mr_bits_trailing_ones_wide(const u32 *bits)
{
	u32 n = 0, i, w;

	for (i = 0; i < MR_SACK_WORDS; i++) {
		w = bits[i];
		if (w == 0xffffffffU) {
			n += 32;
			continue;
		}
		return n + (u32)__builtin_ctz(~w);
	}
	return n;
}

u32 mr_bits_first_set(const u32 *bits)
{
	u32 i;

	for (i = 0; i < MR_SACK_WORDS; i++)
		if (bits[i])
			return i * 32 + (u32)__builtin_ctz(bits[i]);
	return MR_SACK_BITS;
}

void mr_sack_rx_init(struct mr_sack_rx *s, u32 initial_psn)
{
	memset(s, 0, sizeof(*s));
	s->cum_psn = initial_psn;
}

/*
 * [MR-ACK-3] earlier or already-set PSNs are duplicates; PSNs up to MR_PSN_JUMP_MAX ahead
 * are new (those beyond cum_psn + 256 slide the window, see mr_sack_rx_record()).
 */
enum mr_sack_verdict mr_sack_rx_classify(const struct mr_sack_rx *s, u32 psn)
{
	u32 dist = psn - s->cum_psn;

	if (dist == 0)
		return MR_SACK_IN_ORDER;
	if (mr_seq_before(psn, s->cum_psn))
		return MR_SACK_DUPLICATE;
	if (dist >= MR_PSN_JUMP_MAX)
		return MR_SACK_BEYOND_WINDOW;
	if (dist > MR_SACK_BITS)
		return MR_SACK_OUT_OF_ORDER;
	return mr_bits_test(s->bits, dist - 1) ? MR_SACK_DUPLICATE : MR_SACK_OUT_OF_ORDER;
}

/* Advance cum_psn over the received run that starts at it. */
static void mr_sack_rx_pull(struct mr_sack_rx *s)
{
	u32 run = mr_bits_trailing_ones(s->bits);

	s->cum_psn += 1 + run;
	mr_bits_shift_down(s->bits, 1 + run);
}

/*
 * [MR-SACK-5] The sender never has a PSN outstanding 256 or more before one it sends, so
 * a packet at psn proves every PSN before psn - 256 retired: abandon them.
 */
static void mr_sack_rx_slide(struct mr_sack_rx *s, u32 psn)
{
	u32 shift = psn - s->cum_psn - MR_SACK_BITS;
	bool new_cum_received = mr_bits_test(s->bits, shift - 1);

	mr_bits_shift_down(s->bits, shift);
	s->cum_psn += shift;
	if (new_cum_received)
		mr_sack_rx_pull(s);
}

/* [MR-SACK-4] keep cum_psn the lowest missing PSN and bit i the state of cum_psn + 1 + i. */
enum mr_sack_verdict mr_sack_rx_record(struct mr_sack_rx *s, u32 psn)
{
	enum mr_sack_verdict v = mr_sack_rx_classify(s, psn);

	switch (v) {
	case MR_SACK_IN_ORDER:
		mr_sack_rx_pull(s);
		break;
	case MR_SACK_OUT_OF_ORDER:
		if (psn - s->cum_psn > MR_SACK_BITS)
			mr_sack_rx_slide(s, psn);
#ifdef METAROCE_MUTATION_SACK_OFF_BY_ONE
		/* Test-only mutation (make conformance-mutations): bit i reports cum_psn + i. */
		mr_bits_set(s->bits, psn - s->cum_psn);
#else
		mr_bits_set(s->bits, psn - s->cum_psn - 1);
#endif
		break;
	default:
		break;
	}
	return v;
}

bool mr_sack_ack_covers(const struct mr_ackh *ack, u32 psn)
{
	u32 dist;

	if (mr_seq_before(psn, ack->cum_psn))
		return true;
	dist = psn - ack->cum_psn;
	return dist >= 1 && dist <= MR_SACK_BITS && mr_bits_test(ack->sack, dist - 1);
}
