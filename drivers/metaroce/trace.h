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
#include <rdma/metaroce-abi.h>

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

/*
 * A WQE a process put on a ring that the kernel refused (user_wqe_errors):
 * what it asked for and its first SGE, so the process's bug can be found.
 */
TRACE_EVENT(metaroce_user_wqe_error,
	TP_PROTO(const char *dev, u32 qpn, bool send, u64 wr_id, u32 status, u32 opcode,
		 u32 num_sge, u32 inline_len, const struct metaroce_user_sge *sge),
	TP_ARGS(dev, qpn, send, wr_id, status, opcode, num_sge, inline_len, sge),
	TP_STRUCT__entry(
		__string(dev, dev)
		__field(u32, qpn)
		__field(bool, send)
		__field(u64, wr_id)
		__field(u32, status)
		__field(u32, opcode)
		__field(u32, num_sge)
		__field(u32, inline_len)
		__field(u32, lkey)
		__field(u64, addr)
		__field(u32, length)
	),
	TP_fast_assign(
		METAROCE_ASSIGN_STR(dev, dev);
		__entry->qpn = qpn;
		__entry->send = send;
		__entry->wr_id = wr_id;
		__entry->status = status;
		__entry->opcode = opcode;
		__entry->num_sge = num_sge;
		__entry->inline_len = inline_len;
		__entry->lkey = sge ? sge->lkey : 0;
		__entry->addr = sge ? sge->addr : 0;
		__entry->length = sge ? sge->length : 0;
	),
	TP_printk("%s qp %u %s wr_id %#llx status %u opcode %u num_sge %u inline %u sge0 lkey %#x addr %#llx len %u",
		  __get_str(dev), __entry->qpn, __entry->send ? "send" : "recv", __entry->wr_id,
		  __entry->status, __entry->opcode, __entry->num_sge, __entry->inline_len,
		  __entry->lkey, __entry->addr, __entry->length)
);

#endif /* METAROCE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
