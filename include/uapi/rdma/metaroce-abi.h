/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/* User ABI shared by the metaroce kernel module and its rdma-core provider. */
#ifndef METAROCE_ABI_USER_H
#define METAROCE_ABI_USER_H

#include <linux/types.h>

/*
 * Driver id reported by a MetaRoCE ib_device (RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID).
 *
 * enum rdma_driver_id has no private range, and reusing another driver's id
 * would make that driver's provider claim our devices (and its
 * ib_unregister_driver() remove them).  Device names are chosen freely by the
 * user, so the provider cannot match on a name prefix either.  We therefore use
 * one value far above the upstream enum ("MR" in ASCII); the provider matches it
 * with VERBS_DRIVER_ID(METAROCE_DRIVER_ID).
 */
#define METAROCE_DRIVER_ID		0x4d52

/* Default UDP destination port; RoCEv2 owns 4791, so rxe can run beside us. */
#define METAROCE_UDP_PORT_DEFAULT	4793

/* ABI version of the structures below; bumped on any incompatible change. */
#define METAROCE_UVERBS_ABI_VERSION	1

#endif /* METAROCE_ABI_USER_H */
