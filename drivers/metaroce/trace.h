/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Tracepoints of the data path: every MetaRoCE packet sent and received, drops
 * by reason, connection state changes.  `perf trace -e metaroce:*` or
 * /sys/kernel/tracing/events/metaroce/ show them.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM metaroce

#if !defined(METAROCE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define METAROCE_TRACE_H

#include <linux/tracepoint.h>

#include "compat.h"
#include "core/wire.h"

DECLARE_EVENT_CLASS(metaroce_pkt_class,
	TP_PROTO(const char *dev, const struct mr_pkt *pkt, u16 sport),
	TP_ARGS(dev, pkt, sport),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(u8, opcode)
		__field(u16, flags)
		__field(u32, conn_id)
		__field(u16, path_id)
		__field(u16, payload_len)
		__field(u32, psn)
		__field(u32, stream)
		__field(u32, msn)
		__field(u32, offset)
		__field(u16, sport)
	),
	TP_fast_assign(
		METAROCE_ASSIGN_STR(dev, dev);
		__entry->opcode = pkt->bth.opcode;
		__entry->flags = pkt->bth.flags;
		__entry->conn_id = pkt->bth.conn_id;
		__entry->path_id = pkt->bth.path_id;
		__entry->payload_len = pkt->bth.payload_len;
		__entry->psn = pkt->bth.psn;
		__entry->stream = pkt->bth.stream;
		__entry->msn = pkt->bth.msn;
		__entry->offset = pkt->bth.offset;
		__entry->sport = sport;
	),
	TP_printk("%s op=0x%02x flags=0x%x conn=0x%08x path=%u psn=%u stream=%u msn=%u off=%u len=%u sport=%u",
		  __get_str(dev), __entry->opcode, __entry->flags, __entry->conn_id,
		  __entry->path_id, __entry->psn, __entry->stream, __entry->msn,
		  __entry->offset, __entry->payload_len, __entry->sport)
);

DEFINE_EVENT(metaroce_pkt_class, metaroce_rx,
	TP_PROTO(const char *dev, const struct mr_pkt *pkt, u16 sport),
	TP_ARGS(dev, pkt, sport));

DEFINE_EVENT(metaroce_pkt_class, metaroce_tx,
	TP_PROTO(const char *dev, const struct mr_pkt *pkt, u16 sport),
	TP_ARGS(dev, pkt, sport));

TRACE_EVENT(metaroce_rx_drop,
	TP_PROTO(const char *dev, const char *reason),
	TP_ARGS(dev, reason),
	TP_STRUCT__entry(
		__string(dev, dev)
		__string(reason, reason)
	),
	TP_fast_assign(
		METAROCE_ASSIGN_STR(dev, dev);
		METAROCE_ASSIGN_STR(reason, reason);
	),
	TP_printk("%s %s", __get_str(dev), __get_str(reason))
);

#endif /* METAROCE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
