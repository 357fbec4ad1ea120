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
#include "core/path.h"
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

/* A sending path after an ACK of it was taken in ([MR-CC-1] [MR-REL-3] [MR-PATH-5]). */
TRACE_EVENT(metaroce_path,
	TP_PROTO(const char *dev, u32 conn_id, u32 path, const struct mr_path_tx *p, u64 rto_ns),
	TP_ARGS(dev, conn_id, path, p, rto_ns),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(u32, conn_id)
		__field(u8, path)
		__field(u8, state)
		__field(u32, cwnd)
		__field(u32, outstanding)
		__field(u32, srtt_us)
		__field(u32, min_rtt_us)
		__field(u32, rto_us)
		__field(u32, stall_floor_us)
	),
	TP_fast_assign(
		METAROCE_ASSIGN_STR(dev, dev);
		__entry->conn_id = conn_id;
		__entry->path = path;
		__entry->state = p->state;
		__entry->cwnd = mr_cc_window(&p->cc);
		__entry->outstanding = p->outstanding;
		__entry->srtt_us = div_u64(p->rtt.srtt_ns, 1000);
		__entry->min_rtt_us = div_u64(p->rtt.min_rtt_ns, 1000);
		__entry->rto_us = div_u64(rto_ns, 1000);
		__entry->stall_floor_us = div_u64(p->stall_floor_ns, 1000);
	),
	TP_printk("%s conn=0x%08x path=%u state=%u cwnd=%u outstanding=%u srtt_us=%u min_rtt_us=%u rto_us=%u stall_floor_us=%u",
		  __get_str(dev), __entry->conn_id, __entry->path, __entry->state,
		  __entry->cwnd, __entry->outstanding, __entry->srtt_us, __entry->min_rtt_us,
		  __entry->rto_us, __entry->stall_floor_us)
);

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
