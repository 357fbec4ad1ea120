// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ib_device: creation over a netdev, attributes, port state, tear-down. */

#include <linux/etherdevice.h>
#include <linux/random.h>
#include <linux/uaccess.h>
#include <net/addrconf.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>

#include "metaroce.h"
#include "core/handshake.h"

static enum ib_mtu metaroce_mtu_from_netdev(unsigned int ndev_mtu)
{
	int room = (int)ndev_mtu - METAROCE_MAX_OVERHEAD;
	enum ib_mtu mtu;

	for (mtu = IB_MTU_4096; mtu > IB_MTU_256; mtu--)
		if (ib_mtu_enum_to_int(mtu) <= room)
			break;
	return mtu;
}

/* The port follows the netdev's carrier, admin state and MTU; true if the state changed. */
static bool metaroce_port_refresh(struct metaroce_dev *mdev)
{
	enum ib_port_state old, new = IB_PORT_DOWN;
	struct net_device *ndev;
	enum ib_mtu mtu = IB_MTU_256;
	u32 pmtu6 = MR_MIN_PMTU, pmtu4 = MR_MIN_PMTU;

	rcu_read_lock();
	ndev = rcu_dereference(mdev->ndev);
	if (ndev) {
		unsigned int ndev_mtu = READ_ONCE(ndev->mtu);

		if (netif_running(ndev) && netif_carrier_ok(ndev))
			new = IB_PORT_ACTIVE;
		mtu = metaroce_mtu_from_netdev(ndev_mtu);
		/* [MR-CONN-6] what a frame carries after each family's IP header */
		pmtu6 = mr_pmtu_offer(ndev_mtu, sizeof(struct ipv6hdr), METAROCE_MAX_WIRE_PMTU);
		pmtu4 = mr_pmtu_offer(ndev_mtu, sizeof(struct iphdr), METAROCE_MAX_WIRE_PMTU);
	}
	rcu_read_unlock();

	spin_lock_bh(&mdev->port_lock);
	old = mdev->port_state;
	mdev->port_state = new;
	mdev->active_mtu = mtu;
	mdev->wire_pmtu[0] = pmtu6;
	mdev->wire_pmtu[1] = pmtu4;
	spin_unlock_bh(&mdev->port_lock);
	return old != new;
}

/*
 * [MR-CC-9] The netdev's link speed, for the receive capacity the rate hints
 * share out when the link_mbps parameter is 0; 0 when the netdev reports none
 * (dummy, virtio-net without a configured speed).  Under RTNL.
 */
static void metaroce_speed_refresh(struct metaroce_dev *mdev, struct net_device *ndev)
{
	struct ethtool_link_ksettings ks = {};
	u32 mbps = 0;

	ASSERT_RTNL();
	if (!__ethtool_get_link_ksettings(ndev, &ks) && ks.base.speed != (u32)SPEED_UNKNOWN)
		mbps = ks.base.speed;
	WRITE_ONCE(mdev->link_mbps, mbps);
}

/*
 * Netdev events call this while the device is registered; events are queued
 * to the core, which flushes them when the device is unregistered.
 */
static void metaroce_port_update(struct metaroce_dev *mdev)
{
	struct ib_event ev = {};

	if (!metaroce_port_refresh(mdev))
		return;
	ev.device = &mdev->ibdev;
	ev.element.port_num = 1;
	ev.event = READ_ONCE(mdev->port_state) == IB_PORT_ACTIVE ?
		IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
	ib_dispatch_event(&ev);
}

/*
 * Let go of the netdev and of its namespace's sockets.  Runs when the netdev
 * is unregistered or moved to another namespace (under RTNL, so the netdev is
 * never kept waiting for us) and again, as a no-op, when the device is freed.
 */
static void metaroce_dev_detach(struct metaroce_dev *mdev)
{
	struct net_device *ndev;

	if (test_and_set_bit(METAROCE_DEV_DETACHED, &mdev->flags))
		return;

	metaroce_net_unlist_dev(mdev);
	ndev = rcu_replace_pointer(mdev->ndev, NULL, true);
	synchronize_net();
	metaroce_net_put(mdev->mnet);
	mdev->mnet = NULL;
	netdev_put(ndev, &mdev->ndev_tracker);
	metaroce_port_refresh(mdev);
}

static int metaroce_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
				 struct ib_udata *udata)
{
	/*
	 * No driver-specific request or response is defined: a newer provider
	 * may send zeros for what we do not know, and reads zeros back.
	 */
	if (udata && udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	if (udata && udata->outlen && clear_user(udata->outbuf, udata->outlen))
		return -EFAULT;

	memset(attr, 0, sizeof(*attr));
	attr->sys_image_guid = ibdev->node_guid;
	attr->vendor_id = METAROCE_VENDOR_ID;
	attr->vendor_part_id = METAROCE_VENDOR_PART_ID;
	attr->hw_ver = METAROCE_HW_VER;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;	/* rdma link delete */
	attr->max_mr_size = U64_MAX;
	attr->page_size_cap = PAGE_SIZE;
	attr->max_qp = METAROCE_MAX_QP;
	attr->max_qp_wr = METAROCE_MAX_QP_WR;
	attr->max_send_sge = METAROCE_MAX_SGE;
	attr->max_recv_sge = METAROCE_MAX_SGE;
	attr->max_sge_rd = METAROCE_MAX_SGE;
	attr->max_cq = METAROCE_MAX_CQ;
	attr->max_cqe = METAROCE_MAX_CQE;
	attr->max_mr = METAROCE_MAX_MR;
	attr->max_pd = METAROCE_MAX_PD;
	attr->max_ah = METAROCE_MAX_AH;
	attr->max_pkeys = 1;
	attr->max_srq = METAROCE_MAX_SRQ;
	attr->max_srq_wr = METAROCE_MAX_QP_WR;
	attr->max_srq_sge = METAROCE_MAX_SGE;
	/*
	 * Reads and atomics in flight per QP: the engine keeps at most
	 * MR_STREAM_MAX_MSGS messages open per stream.  Atomics run with
	 * cmpxchg on host memory: atomic against this device's own
	 * operations, not against the CPU's plain stores.
	 */
	attr->max_qp_rd_atom = METAROCE_MAX_RD_ATOM;
	attr->max_qp_init_rd_atom = METAROCE_MAX_RD_ATOM;
	attr->max_res_rd_atom = METAROCE_MAX_RD_ATOM * METAROCE_MAX_QP;
	attr->atomic_cap = IB_ATOMIC_HCA;
	/*
	 * What the device does, and nothing more: a modify naming the QP's
	 * current state is checked against it, port changes raise
	 * IB_EVENT_PORT_ACTIVE and _ERR, the system image GUID is the node
	 * GUID, a Send without a receive is answered with an RNR NAK, FRWR,
	 * memory windows of type 1 and 2B (user QPs; mw.c), SRQ resize.
	 * Not: checksum offloads, P_Key and Q_Key violation counters (there
	 * is no PMA), XRC.
	 */
	attr->device_cap_flags = IB_DEVICE_CURR_QP_STATE_MOD | IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_SYS_IMAGE_GUID | IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_MEM_MGT_EXTENSIONS | IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B | IB_DEVICE_SRQ_RESIZE;
	attr->max_mw = METAROCE_MAX_MR;	/* windows and MRs share the key table */
	attr->max_fast_reg_page_list_len = METAROCE_MAX_FRWR_PAGES;
	attr->local_ca_ack_delay = 15;
	return 0;
}

static int metaroce_query_port(struct ib_device *ibdev, u32 port, struct ib_port_attr *attr)
{
	struct metaroce_dev *mdev = to_mdev(ibdev);
	struct net_device *ndev;
	int err = 0;

	/* ib_query_port() has zeroed attr. */
	attr->gid_tbl_len = METAROCE_GID_TABLE_LEN;
	attr->pkey_tbl_len = 1;
	attr->max_msg_sz = METAROCE_MAX_MSG_SIZE;
	attr->max_mtu = IB_MTU_4096;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_vl_num = 1;

	spin_lock_bh(&mdev->port_lock);
	attr->state = mdev->port_state;
	attr->active_mtu = mdev->active_mtu;
	spin_unlock_bh(&mdev->port_lock);
	attr->phys_state = attr->state == IB_PORT_ACTIVE ?
		IB_PORT_PHYS_STATE_LINK_UP : IB_PORT_PHYS_STATE_DISABLED;

	rcu_read_lock();
	ndev = rcu_dereference(mdev->ndev);
	if (ndev)
		dev_hold(ndev);
	rcu_read_unlock();
	if (ndev) {
		err = ib_get_eth_speed(ibdev, port, &attr->active_speed, &attr->active_width);
		dev_put(ndev);
	}
	return err;
}

static int metaroce_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index > 0)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static int metaroce_get_port_immutable(struct ib_device *ibdev, u32 port,
				       struct ib_port_immutable *immutable)
{
	struct ib_port_attr attr;
	int err;

	err = ib_query_port(ibdev, port, &attr);
	if (err)
		return err;
	immutable->pkey_tbl_len = attr.pkey_tbl_len;
	immutable->gid_tbl_len = attr.gid_tbl_len;
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer metaroce_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static void metaroce_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%d", METAROCE_UVERBS_ABI_VERSION);
}

/* Last op the core calls on a device: after it nothing of ours may remain. */
static void metaroce_dealloc_driver(struct ib_device *ibdev)
{
	struct metaroce_dev *mdev = to_mdev(ibdev);

	/* No packet can reach the connections from here, nor make new ones. */
	rtnl_lock();
	metaroce_net_unlist_dev(mdev);
	rtnl_unlock();
	metaroce_conn_dev_close_all(mdev);
	rtnl_lock();
	metaroce_dev_detach(mdev);
	rtnl_unlock();
	metaroce_conn_dev_cleanup(mdev);
	WARN_ON_ONCE(!xa_empty(&mdev->qps));
	WARN_ON_ONCE(!xa_empty(&mdev->mrs));
	xa_destroy(&mdev->qps);
	xa_destroy(&mdev->mrs);
	metaroce_stats_free(mdev);
}

static struct rdma_hw_stats *metaroce_alloc_hw_port_stats(struct ib_device *ibdev, u32 port)
{
	return metaroce_stats_alloc();
}

/* rdma statistic: the device's counters, then its connections' engine counters. */
static int metaroce_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
				 u32 port, int index)
{
	struct metaroce_dev *mdev = to_mdev(ibdev);

	metaroce_stats_sum(mdev, stats->value);
	metaroce_conn_eng_stats(mdev, &stats->value[METAROCE_NR_COUNTERS]);
	stats->value[METAROCE_STAT_CAPACITY_MBPS] = metaroce_capacity_mbps(mdev);
	return METAROCE_NR_STATS;
}

static const struct ib_device_ops metaroce_device_ops = {
	.owner = THIS_MODULE,
	.driver_id = METAROCE_DRIVER_ID,
	.uverbs_abi_ver = METAROCE_UVERBS_ABI_VERSION,

	.alloc_hw_port_stats = metaroce_alloc_hw_port_stats,
	.dealloc_driver = metaroce_dealloc_driver,
	.get_dev_fw_str = metaroce_get_dev_fw_str,
	.get_hw_stats = metaroce_get_hw_stats,
	.get_link_layer = metaroce_get_link_layer,
	.get_port_immutable = metaroce_get_port_immutable,
	.query_device = metaroce_query_device,
	.query_pkey = metaroce_query_pkey,
	.query_port = metaroce_query_port,
};

int metaroce_dev_add(const char *name, struct net_device *ndev)
{
	struct net *mnet_net = dev_net(ndev);
	struct metaroce_dev *mdev;
	struct ib_device *ibdev;
	int err;

	mdev = ib_alloc_device(metaroce_dev, ibdev);
	if (!mdev)
		return -ENOMEM;
	ibdev = &mdev->ibdev;

	/* Before anything can fail: dealloc_driver must find a consistent device. */
	INIT_HLIST_NODE(&mdev->mnet_node);
	spin_lock_init(&mdev->port_lock);
	mdev->port_state = IB_PORT_DOWN;
	mdev->active_mtu = IB_MTU_256;
	mdev->wire_pmtu[0] = MR_MIN_PMTU;
	mdev->wire_pmtu[1] = MR_MIN_PMTU;
	xa_init_flags(&mdev->qps, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_BH);
	/*
	 * QPNs start at a random place: a device made again on the same
	 * netdev (same GUID) must not hand out the QPNs its predecessor's
	 * peers may still remember, or ib_cm there rejects the new
	 * connections as stale.
	 */
	mdev->next_qpn = METAROCE_FIRST_QPN +
			 get_random_u32() % (METAROCE_MAX_QPN - METAROCE_FIRST_QPN);
	xa_init_flags(&mdev->mrs, XA_FLAGS_ALLOC1);
	spin_lock_init(&mdev->mw_lock);
	netdev_hold(ndev, &mdev->ndev_tracker, GFP_KERNEL);
	rcu_assign_pointer(mdev->ndev, ndev);
	ib_set_device_ops(ibdev, &metaroce_device_ops);
	ib_set_device_ops(ibdev, &metaroce_verbs_ops);
	ib_set_device_ops(ibdev, &metaroce_uverbs_ops);
	metaroce_uverbs_cmds(ibdev);

	metaroce_conn_dev_init(mdev);
	err = metaroce_stats_init(mdev);
	if (err)
		goto err_dealloc;

	mdev->mnet = metaroce_net_get(mnet_net);
	if (IS_ERR(mdev->mnet)) {
		err = PTR_ERR(mdev->mnet);
		mdev->mnet = NULL;
		goto err_dealloc;
	}

	strscpy(ibdev->node_desc, "metaroce", sizeof(ibdev->node_desc));
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	ibdev->local_dma_lkey = 0;
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid, ndev->dev_addr);
	ib_mark_name_assigned_by_user(ibdev);

	err = ib_device_set_netdev(ibdev, ndev, 1);
	if (err)
		goto err_dealloc;
	metaroce_port_refresh(mdev);

	err = ib_register_device(ibdev, name, NULL);
	if (err == -ENFILE)	/* the core's word for "name taken" */
		err = -EEXIST;
	if (err)
		goto err_dealloc;
	/* From here the device may be unregistered and freed at any time. */

	/*
	 * The netdev may have been unregistered (or moved) after the netlink
	 * layer found it but before ib_device_set_netdev() made us findable
	 * by our notifier: then nobody would let go of it.  Under RTNL the
	 * notifier cannot run, so this check closes the window.
	 */
	rtnl_lock();
	if (ndev->reg_state != NETREG_REGISTERED || !net_eq(dev_net(ndev), mnet_net)) {
		rtnl_unlock();
		ib_unregister_device(ibdev);
		return -ENODEV;
	}
	metaroce_speed_refresh(mdev, ndev);
	metaroce_net_list_dev(mdev);
	rtnl_unlock();
	return 0;

err_dealloc:
	ib_dealloc_device(ibdev);
	return err;
}

/* The netdev under a device changed: its port follows; unregistered, the device goes. */
static int metaroce_netdev_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct metaroce_dev *mdev;

	mdev = metaroce_dev_from_netdev(ndev);
	if (!mdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UNREGISTER:	/* also sent when the netdev changes namespace */
		metaroce_port_update(mdev);
		metaroce_dev_detach(mdev);
		ib_unregister_device_queued(&mdev->ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
	case NETDEV_CHANGEMTU:
		metaroce_speed_refresh(mdev, ndev);
		metaroce_port_update(mdev);
		break;
	default:
		break;
	}
	ib_device_put(&mdev->ibdev);
	return NOTIFY_DONE;
}

static struct notifier_block metaroce_netdev_notifier = {
	.notifier_call = metaroce_netdev_event,
};

/* The netdev events every device follows: from module load until unload. */
int metaroce_dev_notifier_init(void)
{
	return register_netdevice_notifier(&metaroce_netdev_notifier);
}

void metaroce_dev_notifier_exit(void)
{
	unregister_netdevice_notifier(&metaroce_netdev_notifier);
}
