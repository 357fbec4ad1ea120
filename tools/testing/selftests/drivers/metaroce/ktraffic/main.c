// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* mr_ktraffic: loading it runs verified RC traffic between two RDMA devices and reports. */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inet.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/random.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "ktraffic.h"

static char *mr_kt_dev_a;
module_param_named(dev_a, mr_kt_dev_a, charp, 0444);
MODULE_PARM_DESC(dev_a, "RDMA device that sends, writes, reads, runs atomics; with role: this host's");

static char *mr_kt_dev_b;
module_param_named(dev_b, mr_kt_dev_b, charp, 0444);
MODULE_PARM_DESC(dev_b, "RDMA device at the other end (may be dev_a itself); unused with role");

static char *mr_kt_role;
module_param_named(role, mr_kt_role, charp, 0444);
MODULE_PARM_DESC(role, "two hosts: server (B, waits on port) or client (A, runs one op)");

static char *mr_kt_peer;
module_param_named(peer, mr_kt_peer, charp, 0444);
MODULE_PARM_DESC(peer, "client: the server's IPv4 address for the control connection");

static ushort mr_kt_port = 18515;
module_param_named(port, mr_kt_port, ushort, 0444);
MODULE_PARM_DESC(port, "two hosts: the control TCP port");

static unsigned int mr_kt_ring;
module_param_named(ring, mr_kt_ring, uint, 0444);
MODULE_PARM_DESC(ring, "client: server slots; Writes land in slot k % ring (default: depth)");

static unsigned int mr_kt_flows = 1;
module_param_named(flows, mr_kt_flows, uint, 0444);
MODULE_PARM_DESC(flows, "two hosts: client QPs per device of dev_a, each its own thread; server: the total");

static unsigned int mr_kt_duration_ms;
module_param_named(duration_ms, mr_kt_duration_ms, uint, 0444);
MODULE_PARM_DESC(duration_ms, "client: stop posting after this long (0: run count messages)");

static unsigned int mr_kt_interval_ms;
module_param_named(interval_ms, mr_kt_interval_ms, uint, 0444);
MODULE_PARM_DESC(interval_ms, "client: print the bytes done so far this often (0: never)");

static char *mr_kt_ops = "send,send_imm,write,write_imm,read,cmp_swp,fetch_add";
module_param_named(ops, mr_kt_ops, charp, 0444);
MODULE_PARM_DESC(ops, "ops to run, in order: send,send_imm,write,write_imm,read,cmp_swp,fetch_add");

static unsigned int mr_kt_size = 4096;
module_param_named(size, mr_kt_size, uint, 0444);
MODULE_PARM_DESC(size, "message bytes (atomics: always 8)");

static unsigned int mr_kt_count = 1000;
module_param_named(count, mr_kt_count, uint, 0444);
MODULE_PARM_DESC(count, "messages per op");

static unsigned int mr_kt_depth = 16;
module_param_named(depth, mr_kt_depth, uint, 0444);
MODULE_PARM_DESC(depth, "messages outstanding at most");

static bool mr_kt_ipv6;
module_param_named(ipv6, mr_kt_ipv6, bool, 0444);
MODULE_PARM_DESC(ipv6, "address the peers by their global IPv6 GIDs instead of IPv4 ones");

static unsigned int mr_kt_timeout_ms = 10000;
module_param_named(timeout_ms, mr_kt_timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "time each op may take, connection included");

static unsigned int mr_kt_inline_max;
module_param_named(inline_max, mr_kt_inline_max, uint, 0444);
MODULE_PARM_DESC(inline_max,
		 "post Sends and Writes of at most this size inline (the source is scribbled over right after posting)");

static bool mr_kt_resize_cq;
module_param_named(resize_cq, mr_kt_resize_cq, bool, 0444);
MODULE_PARM_DESC(resize_cq, "create each CQ small, then grow it with ib_resize_cq");

#define MR_KT_MAX_OPS		32

static int mr_kt_parse_ops(const struct mr_kt_op **list)
{
	char *copy, *rest, *name;
	int n = 0, err = 0;

	copy = kstrdup(mr_kt_ops ? mr_kt_ops : "", GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	rest = copy;
	while ((name = strsep(&rest, ",")) && !err) {
		if (n == MR_KT_MAX_OPS) {
			pr_err("ops: more than %d\n", MR_KT_MAX_OPS);
			err = -EINVAL;
			break;
		}
		list[n] = mr_kt_op_find(name);
		if (!list[n++]) {
			pr_err("ops: unknown op '%s'\n", name);
			err = -EINVAL;
		}
	}
	kfree(copy);
	return err ? err : n;
}

/* role= and peer= into the run: local, server or client. */
static int mr_kt_parse_role(struct mr_kt_run *run)
{
	if (!mr_kt_role || !*mr_kt_role) {
		run->role = MR_KT_LOCAL;
	} else if (!strcmp(mr_kt_role, "server")) {
		run->role = MR_KT_SERVER;
	} else if (!strcmp(mr_kt_role, "client")) {
		run->role = MR_KT_CLIENT;
		if (!mr_kt_peer || !in4_pton(mr_kt_peer, -1, (u8 *)&run->peer_ip, -1, NULL)) {
			pr_err("role=client needs peer=IPV4 of the server\n");
			return -EINVAL;
		}
	} else {
		pr_err("role '%s': server or client\n", mr_kt_role);
		return -EINVAL;
	}
	if (run->role != MR_KT_LOCAL && (!mr_kt_dev_a || mr_kt_ipv6)) {
		pr_err("two-host runs: dev_a names this host's device; IPv4 only\n");
		return -EINVAL;
	}
	if (mr_kt_ring > MR_KT_MAX_RING) {
		pr_err("ring %u: at most %d\n", mr_kt_ring, MR_KT_MAX_RING);
		return -EINVAL;
	}
	if (!mr_kt_flows || mr_kt_flows > MR_KT_MAX_FLOWS) {
		pr_err("flows %u: 1 to %d\n", mr_kt_flows, MR_KT_MAX_FLOWS);
		return -EINVAL;
	}
	run->dev_name = mr_kt_dev_a;
	run->flows = mr_kt_flows;
	run->net = current->nsproxy->net_ns;
	run->t0 = ktime_get();
	/* CLOCK_MONOTONIC, as /proc/uptime shows it: scripts align their events with it. */
	if (run->role == MR_KT_CLIENT)
		pr_info("clock t0_ms=%lld\n", ktime_to_ms(run->t0));
	run->ctl_port = mr_kt_port;
	run->ring = mr_kt_ring ? mr_kt_ring : mr_kt_depth;
	run->duration_ms = mr_kt_duration_ms;
	run->interval_ms = mr_kt_interval_ms;
	return 0;
}

static int mr_kt_check_params(void)
{
	if (!mr_kt_dev_a || (!mr_kt_dev_b && !mr_kt_role)) {
		pr_err("dev_a and dev_b name the two RDMA devices\n");
		return -EINVAL;
	}
	if (!mr_kt_size || mr_kt_size > KMALLOC_MAX_SIZE) {
		pr_err("size %u: 1 to %lu bytes\n", mr_kt_size, KMALLOC_MAX_SIZE);
		return -EINVAL;
	}
	if (!mr_kt_count || mr_kt_count > INT_MAX) {
		pr_err("count %u: 1 to %d\n", mr_kt_count, INT_MAX);
		return -EINVAL;
	}
	if (!mr_kt_depth || mr_kt_depth > MR_KT_MAX_DEPTH) {
		pr_err("depth %u: 1 to %d\n", mr_kt_depth, MR_KT_MAX_DEPTH);
		return -EINVAL;
	}
	if ((u64)mr_kt_depth * mr_kt_size > MR_KT_MAX_MEMORY) {
		pr_err("depth * size is more than %lu MiB\n", MR_KT_MAX_MEMORY >> 20);
		return -EINVAL;
	}
	if (!mr_kt_timeout_ms || mr_kt_timeout_ms > 3600 * MSEC_PER_SEC) {
		pr_err("timeout_ms %u: 1 to one hour\n", mr_kt_timeout_ms);
		return -EINVAL;
	}
	return 0;
}

static int mr_kt_run_all(struct mr_kt_run *run, const struct mr_kt_op **list, int n)
{
	enum ib_mtu mtu = min(run->a.port_attr.active_mtu, run->b.port_attr.active_mtu);
	int i, passed = 0;

	pr_info("%s (%pI4, GID %u) -> %s (%pI4, GID %u): path MTU %d, size=%u count=%u depth=%u\n",
		mr_kt_dev_a, run->a.gid->gid.raw + 12, run->a.gid->index, mr_kt_dev_b,
		run->b.gid->gid.raw + 12, run->b.gid->index, ib_mtu_enum_to_int(mtu), run->size,
		run->count, run->depth);
	for (i = 0; i < n; i++) {
		if (!mr_kt_op_run(run, list[i]))
			passed++;
		if (fatal_signal_pending(current))
			break;
	}
	pr_info("%d of %d ops passed\n", passed, n);
	return passed == n ? 0 : -EIO;
}

/* The whole test runs here; nothing is left behind, so it can be loaded again. */
static int __init mr_kt_init(void)
{
	const struct mr_kt_op **list;
	struct mr_kt_run *run;
	int n, err;

	err = mr_kt_check_params();
	if (err)
		return err;
	list = kcalloc(MR_KT_MAX_OPS, sizeof(*list), GFP_KERNEL);
	run = kzalloc(sizeof(*run), GFP_KERNEL);
	err = -ENOMEM;
	if (!list || !run)
		goto out;
	n = mr_kt_parse_ops(list);
	if (n < 0) {
		err = n;
		goto out;
	}

	run->size = mr_kt_size;
	run->count = mr_kt_count;
	run->depth = mr_kt_depth;
	run->timeout_ms = mr_kt_timeout_ms;
	run->inline_max = mr_kt_inline_max;
	run->resize_cq = mr_kt_resize_cq;
	run->ipv6 = mr_kt_ipv6;
	run->salt = get_random_u64();
	run->a.role = "A";
	run->b.role = "B";
	err = mr_kt_parse_role(run);
	if (err)
		goto out;
	if (run->role != MR_KT_LOCAL) {
		if (n != 1 && run->role == MR_KT_CLIENT) {
			pr_err("role=client runs one op, not %d\n", n);
			err = -EINVAL;
		} else {
			err = mr_kt_remote_run(run, list[0]);
		}
		goto out;
	}
	err = mr_kt_end_open(run, &run->a, mr_kt_dev_a);
	if (!err)
		err = mr_kt_end_open(run, &run->b, mr_kt_dev_b);
	if (!err)
		err = mr_kt_run_all(run, list, n);
	mr_kt_end_close(run, &run->b);
	mr_kt_end_close(run, &run->a);
out:
	kfree(run);
	kfree(list);
	return err;
}

/* Nothing to do: init kept nothing. */
static void __exit mr_kt_exit(void)
{
}

module_init(mr_kt_init);
module_exit(mr_kt_exit);

MODULE_DESCRIPTION("Verified kernel RDMA traffic (Send, Write, Read, atomics) between two devices");
MODULE_LICENSE("Dual BSD/GPL");
