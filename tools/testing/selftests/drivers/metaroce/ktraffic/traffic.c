// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One op of a run: messages from A to B at a bounded depth, every byte and completion checked. */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/scatterlist.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "ktraffic.h"

static const struct mr_kt_op mr_kt_ops[] = {
	{ "send", MR_KT_SEND, IB_WR_SEND, IB_WC_SEND, false },
	{ "send_imm", MR_KT_SEND, IB_WR_SEND_WITH_IMM, IB_WC_SEND, true },
	{ "write", MR_KT_WRITE, IB_WR_RDMA_WRITE, IB_WC_RDMA_WRITE, false },
	{ "write_imm", MR_KT_WRITE, IB_WR_RDMA_WRITE_WITH_IMM, IB_WC_RDMA_WRITE, true },
	{ "read", MR_KT_READ, IB_WR_RDMA_READ, IB_WC_RDMA_READ, false },
	{ "cmp_swp", MR_KT_ATOMIC, IB_WR_ATOMIC_CMP_AND_SWP, IB_WC_COMP_SWAP, false },
	{ "fetch_add", MR_KT_ATOMIC, IB_WR_ATOMIC_FETCH_AND_ADD, IB_WC_FETCH_ADD, false },
};

const struct mr_kt_op *mr_kt_op_find(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(mr_kt_ops); i++)
		if (!strcmp(mr_kt_ops[i].name, name))
			return &mr_kt_ops[i];
	return NULL;
}

/* wr_id of B's registration of the atomic target; messages use their number. */
#define MR_KT_WR_REG	U64_MAX

/* An op in progress.  Message k always uses slot k % depth on both ends. */
struct mr_kt_flow {
	struct mr_kt_run *run;
	const struct mr_kt_op *op;
	u32 round;
	u32 posted;		/* messages A posted */
	u32 a_done;		/* A's completions checked, in posting order */
	u32 recvs_posted;	/* receives B posted */
	u32 b_done;		/* B's receive completions checked, in posting order */
	u64 *expect;		/* atomics: per slot, the value its message must return */
	u64 target;		/* atomics: the target's value after every posted message */
	struct ib_mr *mr;	/* atomics: the target, registered with remote atomic access */
	char why[MR_KT_WHY_LEN];
};

static bool mr_kt_failed(const struct mr_kt_flow *f)
{
	return f->why[0];
}

/* Keeps the first failure: later ones are usually its consequences. */
static __printf(2, 3) void mr_kt_fail(struct mr_kt_flow *f, const char *fmt, ...)
{
	va_list args;

	if (mr_kt_failed(f))
		return;
	va_start(args, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, args);
	va_end(args);
}

static bool mr_kt_uses_recv(const struct mr_kt_op *op)
{
	return op->kind == MR_KT_SEND || op->imm;
}

static u32 mr_kt_msg_bytes(const struct mr_kt_flow *f)
{
	return f->op->kind == MR_KT_ATOMIC ? sizeof(u64) : f->run->size;
}

/* Messages that are checked at both ends, so their slots may be reused. */
static u32 mr_kt_verified(const struct mr_kt_flow *f)
{
	return mr_kt_uses_recv(f->op) ? min(f->a_done, f->b_done) : f->a_done;
}

/* ---- data patterns: different in every run, op, message and byte ---- */

static u64 mr_kt_mix(u64 z)	/* splitmix64's finaliser */
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

u64 mr_kt_msg_seed(u64 salt, u32 round, u32 msg)
{
	return mr_kt_mix(salt + ((u64)round << 32) + msg);
}

static u64 mr_kt_seed(const struct mr_kt_flow *f, u32 msg)
{
	return mr_kt_msg_seed(f->run->salt, f->round, msg);
}

/*
 * Word i of the message whose seed is seed: a Weyl sequence from the (mixed) seed.
 * Every word of a message differs from every other (the step is odd), and from the
 * same word of another message (seeds differ), at an add and a store a word: a full
 * mix per word cost the sender more instructions per MB than the transport's own
 * transmit path (tcgprof).
 */
#define MR_KT_STEP	0x9e3779b97f4a7c15ULL

static u64 mr_kt_word(u64 seed, size_t i)
{
	return seed + (i + 1) * MR_KT_STEP;
}

u8 mr_kt_byte(u64 seed, size_t off)
{
	u64 word = mr_kt_word(seed, off / 8);

	return ((u8 *)&word)[off % 8];
}

static u32 mr_kt_imm(u64 seed)
{
	return seed >> 32;
}

/*
 * The message's pattern (flip = 0), or its complement (flip = ~0), which differs in
 * every byte.  ~(seed + m) = ~seed - m: the complement is a Weyl sequence too, from
 * ~seed with the step negated, so either is one add and one store a word.
 */
void mr_kt_fill(struct mr_kt_buf *buf, u32 len, u64 seed, u64 flip)
{
	u64 *w = buf->cpu, last, x = seed ^ flip;
	u64 step = flip ? -MR_KT_STEP : MR_KT_STEP;
	size_t i, n = len / 8;

	for (i = 0; i + 4 <= n; i += 4, x += 4 * step) {
		w[i] = x + step;
		w[i + 1] = x + 2 * step;
		w[i + 2] = x + 3 * step;
		w[i + 3] = x + 4 * step;
	}
	for (; i < n; i++) {
		x += step;
		w[i] = x;
	}
	if (len % 8) {
		last = mr_kt_word(seed, n) ^ flip;
		memcpy(&w[n], &last, len % 8);
	}
}

/*
 * Offset of the first byte that is not the message's pattern, or -1: word by word
 * along the sequence (an add and a compare a word: a Read's requester checks every
 * byte it reads), then byte by byte from the first word that differs, and the tail.
 */
long mr_kt_mismatch(const struct mr_kt_buf *buf, u32 len, u64 seed)
{
	/* the buffer is word aligned, as mr_kt_fill() writes it */
	const u64 *w = buf->cpu;
	const u8 *p = buf->cpu;
	size_t i, n = len / 8, off;
	u64 x = seed, want;

	for (i = 0; i < n; i++) {
		x += MR_KT_STEP;
		if (w[i] != x)
			break;
	}
	for (off = i * 8; off < len; off++) {
		want = mr_kt_word(seed, off / 8);
		if (p[off] != ((u8 *)&want)[off % 8])
			return off;
	}
	return -1;
}

static void mr_kt_verify(struct mr_kt_flow *f, struct mr_kt_end *end, u32 msg)
{
	struct mr_kt_buf *buf = &end->slots[msg % f->run->depth];
	u64 seed = mr_kt_seed(f, msg);
	long off;

	ib_dma_sync_single_for_cpu(end->dev, buf->dma, f->run->size, DMA_BIDIRECTIONAL);
	off = mr_kt_mismatch(buf, f->run->size, seed);
	if (off >= 0)
		mr_kt_fail(f, "%s: message %u byte %ld of %u is %#04x, expected %#04x", end->role,
			   msg, off, f->run->size, ((u8 *)buf->cpu)[off], mr_kt_byte(seed, off));
}

static void mr_kt_fill_for_device(struct mr_kt_flow *f, struct mr_kt_end *end, u32 msg,
				  u64 flip)
{
	struct mr_kt_buf *buf = &end->slots[msg % f->run->depth];

	mr_kt_fill(buf, f->run->size, mr_kt_seed(f, msg), flip);
	ib_dma_sync_single_for_device(end->dev, buf->dma, f->run->size, DMA_BIDIRECTIONAL);
}

/* ---- Reads and atomics ---- */

/* A QP whose device allows none outstanding would wait for ever instead of failing. */
static int mr_kt_rd_atomic_check(struct mr_kt_flow *f)
{
	struct ib_device *a = f->run->a.dev, *b = f->run->b.dev;

	if (a->attrs.max_qp_init_rd_atom <= 0)
		mr_kt_fail(f, "A: %s allows no Reads or atomics out (max_qp_init_rd_atom %d)",
			   dev_name(&a->dev), a->attrs.max_qp_init_rd_atom);
	else if (b->attrs.max_qp_rd_atom <= 0)
		mr_kt_fail(f, "B: %s accepts no Reads or atomics (max_qp_rd_atom %d)",
			   dev_name(&b->dev), b->attrs.max_qp_rd_atom);
	return mr_kt_failed(f) ? -EOPNOTSUPP : 0;
}

/*
 * Atomics work on one 8-byte target at B.  The unsafe global rkey grants
 * remote read and write only, so the target gets its own registration (a
 * fast-registration MR, as kernel ULPs use) with remote atomic access.
 */
static int mr_kt_atomic_register(struct mr_kt_flow *f)
{
	struct mr_kt_end *b = &f->run->b;
	unsigned long deadline = jiffies + msecs_to_jiffies(f->run->timeout_ms);
	struct ib_reg_wr wr = {};
	struct scatterlist sg;
	struct ib_wc wc = {};
	int n;

	f->mr = ib_alloc_mr(b->pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(f->mr)) {
		n = PTR_ERR(f->mr);
		f->mr = NULL;
		mr_kt_fail(f, "B: alloc MR for the atomic target: %pe", ERR_PTR(n));
		return n;
	}
	sg_init_one(&sg, b->target.cpu, sizeof(u64));
	sg_dma_address(&sg) = b->target.dma;
	sg_dma_len(&sg) = sizeof(u64);
	n = ib_map_mr_sg(f->mr, &sg, 1, NULL, PAGE_SIZE);
	if (n != 1) {
		mr_kt_fail(f, "B: map the atomic target: %d", n);
		return n < 0 ? n : -EINVAL;
	}
	ib_update_fast_reg_key(f->mr, ib_inc_rkey(f->mr->rkey));

	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.wr_id = MR_KT_WR_REG;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.mr = f->mr;
	wr.key = f->mr->rkey;
	wr.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_ATOMIC;
	n = ib_post_send(b->qp, &wr.wr, NULL);
	if (n) {
		mr_kt_fail(f, "B: post the target's registration: %pe", ERR_PTR(n));
		return n;
	}
	while (!(n = ib_poll_cq(b->cq, 1, &wc))) {
		if (time_after(jiffies, deadline)) {
			mr_kt_fail(f, "B: the target's registration did not complete");
			return -ETIMEDOUT;
		}
		usleep_range(50, 200);
	}
	if (n < 0 || wc.status != IB_WC_SUCCESS || wc.wr_id != MR_KT_WR_REG ||
	    wc.opcode != IB_WC_REG_MR) {
		mr_kt_fail(f, "B: target registration: %s (wr_id %#llx opcode %d)",
			   n < 0 ? "poll error" : ib_wc_status_msg(wc.status), wc.wr_id, wc.opcode);
		return -EIO;
	}
	return 0;
}

static int mr_kt_atomic_prepare(struct mr_kt_flow *f)
{
	struct mr_kt_end *b = &f->run->b;

	if (b->dev->attrs.atomic_cap == IB_ATOMIC_NONE) {
		mr_kt_fail(f, "B: %s reports no atomics (atomic_cap NONE)", dev_name(&b->dev->dev));
		return -EOPNOTSUPP;
	}
	f->expect = kcalloc(f->run->depth, sizeof(*f->expect), GFP_KERNEL);
	if (!f->expect) {
		mr_kt_fail(f, "out of memory");
		return -ENOMEM;
	}
	f->target = mr_kt_seed(f, U32_MAX);
	*(u64 *)b->target.cpu = f->target;
	ib_dma_sync_single_for_device(b->dev, b->target.dma, sizeof(u64), DMA_BIDIRECTIONAL);
	return mr_kt_atomic_register(f);
}

/*
 * Atomics of one QP execute in posting order, so each message's original value
 * is known when it is posted.  Every fourth compare-and-swap is meant to miss
 * and must leave the target alone.
 */
static void mr_kt_atomic_next(struct mr_kt_flow *f, u32 msg, struct ib_atomic_wr *wr)
{
	u64 seed = mr_kt_seed(f, msg);

	f->expect[msg % f->run->depth] = f->target;
	if (f->op->wr_opcode == IB_WR_ATOMIC_FETCH_AND_ADD) {
		wr->compare_add = seed;
		f->target += seed;
	} else if (msg % 4 == 3) {
		wr->compare_add = ~f->target;
		wr->swap = seed;
	} else {
		wr->compare_add = f->target;
		wr->swap = seed;
		f->target = seed;
	}
}

static void mr_kt_atomic_check_target(struct mr_kt_flow *f)
{
	struct mr_kt_end *b = &f->run->b;
	u64 got;

	ib_dma_sync_single_for_cpu(b->dev, b->target.dma, sizeof(u64), DMA_BIDIRECTIONAL);
	got = *(u64 *)b->target.cpu;
	if (got != f->target)
		mr_kt_fail(f, "B: target %#llx after %u messages, not %#llx (not exactly once)",
			   got, f->run->count, f->target);
}

/* ---- posting ---- */

static void mr_kt_post_recv(struct mr_kt_flow *f)
{
	struct mr_kt_end *b = &f->run->b;
	u32 msg = f->recvs_posted;
	struct mr_kt_buf *buf = &b->slots[msg % f->run->depth];
	struct ib_sge sge = {
		.addr = buf->dma,
		.length = f->run->size,
		.lkey = b->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = msg,
		.sg_list = &sge,
		.num_sge = f->op->kind == MR_KT_SEND,	/* Write with immediate: no data */
	};
	int err;

	if (f->op->kind == MR_KT_SEND)
		mr_kt_fill_for_device(f, b, msg, ~0ULL);
	err = ib_post_recv(b->qp, &wr, NULL);
	if (err) {
		mr_kt_fail(f, "B: post_recv for message %u: %pe", msg, ERR_PTR(err));
		return;
	}
	f->recvs_posted++;
}

static void mr_kt_post_send(struct mr_kt_flow *f)
{
	struct mr_kt_run *run = f->run;
	struct mr_kt_end *a = &run->a, *b = &run->b;
	u32 msg = f->posted, slot = msg % run->depth;
	u64 seed = mr_kt_seed(f, msg);
	struct ib_sge sge = {
		.addr = a->slots[slot].dma,
		.length = run->size,
		.lkey = a->pd->local_dma_lkey,
	};
	union {
		struct ib_send_wr send;
		struct ib_rdma_wr rdma;
		struct ib_atomic_wr atomic;
	} wr = {};
	int err;

	wr.send.wr_id = msg;
	wr.send.sg_list = &sge;
	wr.send.num_sge = 1;
	wr.send.opcode = f->op->wr_opcode;
	wr.send.send_flags = IB_SEND_SIGNALED;
	if (f->op->imm)
		wr.send.ex.imm_data = cpu_to_be32(mr_kt_imm(seed));

	switch (f->op->kind) {
	case MR_KT_SEND:
		mr_kt_fill_for_device(f, a, msg, 0);
		break;
	case MR_KT_WRITE:
		mr_kt_fill_for_device(f, a, msg, 0);
		mr_kt_fill_for_device(f, b, msg, ~0ULL);
		wr.rdma.remote_addr = b->slots[slot].dma;
		wr.rdma.rkey = b->pd->unsafe_global_rkey;
		break;
	case MR_KT_READ:
		mr_kt_fill_for_device(f, b, msg, 0);
		mr_kt_fill_for_device(f, a, msg, ~0ULL);
		wr.rdma.remote_addr = b->slots[slot].dma;
		wr.rdma.rkey = b->pd->unsafe_global_rkey;
		break;
	case MR_KT_ATOMIC:
		sge.length = sizeof(u64);
		mr_kt_atomic_next(f, msg, &wr.atomic);
		*(u64 *)a->slots[slot].cpu = ~f->expect[slot];
		ib_dma_sync_single_for_device(a->dev, sge.addr, sizeof(u64), DMA_BIDIRECTIONAL);
		wr.atomic.remote_addr = f->mr->iova;
		wr.atomic.rkey = f->mr->rkey;
		break;
	}

	if ((f->op->kind == MR_KT_SEND || f->op->kind == MR_KT_WRITE) &&
	    run->size <= run->inline_max) {
		wr.send.send_flags |= IB_SEND_INLINE;
		sge.addr = (uintptr_t)a->slots[slot].cpu;	/* inline: a CPU address */
	}
	err = ib_post_send(a->qp, &wr.send, NULL);
	if (err) {
		mr_kt_fail(f, "A: post_send of message %u: %pe", msg, ERR_PTR(err));
		return;
	}
	/* Inline data was copied by post_send: the source may change at once. */
	if (wr.send.send_flags & IB_SEND_INLINE)
		memset(a->slots[slot].cpu, 0x5a, run->size);
	f->posted++;
}

/* ---- completions ---- */

static bool mr_kt_wc_ok(struct mr_kt_flow *f, struct mr_kt_end *end, const struct ib_wc *wc,
			u32 msg, enum ib_wc_opcode opcode)
{
	if (wc->status != IB_WC_SUCCESS)
		mr_kt_fail(f, "%s: message %u completed with %s (status %d, vendor error %#x)",
			   end->role, msg, ib_wc_status_msg(wc->status), wc->status,
			   wc->vendor_err);
	else if (wc->wr_id != msg)
		mr_kt_fail(f, "%s: completion for wr_id %llu where message %u was due", end->role,
			   wc->wr_id, msg);
	else if (wc->qp != end->qp)
		mr_kt_fail(f, "%s: completion of message %u names another QP", end->role, msg);
	else if (wc->opcode != opcode)
		mr_kt_fail(f, "%s: message %u completed as opcode %d, expected %d", end->role, msg,
			   wc->opcode, opcode);
	return !mr_kt_failed(f);
}

static void mr_kt_a_completion(struct mr_kt_flow *f, const struct ib_wc *wc)
{
	struct mr_kt_end *a = &f->run->a;
	u32 msg = f->a_done, slot = msg % f->run->depth;
	u64 got;

	/* wc_flags and byte_len are defined for receive completions only. */
	if (!mr_kt_wc_ok(f, a, wc, msg, f->op->wc_opcode))
		return;
	switch (f->op->kind) {
	case MR_KT_SEND:
		break;
	case MR_KT_WRITE:
		/* Completion means the data is placed at B; with immediate, B checks it. */
		if (!f->op->imm)
			mr_kt_verify(f, &f->run->b, msg);
		break;
	case MR_KT_READ:
		mr_kt_verify(f, a, msg);
		break;
	case MR_KT_ATOMIC:
		ib_dma_sync_single_for_cpu(a->dev, a->slots[slot].dma, sizeof(u64),
					   DMA_BIDIRECTIONAL);
		got = *(u64 *)a->slots[slot].cpu;
		if (got != f->expect[slot])
			mr_kt_fail(f, "A: message %u returned %#llx, expected %#llx", msg, got,
				   f->expect[slot]);
		break;
	}
	f->a_done++;
}

static void mr_kt_b_completion(struct mr_kt_flow *f, const struct ib_wc *wc)
{
	struct mr_kt_end *b = &f->run->b;
	u32 msg = f->b_done;
	u32 imm = mr_kt_imm(mr_kt_seed(f, msg));
	enum ib_wc_opcode opcode;

	if (!mr_kt_uses_recv(f->op)) {
		mr_kt_fail(f, "B: unexpected completion (wr_id %llu, status %s)", wc->wr_id,
			   ib_wc_status_msg(wc->status));
		return;
	}
	opcode = f->op->kind == MR_KT_SEND ? IB_WC_RECV : IB_WC_RECV_RDMA_WITH_IMM;
	if (!mr_kt_wc_ok(f, b, wc, msg, opcode))
		return;
	if (wc->byte_len != f->run->size) {
		mr_kt_fail(f, "B: message %u received %u bytes, expected %u", msg, wc->byte_len,
			   f->run->size);
		return;
	}
	if (!!(wc->wc_flags & IB_WC_WITH_IMM) != f->op->imm) {
		mr_kt_fail(f, "B: message %u %s immediate data", msg,
			   f->op->imm ? "lacks" : "claims");
		return;
	}
	if (f->op->imm && be32_to_cpu(wc->ex.imm_data) != imm) {
		mr_kt_fail(f, "B: message %u carried immediate %#x, expected %#x", msg,
			   be32_to_cpu(wc->ex.imm_data), imm);
		return;
	}
	mr_kt_verify(f, b, msg);
	f->b_done++;
}

/* Returns how many completions it consumed. */
static int mr_kt_poll(struct mr_kt_flow *f, struct mr_kt_end *end,
		      void (*check)(struct mr_kt_flow *f, const struct ib_wc *wc))
{
	struct ib_wc wc[16];
	int i, n;

	n = ib_poll_cq(end->cq, ARRAY_SIZE(wc), wc);
	if (n < 0) {
		mr_kt_fail(f, "%s: poll CQ: %pe", end->role, ERR_PTR(n));
		return 0;
	}
	for (i = 0; i < n && !mr_kt_failed(f); i++)
		check(f, &wc[i]);
	return n;
}

/*
 * Keeps at most depth messages between A's post and their check, posts B's
 * receives ahead of the messages that consume them (no RNR in a correct run),
 * and stops at the first failure or when the op's time is up.
 */
static void mr_kt_pump(struct mr_kt_flow *f)
{
	struct mr_kt_run *run = f->run;
	unsigned long deadline = jiffies + msecs_to_jiffies(run->timeout_ms);
	bool recv = mr_kt_uses_recv(f->op);
	int progress;

	while (!mr_kt_failed(f) && mr_kt_verified(f) < run->count) {
		progress = 0;
		while (recv && !mr_kt_failed(f) && f->recvs_posted < run->count &&
		       f->recvs_posted < f->b_done + run->depth) {
			mr_kt_post_recv(f);
			progress++;
		}
		while (!mr_kt_failed(f) && f->posted < run->count &&
		       f->posted < mr_kt_verified(f) + run->depth &&
		       (!recv || f->posted < f->recvs_posted)) {
			mr_kt_post_send(f);
			progress++;
		}
		progress += mr_kt_poll(f, &run->a, mr_kt_a_completion);
		progress += mr_kt_poll(f, &run->b, mr_kt_b_completion);
		if (progress)
			continue;
		if (time_after(jiffies, deadline)) {
			mr_kt_fail(f, "timeout (%u ms): %u of %u posted, %u done at A, %u at B",
				   run->timeout_ms, f->posted, run->count, f->a_done, f->b_done);
		} else if (fatal_signal_pending(current)) {
			mr_kt_fail(f, "interrupted");
		} else {
			mr_kt_cq_wait(run, &run->a, &run->b, MR_KT_WAIT_MS);
		}
	}
}

static void mr_kt_report(struct mr_kt_flow *f, s64 usec)
{
	u64 bytes = (u64)mr_kt_verified(f) * mr_kt_msg_bytes(f);
	u64 centi_mbps = div64_u64(bytes * 100, max_t(s64, usec, 1));

	pr_info("%s count=%u size=%u bytes=%llu usec=%lld MBps=%llu.%02llu %s%s\n",
		f->op->name, f->run->count, mr_kt_msg_bytes(f), bytes, usec, centi_mbps / 100,
		centi_mbps % 100, mr_kt_failed(f) ? "FAIL " : "PASS", f->why);
}

/* Runs one op over a fresh connection and prints its line; 0 if it passed. */
int mr_kt_op_run(struct mr_kt_run *run, const struct mr_kt_op *op)
{
	struct mr_kt_flow *f;
	ktime_t start = 0;
	s64 usec = 0;
	int err;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->run = run;
	f->op = op;
	f->round = run->round++;

	if (mr_kt_connect(run, f->why))
		goto out;
	if ((op->kind == MR_KT_READ || op->kind == MR_KT_ATOMIC) && mr_kt_rd_atomic_check(f))
		goto out;
	if (op->kind == MR_KT_ATOMIC && mr_kt_atomic_prepare(f))
		goto out;

	start = ktime_get();
	mr_kt_pump(f);
	usec = ktime_us_delta(ktime_get(), start);
	if (op->kind == MR_KT_ATOMIC && !mr_kt_failed(f))
		mr_kt_atomic_check_target(f);
out:
	mr_kt_disconnect(run);
	if (f->mr)
		ib_dereg_mr(f->mr);
	mr_kt_report(f, usec);
	err = mr_kt_failed(f) ? -EIO : 0;
	kfree(f->expect);
	kfree(f);
	return err;
}
