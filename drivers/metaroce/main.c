// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Module entry points and the "metaroce" rdma link type that creates devices. */

#include <linux/if_arp.h>
#include <linux/module.h>
#include <rdma/rdma_netlink.h>

#include "metaroce.h"

/* Serialises newlink so two requests cannot both pass the duplicate checks. */
static DEFINE_MUTEX(metaroce_link_lock);

static int metaroce_newlink_checks(const char *name, struct net_device *ndev)
{
	struct ib_device *other;

	if (ndev->flags & IFF_LOOPBACK || ndev->type != ARPHRD_ETHER) {
		pr_notice("%s: %s is not an Ethernet device\n", name, ndev->name);
		return -EOPNOTSUPP;
	}

	other = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	if (other) {
		ib_device_put(other);
		return -EEXIST;
	}

	other = ib_device_get_by_netdev(ndev, METAROCE_DRIVER_ID);
	if (other) {
		pr_notice("%s: %s already carries MetaRoCE device %s\n", name,
			  ndev->name, dev_name(&other->dev));
		ib_device_put(other);
		return -EBUSY;
	}
	return 0;
}

static int metaroce_newlink(const char *name, struct net_device *ndev)
{
	int err;

	mutex_lock(&metaroce_link_lock);
	err = metaroce_newlink_checks(name, ndev);
	if (!err)
		err = metaroce_dev_add(name, ndev);
	mutex_unlock(&metaroce_link_lock);
	return err;
}

static struct rdma_link_ops metaroce_link_ops = {
	.type = "metaroce",
	.newlink = metaroce_newlink,
};

static int __init metaroce_init(void)
{
	int err;

	err = metaroce_rx_init();
	if (err)
		return err;
	err = metaroce_dev_notifier_init();
	if (err) {
		metaroce_rx_exit();
		return err;
	}
	rdma_link_register(&metaroce_link_ops);
	return 0;
}

static void __exit metaroce_exit(void)
{
	/* No new links, then every device gone, then the sockets. */
	rdma_link_unregister(&metaroce_link_ops);
	ib_unregister_driver(METAROCE_DRIVER_ID);
	metaroce_dev_notifier_exit();
	metaroce_rx_exit();
}

late_initcall(metaroce_init);
module_exit(metaroce_exit);

MODULE_ALIAS_RDMA_LINK("metaroce");
MODULE_DESCRIPTION("MetaRoCE: RDMA over lossy Ethernet, multipath and out-of-order");
MODULE_LICENSE("Dual BSD/GPL");
