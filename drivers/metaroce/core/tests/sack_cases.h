/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* SACK arrival patterns shared by GoogleTest and KUnit: PSNs in, cum_psn and bitvector out. */
#ifndef MR_TESTS_SACK_CASES_H
#define MR_TESTS_SACK_CASES_H

#include "../sack.h"

#define MR_SACK_CASE_MAX_PSNS	40

struct mr_sack_case {
	const char *name;
	const char *clause;
	u32 initial_psn;
	u32 n;
	u32 psns[MR_SACK_CASE_MAX_PSNS];
	u32 expect_cum;
	u32 expect_word0;
	u32 expect_word7;
	u8 expect_last;		/* enum mr_sack_verdict of the last arrival */
};

static const struct mr_sack_case mr_sack_cases[] = {
	{ "in-order arrivals advance cum_psn", "MR-SACK-4",
	  100, 3, { 100, 101, 102 }, 103, 0, 0, MR_SACK_IN_ORDER },
	{ "a gap sets the bit after cum_psn", "MR-ACK-2",
	  100, 2, { 100, 102 }, 101, 0x1, 0, MR_SACK_OUT_OF_ORDER },
	{ "filling the gap pulls cum_psn over the received run", "MR-SACK-4",
	  100, 4, { 100, 102, 103, 101 }, 104, 0, 0, MR_SACK_IN_ORDER },
	{ "the same PSN twice is a duplicate", "MR-ACK-3",
	  100, 2, { 100, 100 }, 101, 0, 0, MR_SACK_DUPLICATE },
	{ "a PSN before cum_psn is a duplicate", "MR-ACK-3",
	  100, 3, { 100, 101, 99 }, 102, 0, 0, MR_SACK_DUPLICATE },
	{ "a set bit is a duplicate", "MR-ACK-3",
	  10, 2, { 12, 12 }, 10, 0x2, 0, MR_SACK_DUPLICATE },
	{ "cum_psn + 256 is the last bit", "MR-ACK-2",
	  0, 1, { 256 }, 0, 0, 0x80000000U, MR_SACK_OUT_OF_ORDER },
	{ "cum_psn + 257 slides the window by one", "MR-SACK-5",
	  0, 1, { 257 }, 1, 0, 0x80000000U, MR_SACK_OUT_OF_ORDER },
	{ "sliding onto a received PSN pulls over it", "MR-SACK-5",
	  0, 2, { 2, 258 }, 3, 0, 0x40000000U, MR_SACK_OUT_OF_ORDER },
	{ "2^24 ahead is beyond the window", "MR-ACK-3",
	  0, 1, { 0x01000000U }, 0, 0, 0, MR_SACK_BEYOND_WINDOW },
	{ "PSNs wrap at 2^32", "MR-GEN-3",
	  0xfffffffeU, 4, { 0xfffffffeU, 0xffffffffU, 0, 1 }, 2, 0, 0, MR_SACK_IN_ORDER },
	{ "a gap across the wrap", "MR-GEN-3",
	  0xffffffffU, 1, { 1 }, 0xffffffffU, 0x2, 0, MR_SACK_OUT_OF_ORDER },
	{ "a run of 33 behind one hole collapses at once", "MR-SACK-4",
	  0, 34, { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
		   22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 0 },
	  34, 0, 0, MR_SACK_IN_ORDER },
};

#define MR_SACK_NR_CASES (sizeof(mr_sack_cases) / sizeof(*mr_sack_cases))

#endif /* MR_TESTS_SACK_CASES_H */
