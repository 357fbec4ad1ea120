/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Every difference between the kernels we build for (6.1 and 6.12) lives here. */
#ifndef METAROCE_COMPAT_H
#define METAROCE_COMPAT_H

#include <linux/version.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/* 6.11 passed the uverbs attribute bundle instead of udata to create_cq. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define METAROCE_CREATE_CQ_ARG		struct uverbs_attr_bundle
static inline struct ib_udata *metaroce_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define METAROCE_CREATE_CQ_ARG		struct ib_udata
static inline struct ib_udata *metaroce_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/* 6.11 records whether a device name came from the user (rdma link add NAME). */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 11, 0)
static inline void ib_mark_name_assigned_by_user(struct ib_device *ibdev)
{
}
#endif

/* Transmit work runs in softirq context where the kernel has BH workqueues (6.9). */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
#define METAROCE_TX_WQ			system_bh_wq
#else
#define METAROCE_TX_WQ			system_highpri_wq
#endif

/* 6.10 dropped the source argument of __assign_str() in trace events. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define METAROCE_ASSIGN_STR(dst, src)	__assign_str(dst)
#else
#define METAROCE_ASSIGN_STR(dst, src)	__assign_str(dst, src)
#endif

/* 6.12 can carry unreadable fragments (device memory); before, every one was a page. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 12, 0)
#include <linux/skbuff.h>
static inline bool skb_frags_readable(const struct sk_buff *skb)
{
	return true;
}
#endif

#endif /* METAROCE_COMPAT_H */
