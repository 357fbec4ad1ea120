/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one door from the protocol engine to its environment, the kernel or libc. */
#ifndef MR_SHIM_H
#define MR_SHIM_H

#ifdef __KERNEL__

#include <linux/types.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/bug.h>
#include <linux/build_bug.h>
#include <linux/math64.h>

#define MR_STATIC_ASSERT(cond, msg) static_assert(cond, msg)

static inline u64 mr_div_u64(u64 dividend, u32 divisor)
{
	return div_u64(dividend, divisor);
}

#else /* !__KERNEL__ */

#include <assert.h>
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The compiler's own names for the <stdint.h> types, spelled as the kernel spells them. */
typedef __UINT8_TYPE__ u8;
typedef __UINT16_TYPE__ u16;
typedef __UINT32_TYPE__ u32;
typedef __UINT64_TYPE__ u64;
typedef __INT32_TYPE__ s32;
typedef __INT64_TYPE__ s64;

#define MR_STATIC_ASSERT(cond, msg) static_assert(cond, msg)

static inline u64 mr_div_u64(u64 dividend, u32 divisor)
{
	return dividend / divisor;
}

#endif /* __KERNEL__ */

/* Serial-number comparison of 32-bit sequence numbers, [MR-GEN-3]. */
static inline bool mr_seq_before(u32 a, u32 b)
{
	return (s32)(b - a) > 0;
}

static inline bool mr_seq_after(u32 a, u32 b)
{
	return mr_seq_before(b, a);
}

static inline u32 mr_min_u32(u32 a, u32 b)
{
	return a < b ? a : b;
}

static inline u32 mr_max_u32(u32 a, u32 b)
{
	return a > b ? a : b;
}

static inline u64 mr_min_u64(u64 a, u64 b)
{
	return a < b ? a : b;
}

static inline u64 mr_max_u64(u64 a, u64 b)
{
	return a > b ? a : b;
}

/* Deterministic xorshift64*: randomness is an input, seeded by the caller. */
static inline u64 mr_rand_next(u64 *state)
{
	u64 x = *state ? *state : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

#endif /* MR_SHIM_H */
