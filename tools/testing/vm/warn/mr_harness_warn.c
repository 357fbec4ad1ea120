// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Test-only module that WARNs when loaded, to prove the guest harness fails such a run. */

#include <linux/bug.h>
#include <linux/module.h>

static int __init mr_harness_warn_init(void)
{
	WARN(1, "mr_harness_warn: deliberate warning for the harness self-test\n");
	return 0;
}

static void __exit mr_harness_warn_exit(void)
{
}

module_init(mr_harness_warn_init);
module_exit(mr_harness_warn_exit);
MODULE_DESCRIPTION("metaroce test harness self-test: a module that warns");
MODULE_LICENSE("Dual BSD/GPL");
