// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* mr_ktraffic: loading it runs verified RC traffic between two RDMA devices and reports. */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/random.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "ktraffic.h"

static char *mr_kt_dev_a;
module_param_named(dev_a, mr_kt_dev_a, charp, 0444);
MODULE_PARM_DESC(dev_a, "RDMA device that sends, writes, reads and runs atomics (e.g. rxe0)");

static char *mr_kt_dev_b;
module_param_named(dev_b, mr_kt_dev_b, charp, 0444);
MODULE_PARM_DESC(dev_b, "RDMA device at the other end (may be dev_a itself)");

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

#define MR_KT_MAX_OPS		32
#define MR_KT_MAX_DEPTH		1024
#define MR_KT_MAX_MEMORY	(256UL << 20)	/* message buffers per device */

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

static int mr_kt_check_params(void)
{
	if (!mr_kt_dev_a || !mr_kt_dev_b) {
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
	run->ipv6 = mr_kt_ipv6;
	run->salt = get_random_u64();
	run->a.role = "A";
	run->b.role = "B";
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
