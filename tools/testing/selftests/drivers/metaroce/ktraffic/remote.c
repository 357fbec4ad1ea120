// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Two-host runs: a client device Sends or Writes to a server's, or Reads from it, set up
 * over a kernel TCP socket.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/net.h>
#include <linux/nsproxy.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <net/net_namespace.h>
#include <net/sock.h>

#include "ktraffic.h"

/*
 * The control exchange, one TCP connection per run:
 *   client -> server  hello   (op, sizes, data salt, the client QP)
 *   server -> client  reply   (the server QP, rkey, ring, ring slot addresses)
 *   ... the client runs the op ...
 *   client -> server  done    (messages completed at the client)
 *   server -> client  result  (the server's verdict on the data it holds)
 * Both hosts run the same build; fields are little-endian all the same.
 * A Read fetches ring slot msg % ring of the server, which holds slot's pattern of
 * round MR_KT_READ_ROUND from setup on; the client checks every byte it read.
 */
#define MR_KT_MAGIC	0x4d524b54	/* "MRKT" */
#define MR_KT_VERSION	1
#define MR_KT_OP_NAME	16
/* Latency samples kept per run: enough for percentiles, bounded memory. */
#define MR_KT_MAX_SAMPLES	BIT(20)
/* The pattern round of the server's slots that Reads fetch (Sends and Writes use 0). */
#define MR_KT_READ_ROUND	1

struct mr_kt_wire_hello {
	__le32 magic;
	__le32 version;
	char op[MR_KT_OP_NAME];
	__le32 size;
	__le32 count;
	__le32 depth;
	__le32 ring;
	__le64 salt;
	__le32 qpn;
	__le32 psn;
	__le32 mtu;
	u8 gid[16];
} __packed;

struct mr_kt_wire_reply {
	__le32 magic;
	__le32 status;		/* 0, or the negative errno that refused the run */
	__le32 qpn;
	__le32 psn;
	__le32 mtu;
	__le32 rkey;
	__le32 ring;		/* followed by ring __le64 slot addresses */
	u8 gid[16];
} __packed;

struct mr_kt_wire_done {
	__le32 magic;
	__le32 messages;
} __packed;

struct mr_kt_wire_result {
	__le32 magic;
	__le32 verified;	/* messages whose data the server checked */
	char why[MR_KT_WHY_LEN];	/* empty if the server found nothing wrong */
} __packed;

/* ---- the control socket ---- */

static int mr_kt_ctl_send(struct socket *sock, const void *buf, size_t len)
{
	struct kvec vec = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	int n = kernel_sendmsg(sock, &msg, &vec, 1, len);

	if (n == len)
		return 0;
	return n < 0 ? n : -EPIPE;
}

/* Reads exactly len bytes; with MSG_DONTWAIT returns -EAGAIN if none are there yet. */
static int mr_kt_ctl_recv(struct socket *sock, void *buf, size_t len, int flags)
{
	size_t got = 0;
	int n;

	while (got < len) {
		struct kvec vec = { .iov_base = buf + got, .iov_len = len - got };
		struct msghdr msg = {};

		n = kernel_recvmsg(sock, &msg, &vec, 1, len - got, got ? MSG_WAITALL : flags);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0)
			return n;
		got += n;
	}
	return 0;
}

static void mr_kt_ctl_timeouts(struct socket *sock, unsigned int ms)
{
	sock->sk->sk_rcvtimeo = msecs_to_jiffies(ms);
	sock->sk->sk_sndtimeo = msecs_to_jiffies(ms);
}

/* The server may still be starting: retry a refused connection until the timeout. */
static int mr_kt_ctl_connect(struct mr_kt_run *run, struct socket **conn)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(run->ctl_port),
		.sin_addr.s_addr = run->peer_ip,
	};
	unsigned long deadline = jiffies + msecs_to_jiffies(run->timeout_ms);
	struct socket *sock;
	int err;

	for (;;) {
		err = sock_create_kern(run->net, AF_INET, SOCK_STREAM,
				       IPPROTO_TCP, &sock);
		if (err)
			return err;
		mr_kt_ctl_timeouts(sock, run->timeout_ms);
		err = kernel_connect(sock, (struct sockaddr *)&sin, sizeof(sin), 0);
		if (!err) {
			*conn = sock;
			return 0;
		}
		sock_release(sock);
		if (time_after(jiffies, deadline) || fatal_signal_pending(current))
			return err;
		msleep(100);
	}
}

/* ---- latency percentiles ---- */

static int mr_kt_cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample at or above the fraction pct of all of them. */
static u32 mr_kt_percentile(const u32 *sorted, u32 n, u32 pct)
{
	u32 rank = DIV_ROUND_UP(n * (u64)pct, 100);

	return sorted[max(rank, 1U) - 1];
}

static void mr_kt_report_latency(const char *tag, const char *op, u32 *ns, u32 n)
{
	u32 p50, p99;

	if (!n)
		return;
	sort(ns, n, sizeof(*ns), mr_kt_cmp_u32, NULL);
	p50 = mr_kt_percentile(ns, n, 50);
	p99 = mr_kt_percentile(ns, n, 99);
	pr_info("%s%s latency samples=%u p50_us=%u.%03u p99_us=%u.%03u max_us=%u.%03u\n", tag, op,
		n, p50 / 1000, p50 % 1000, p99 / 1000, p99 % 1000, ns[n - 1] / 1000,
		ns[n - 1] % 1000);
}

/*
 * Checks the buffer of end's message msg against its pattern after the device's
 * writes; on a mismatch, why names the first wrong byte.  True if every byte is right.
 */
static bool mr_kt_check_buf(struct mr_kt_end *end, struct mr_kt_buf *buf, u32 len, u64 seed,
			    u32 msg, char *why, size_t why_len)
{
	long off;

	ib_dma_sync_single_for_cpu(end->dev, buf->dma, len, DMA_BIDIRECTIONAL);
	off = mr_kt_mismatch(buf, len, seed);
	if (off < 0)
		return true;
	snprintf(why, why_len, "%s: message %u byte %ld of %u is %#04x, not %#04x", end->role,
		 msg, off, len, ((u8 *)buf->cpu)[off], mr_kt_byte(seed, off));
	return false;
}

/* ---- the client: end A ---- */

struct mr_kt_client {
	struct mr_kt_run *run;
	const struct mr_kt_op *op;
	u64 *remote;		/* the server's ring slot addresses */
	u32 ring;
	u32 rkey;
	u32 posted;
	u32 done;
	ktime_t *posted_at;	/* per slot */
	u32 *lat_ns;
	u32 samples;
	char why[MR_KT_WHY_LEN];
};

/* What a Read of message msg finds: its ring slot's pattern on the server. */
static u64 mr_kt_read_seed(const struct mr_kt_client *c, u32 msg)
{
	return mr_kt_msg_seed(c->run->salt, MR_KT_READ_ROUND, msg % c->ring);
}

static int mr_kt_client_post(struct mr_kt_client *c)
{
	struct mr_kt_run *run = c->run;
	struct mr_kt_end *a = &run->a;
	u32 msg = c->posted, slot = msg % run->depth;
	struct ib_sge sge = {
		.addr = a->slots[slot].dma,
		.length = run->size,
		.lkey = a->pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = msg,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = c->op->wr_opcode,
			.send_flags = IB_SEND_SIGNALED,
		},
	};
	int err;

	if (c->op->kind == MR_KT_READ)	/* the complement: a byte not read stays wrong */
		mr_kt_fill(&a->slots[slot], run->size, mr_kt_read_seed(c, msg), ~0ULL);
	else
		mr_kt_fill(&a->slots[slot], run->size, mr_kt_msg_seed(run->salt, 0, msg), 0);
	ib_dma_sync_single_for_device(a->dev, a->slots[slot].dma, run->size, DMA_BIDIRECTIONAL);
	if (c->op->kind == MR_KT_WRITE || c->op->kind == MR_KT_READ) {
		wr.remote_addr = c->remote[msg % c->ring];
		wr.rkey = c->rkey;
	}
	c->posted_at[slot] = ktime_get();
	err = ib_post_send(a->qp, &wr.wr, NULL);
	if (err)
		snprintf(c->why, sizeof(c->why), "A: post_send of message %u: %pe", msg,
			 ERR_PTR(err));
	else
		c->posted++;
	return err;
}

static void mr_kt_client_complete(struct mr_kt_client *c, const struct ib_wc *wc, ktime_t now)
{
	u32 msg = c->done, slot = msg % c->run->depth;

	if (wc->status != IB_WC_SUCCESS)
		snprintf(c->why, sizeof(c->why),
			 "A: message %u completed with %s (status %d, vendor error %#x)", msg,
			 ib_wc_status_msg(wc->status), wc->status, wc->vendor_err);
	else if (wc->wr_id != msg)
		snprintf(c->why, sizeof(c->why), "A: completion for wr_id %llu where %u was due",
			 wc->wr_id, msg);
	else if (wc->opcode != c->op->wc_opcode)
		snprintf(c->why, sizeof(c->why), "A: message %u completed as opcode %d, not %d",
			 msg, wc->opcode, c->op->wc_opcode);
	if (c->why[0])
		return;
	if (c->op->kind == MR_KT_READ &&
	    !mr_kt_check_buf(&c->run->a, &c->run->a.slots[slot], c->run->size,
			     mr_kt_read_seed(c, msg), msg, c->why, sizeof(c->why)))
		return;
	if (c->samples < MR_KT_MAX_SAMPLES)
		c->lat_ns[c->samples++] = min_t(s64, U32_MAX,
						ktime_to_ns(ktime_sub(now, c->posted_at[slot])));
	c->done++;
}

/*
 * Keeps depth messages in flight until count are done or duration_ms is up,
 * then drains.  A completion in error ends the run: that is an application error.
 */
static void mr_kt_client_pump(struct mr_kt_client *c, ktime_t start)
{
	struct mr_kt_run *run = c->run;
	ktime_t stop = ktime_add_ms(start, run->duration_ms ? run->duration_ms : U32_MAX);
	ktime_t next_report = ktime_add_ms(start, run->interval_ms);
	ktime_t stalled = ktime_add_ms(start, run->timeout_ms), now;
	struct ib_wc wc[16];
	bool stopped = false;
	int i, n;

	while (!c->why[0] && (c->done < c->posted || (c->posted < run->count && !stopped))) {
		while (!stopped && c->posted < run->count && c->posted - c->done < run->depth)
			if (mr_kt_client_post(c))
				return;
		n = ib_poll_cq(run->a.cq, ARRAY_SIZE(wc), wc);
		now = ktime_get();
		if (n < 0) {
			snprintf(c->why, sizeof(c->why), "A: poll CQ: %pe", ERR_PTR(n));
			return;
		}
		for (i = 0; i < n && !c->why[0]; i++)
			mr_kt_client_complete(c, &wc[i], now);
		if (run->interval_ms && ktime_after(now, next_report)) {
			pr_info("%sprogress ms=%lld bytes=%llu\n", run->tag,
				ktime_ms_delta(now, run->t0), (u64)c->done * run->size);
			/* After a stall, one line: not a burst of them at the same time. */
			next_report = ktime_add_ms(now, run->interval_ms);
		}
		stopped = stopped || ktime_after(now, stop);
		if (n) {
			stalled = ktime_add_ms(now, run->timeout_ms);
			continue;
		}
		if (ktime_after(now, stalled))
			snprintf(c->why, sizeof(c->why),
				 "timeout: nothing completed for %u ms, %u of %u posted done",
				 run->timeout_ms, c->done, c->posted);
		else if (fatal_signal_pending(current))
			snprintf(c->why, sizeof(c->why), "interrupted");
		else
			mr_kt_cq_wait(run, &run->a, NULL, MR_KT_WAIT_MS);
	}
}

static int mr_kt_client_hello(struct mr_kt_client *c, struct socket *sock, u32 psn)
{
	struct mr_kt_run *run = c->run;
	struct mr_kt_end *a = &run->a;
	struct mr_kt_wire_hello hello = {
		.magic = cpu_to_le32(MR_KT_MAGIC),
		.version = cpu_to_le32(MR_KT_VERSION),
		.size = cpu_to_le32(run->size),
		.count = cpu_to_le32(run->count),
		.depth = cpu_to_le32(run->depth),
		.ring = cpu_to_le32(run->ring),
		.salt = cpu_to_le64(run->salt),
		.qpn = cpu_to_le32(a->qp->qp_num),
		.psn = cpu_to_le32(psn),
		.mtu = cpu_to_le32(a->port_attr.active_mtu),
	};
	struct mr_kt_wire_reply reply;
	struct mr_kt_peer peer;
	int err;
	u32 i;

	strscpy(hello.op, c->op->name, sizeof(hello.op));
	memcpy(hello.gid, a->gid->gid.raw, sizeof(hello.gid));
	err = mr_kt_ctl_send(sock, &hello, sizeof(hello));
	if (!err)
		err = mr_kt_ctl_recv(sock, &reply, sizeof(reply), 0);
	if (err) {
		snprintf(c->why, sizeof(c->why), "control: hello: %pe", ERR_PTR(err));
		return err;
	}
	if (le32_to_cpu(reply.magic) != MR_KT_MAGIC || reply.status) {
		snprintf(c->why, sizeof(c->why), "control: the server refused the run: %pe",
			 ERR_PTR((s32)le32_to_cpu(reply.status)));
		return -EPROTO;
	}
	c->ring = le32_to_cpu(reply.ring);
	c->rkey = le32_to_cpu(reply.rkey);
	if (!c->ring || c->ring > MR_KT_MAX_RING) {
		snprintf(c->why, sizeof(c->why), "control: ring of %u slots", c->ring);
		return -EPROTO;
	}
	c->remote = kcalloc(c->ring, sizeof(*c->remote), GFP_KERNEL);
	if (!c->remote)
		return -ENOMEM;
	err = mr_kt_ctl_recv(sock, c->remote, c->ring * sizeof(*c->remote), 0);
	if (err) {
		snprintf(c->why, sizeof(c->why), "control: slot addresses: %pe", ERR_PTR(err));
		return err;
	}
	for (i = 0; i < c->ring; i++)
		c->remote[i] = le64_to_cpu((__force __le64)c->remote[i]);

	peer.qpn = le32_to_cpu(reply.qpn);
	peer.psn = le32_to_cpu(reply.psn);
	peer.mtu = le32_to_cpu(reply.mtu);
	memcpy(peer.gid.raw, reply.gid, sizeof(peer.gid.raw));
	return mr_kt_qp_ready(run, a, &peer, psn, c->why);
}

static int mr_kt_client_run(struct mr_kt_run *run, const struct mr_kt_op *op)
{
	struct mr_kt_client *c;
	struct mr_kt_wire_done done = { .magic = cpu_to_le32(MR_KT_MAGIC) };
	struct mr_kt_wire_result result = {};
	u32 psn = get_random_u32() & 0xffffff;
	struct socket *sock = NULL;
	ktime_t start = 0;
	s64 usec = 0;
	u64 bytes, centi_mbps;
	int err;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->run = run;
	c->op = op;
	c->posted_at = kcalloc(run->depth, sizeof(*c->posted_at), GFP_KERNEL);
	c->lat_ns = kvmalloc_array(min(run->count, MR_KT_MAX_SAMPLES), sizeof(*c->lat_ns),
				   GFP_KERNEL);
	if (!c->posted_at || !c->lat_ns) {
		snprintf(c->why, sizeof(c->why), "out of memory");
		goto out;
	}
	if (mr_kt_qp_create(run, &run->a, c->why))
		goto out;
	err = mr_kt_ctl_connect(run, &sock);
	if (err) {
		snprintf(c->why, sizeof(c->why), "control: connect to %pI4:%u: %pe",
			 &run->peer_ip, run->ctl_port, ERR_PTR(err));
		goto out;
	}
	if (mr_kt_client_hello(c, sock, psn))
		goto out;

	start = ktime_get();
	mr_kt_client_pump(c, start);
	usec = ktime_us_delta(ktime_get(), start);

	/* The server's verdict, also after a failure here: it may know more. */
	done.messages = cpu_to_le32(c->done);
	err = mr_kt_ctl_send(sock, &done, sizeof(done));
	if (!err)
		err = mr_kt_ctl_recv(sock, &result, sizeof(result), 0);
	result.why[sizeof(result.why) - 1] = 0;
	if (!c->why[0] && err)
		snprintf(c->why, sizeof(c->why), "control: result: %pe", ERR_PTR(err));
	else if (!c->why[0] && result.why[0])
		snprintf(c->why, sizeof(c->why), "server: %.190s", result.why);
	else if (!c->why[0] && le32_to_cpu(result.verified) != c->done &&
		 op->kind == MR_KT_SEND)
		snprintf(c->why, sizeof(c->why), "server verified %u of %u messages",
			 le32_to_cpu(result.verified), c->done);
out:
	if (sock)
		sock_release(sock);
	mr_kt_end_disconnect(&run->a);
	bytes = (u64)c->done * run->size;
	centi_mbps = div64_u64(bytes * 100, max_t(s64, usec, 1));
	pr_info("%s%s count=%u size=%u bytes=%llu usec=%lld MBps=%llu.%02llu %s%s\n", run->tag,
		op->name, c->done, run->size, bytes, usec, centi_mbps / 100, centi_mbps % 100,
		c->why[0] ? "FAIL " : "PASS", c->why);
	if (!c->why[0])
		mr_kt_report_latency(run->tag, op->name, c->lat_ns, c->samples);
	err = c->why[0] ? -EIO : 0;
	kvfree(c->lat_ns);
	kfree(c->posted_at);
	kfree(c->remote);
	kfree(c);
	return err;
}

/* ---- the server: end B ---- */

struct mr_kt_server {
	struct mr_kt_run *run;
	const struct mr_kt_op *op;
	u32 count;		/* the client's */
	u32 recvs_posted;
	u32 received;		/* receive completions checked */
	char why[MR_KT_WHY_LEN];
};

static void mr_kt_server_post_recv(struct mr_kt_server *s)
{
	struct mr_kt_run *run = s->run;
	struct mr_kt_end *b = &run->b;
	u32 msg = s->recvs_posted;
	struct mr_kt_buf *buf = &b->slots[msg % run->depth];
	struct ib_sge sge = {
		.addr = buf->dma,
		.length = run->size,
		.lkey = b->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_id = msg, .sg_list = &sge, .num_sge = 1 };
	int err;

	mr_kt_fill(buf, run->size, mr_kt_msg_seed(run->salt, 0, msg), ~0ULL);
	ib_dma_sync_single_for_device(b->dev, buf->dma, run->size, DMA_BIDIRECTIONAL);
	err = ib_post_recv(b->qp, &wr, NULL);
	if (err)
		snprintf(s->why, sizeof(s->why), "B: post_recv for message %u: %pe", msg,
			 ERR_PTR(err));
	else
		s->recvs_posted++;
}

static void mr_kt_server_verify(struct mr_kt_server *s, u32 msg)
{
	struct mr_kt_run *run = s->run;

	mr_kt_check_buf(&run->b, &run->b.slots[msg % run->depth], run->size,
			mr_kt_msg_seed(run->salt, 0, msg), msg, s->why, sizeof(s->why));
}

static void mr_kt_server_complete(struct mr_kt_server *s, const struct ib_wc *wc)
{
	u32 msg = s->received;

	if (s->op->kind != MR_KT_SEND)
		snprintf(s->why, sizeof(s->why), "B: unexpected completion (wr_id %llu, %s)",
			 wc->wr_id, ib_wc_status_msg(wc->status));
	else if (wc->status != IB_WC_SUCCESS)
		snprintf(s->why, sizeof(s->why), "B: message %u completed with %s", msg,
			 ib_wc_status_msg(wc->status));
	else if (wc->wr_id != msg || wc->opcode != IB_WC_RECV || wc->byte_len != s->run->size)
		snprintf(s->why, sizeof(s->why),
			 "B: completion wr_id %llu opcode %d bytes %u, expected %u %d %u",
			 wc->wr_id, wc->opcode, wc->byte_len, msg, IB_WC_RECV, s->run->size);
	if (s->why[0])
		return;
	mr_kt_server_verify(s, msg);
	s->received++;
	if (!s->why[0] && s->recvs_posted < s->count)
		mr_kt_server_post_recv(s);
}

/*
 * Writes leave no completion here: each ring slot holds the last message
 * written into it, which is checked once the client says how many completed.
 */
static u32 mr_kt_server_verify_ring(struct mr_kt_server *s, u32 messages)
{
	u32 ring = s->run->depth, slot, last;

	for (slot = 0; slot < min(messages, ring) && !s->why[0]; slot++) {
		last = slot + (messages - 1 - slot) / ring * ring;
		mr_kt_server_verify(s, last);
	}
	return s->why[0] ? 0 : min(messages, ring);
}

/* Until the client's done: checks receives as they come; then the ring. */
static int mr_kt_server_serve(struct mr_kt_server *s, struct socket *sock)
{
	struct mr_kt_run *run = s->run;
	unsigned long stalled = jiffies + msecs_to_jiffies(run->timeout_ms);
	struct mr_kt_wire_result result = { .magic = cpu_to_le32(MR_KT_MAGIC) };
	struct mr_kt_wire_done done;
	u32 messages = U32_MAX, verified;
	struct ib_wc wc[16];
	int i, n, err;

	while (!s->why[0] && (messages == U32_MAX || s->received < messages)) {
		n = ib_poll_cq(run->b.cq, ARRAY_SIZE(wc), wc);
		if (n < 0) {
			snprintf(s->why, sizeof(s->why), "B: poll CQ: %pe", ERR_PTR(n));
			break;
		}
		for (i = 0; i < n && !s->why[0]; i++)
			mr_kt_server_complete(s, &wc[i]);
		if (messages == U32_MAX) {
			err = mr_kt_ctl_recv(sock, &done, sizeof(done), MSG_DONTWAIT);
			if (!err) {
				messages = le32_to_cpu(done.messages);
				if (s->op->kind != MR_KT_SEND)
					break;
				n++;
			} else if (err != -EAGAIN) {
				snprintf(s->why, sizeof(s->why), "control: done: %pe",
					 ERR_PTR(err));
				return err;
			}
		}
		if (n) {
			stalled = jiffies + msecs_to_jiffies(run->timeout_ms);
		} else if (time_after(jiffies, stalled)) {
			snprintf(s->why, sizeof(s->why), "B: timeout: %u received, client said %d",
				 s->received, messages == U32_MAX ? -1 : (int)messages);
		} else if (fatal_signal_pending(current)) {
			snprintf(s->why, sizeof(s->why), "interrupted");
		} else {
			/* Writes complete nothing here: the client's "done" ends the wait. */
			mr_kt_cq_wait(run, &run->b, NULL, MR_KT_WAIT_MS);
		}
	}
	verified = s->received;
	if (!s->why[0] && s->op->kind == MR_KT_WRITE)
		verified = mr_kt_server_verify_ring(s, messages);
	pr_info("%sserver %s messages=%u verified=%u %s%s\n", run->tag, s->op->name,
		messages == U32_MAX ? 0 : messages, verified, s->why[0] ? "FAIL " : "PASS", s->why);
	result.verified = cpu_to_le32(verified);
	strscpy(result.why, s->why, sizeof(result.why));
	err = mr_kt_ctl_send(sock, &result, sizeof(result));
	return s->why[0] ? -EIO : err;
}

/* Takes the client's parameters, makes the QP, readies the ring; 0 or why it refused. */
static int mr_kt_server_setup(struct mr_kt_server *s, const struct mr_kt_wire_hello *hello,
			      u32 psn)
{
	struct mr_kt_run *run = s->run;
	struct mr_kt_end *b = &run->b;
	struct mr_kt_peer peer;
	u32 msg;

	if (le32_to_cpu(hello->magic) != MR_KT_MAGIC ||
	    le32_to_cpu(hello->version) != MR_KT_VERSION) {
		snprintf(s->why, sizeof(s->why), "control: not a client of this version");
		return -EPROTO;
	}
	s->op = mr_kt_op_find(hello->op);
	if (!s->op || s->op->kind == MR_KT_ATOMIC || s->op->imm) {
		snprintf(s->why, sizeof(s->why), "control: op '%.15s' is not send, write or read",
			 hello->op);
		return -EOPNOTSUPP;
	}
	run->size = le32_to_cpu(hello->size);
	s->count = le32_to_cpu(hello->count);
	/* Server slots: the ring (at least the client's depth for receives). */
	run->depth = max(le32_to_cpu(hello->ring), le32_to_cpu(hello->depth));
	run->salt = le64_to_cpu(hello->salt);
	if (!run->size || run->size > KMALLOC_MAX_SIZE || !s->count || !run->depth ||
	    run->depth > MR_KT_MAX_RING || (u64)run->depth * run->size > MR_KT_MAX_MEMORY) {
		snprintf(s->why, sizeof(s->why), "control: size %u ring %u out of bounds",
			 run->size, run->depth);
		return -EINVAL;
	}
	if (mr_kt_end_open(run, b, run->dev_name) || mr_kt_qp_create(run, b, s->why))
		return -EIO;
	for (msg = 0; msg < run->depth; msg++) {
		if (s->op->kind == MR_KT_READ)
			mr_kt_fill(&b->slots[msg], run->size,
				   mr_kt_msg_seed(run->salt, MR_KT_READ_ROUND, msg), 0);
		else
			mr_kt_fill(&b->slots[msg], run->size, mr_kt_msg_seed(run->salt, 0, msg),
				   ~0ULL);
		ib_dma_sync_single_for_device(b->dev, b->slots[msg].dma, run->size,
					      DMA_BIDIRECTIONAL);
	}
	peer.qpn = le32_to_cpu(hello->qpn);
	peer.psn = le32_to_cpu(hello->psn);
	peer.mtu = le32_to_cpu(hello->mtu);
	memcpy(peer.gid.raw, hello->gid, sizeof(peer.gid.raw));
	if (mr_kt_qp_ready(run, b, &peer, psn, s->why))
		return -EIO;
	/* Receives go up before the client hears of us: no RNR in a correct run. */
	while (s->op->kind == MR_KT_SEND && !s->why[0] && s->recvs_posted < run->depth &&
	       s->recvs_posted < s->count)
		mr_kt_server_post_recv(s);
	return s->why[0] ? -EIO : 0;
}

static int mr_kt_server_reply(struct mr_kt_server *s, struct socket *sock, int status, u32 psn)
{
	struct mr_kt_run *run = s->run;
	struct mr_kt_end *b = &run->b;
	struct mr_kt_wire_reply reply = {
		.magic = cpu_to_le32(MR_KT_MAGIC),
		.status = cpu_to_le32(status),
	};
	__le64 *addrs;
	u32 i;
	int err;

	if (status)
		return mr_kt_ctl_send(sock, &reply, sizeof(reply));
	reply.qpn = cpu_to_le32(b->qp->qp_num);
	reply.psn = cpu_to_le32(psn);
	reply.mtu = cpu_to_le32(b->port_attr.active_mtu);
	reply.rkey = cpu_to_le32(b->pd->unsafe_global_rkey);
	reply.ring = cpu_to_le32(run->depth);
	memcpy(reply.gid, b->gid->gid.raw, sizeof(reply.gid));
	addrs = kcalloc(run->depth, sizeof(*addrs), GFP_KERNEL);
	if (!addrs)
		return -ENOMEM;
	for (i = 0; i < run->depth; i++)
		addrs[i] = cpu_to_le64(b->slots[i].dma);
	err = mr_kt_ctl_send(sock, &reply, sizeof(reply));
	if (!err)
		err = mr_kt_ctl_send(sock, addrs, run->depth * sizeof(*addrs));
	kfree(addrs);
	return err;
}

/* One client connection, from its hello to the result. */
static int mr_kt_server_conn(struct mr_kt_run *run, struct socket *sock)
{
	struct mr_kt_server *s;
	struct mr_kt_wire_hello hello;
	u32 psn = get_random_u32() & 0xffffff;
	int err;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->run = run;
	err = mr_kt_ctl_recv(sock, &hello, sizeof(hello), 0);
	if (err) {
		pr_err("%sserver: hello: %pe\n", run->tag, ERR_PTR(err));
		goto out;
	}
	hello.op[sizeof(hello.op) - 1] = 0;
	err = mr_kt_server_setup(s, &hello, psn);
	if (err)
		pr_err("%sserver: refused the run: %s\n", run->tag, s->why);
	if (mr_kt_server_reply(s, sock, err, psn) && !err)
		err = -EPIPE;
	if (!err)
		err = mr_kt_server_serve(s, sock);
out:
	mr_kt_end_disconnect(&run->b);
	mr_kt_end_close(run, &run->b);
	kfree(s);
	return err;
}

/* ---- several flows at once: one kernel thread and one run copy each ---- */

struct mr_kt_flow_thread {
	struct mr_kt_run run;
	const struct mr_kt_op *op;
	struct socket *sock;	/* server: the flow's accepted connection */
	char tag[16];
	struct completion done;
	int err;
};

static int mr_kt_client_flow(struct mr_kt_run *run, const struct mr_kt_op *op)
{
	int err = mr_kt_end_open(run, &run->a, run->dev_name);

	if (!err)
		err = mr_kt_client_run(run, op);
	mr_kt_end_close(run, &run->a);
	return err;
}

static int mr_kt_flow_main(void *data)
{
	struct mr_kt_flow_thread *t = data;

	if (t->run.role == MR_KT_SERVER)
		t->err = mr_kt_server_conn(&t->run, t->sock);
	else
		t->err = mr_kt_client_flow(&t->run, t->op);
	kthread_complete_and_exit(&t->done, 0);
}

/* Runs every flow in its own thread and waits for all; 0 if all passed. */
static int mr_kt_flows_run(struct mr_kt_flow_thread *t, u32 n)
{
	struct task_struct *task;
	u32 i, passed = 0;

	for (i = 0; i < n; i++) {
		init_completion(&t[i].done);
		task = kthread_run(mr_kt_flow_main, &t[i], "mr_kt/%u", i);
		if (IS_ERR(task)) {
			t[i].err = PTR_ERR(task);
			complete(&t[i].done);
		}
	}
	for (i = 0; i < n; i++) {
		/*
		 * Each flow ends by its own timeout; waking up now and then keeps a
		 * long run from passing for a hung task (the guests panic on one,
		 * and the flows' own reports of what stalled would be lost).
		 */
		while (!wait_for_completion_timeout(&t[i].done, 10 * HZ))
			;
		if (!t[i].err)
			passed++;
	}
	pr_info("flows=%u passed=%u\n", n, passed);
	return passed == n ? 0 : -EIO;
}

static struct mr_kt_flow_thread *mr_kt_flows_alloc(struct mr_kt_run *run, u32 n)
{
	struct mr_kt_flow_thread *t = kvcalloc(n, sizeof(*t), GFP_KERNEL);
	u32 i;

	for (i = 0; t && i < n; i++) {
		t[i].run = *run;
		snprintf(t[i].tag, sizeof(t[i].tag), "flow%u ", i);
		t[i].run.tag = t[i].tag;
	}
	return t;
}

/* Accepts the run's flows, then serves them: in this thread if one, else in threads. */
static int mr_kt_server_run(struct mr_kt_run *run)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(run->ctl_port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	struct mr_kt_flow_thread *t;
	struct socket *listen;
	u32 i, accepted = 0;
	int err;

	t = mr_kt_flows_alloc(run, run->flows);
	if (!t)
		return -ENOMEM;
	err = sock_create_kern(run->net, AF_INET, SOCK_STREAM, IPPROTO_TCP, &listen);
	if (err)
		goto out;
	sock_set_reuseaddr(listen->sk);
	mr_kt_ctl_timeouts(listen, run->timeout_ms);
	err = kernel_bind(listen, (struct sockaddr *)&sin, sizeof(sin));
	if (!err)
		err = kernel_listen(listen, run->flows);
	for (i = 0; !err && i < run->flows; i++) {
		err = kernel_accept(listen, &t[i].sock, 0);
		if (!err) {
			mr_kt_ctl_timeouts(t[i].sock, run->timeout_ms);
			accepted++;
		}
	}
	sock_release(listen);
	if (err) {
		pr_err("server: %u of %u clients on port %u: %pe\n", accepted, run->flows,
		       run->ctl_port, ERR_PTR(err));
	} else if (run->flows == 1) {
		run->tag = "";
		err = mr_kt_server_conn(run, t[0].sock);
	} else {
		err = mr_kt_flows_run(t, run->flows);
	}
out:
	for (i = 0; i < accepted; i++)
		sock_release(t[i].sock);
	kvfree(t);
	return err;
}

/*
 * One op between this host's devices and the peer host's, as the run's role
 * says.  A client runs run->flows QPs on each device of its list.
 */
int mr_kt_remote_run(struct mr_kt_run *run, const struct mr_kt_op *op)
{
	struct mr_kt_flow_thread *t;
	char *list, *rest, *dev;
	u32 n = 0, i;
	int err;

	run->tag = "";
	if (run->role == MR_KT_SERVER)
		return mr_kt_server_run(run);
	if (op->kind == MR_KT_ATOMIC || op->imm) {
		pr_err("two-host runs carry send, write and read only, not %s\n", op->name);
		return -EINVAL;
	}
	list = kstrdup(run->dev_name, GFP_KERNEL);
	t = mr_kt_flows_alloc(run, MR_KT_MAX_FLOWS);
	err = -ENOMEM;
	if (!list || !t)
		goto out;
	err = -EINVAL;
	rest = list;
	while ((dev = strsep(&rest, ","))) {
		for (i = 0; i < run->flows; i++) {
			if (n == MR_KT_MAX_FLOWS) {
				pr_err("more than %d flows\n", MR_KT_MAX_FLOWS);
				goto out;
			}
			t[n].run.dev_name = dev;
			t[n++].op = op;
		}
	}
	if (n == 1) {
		run->dev_name = list;
		err = mr_kt_client_flow(run, op);
	} else {
		err = mr_kt_flows_run(t, n);
	}
out:
	kvfree(t);
	kfree(list);
	return err;
}
