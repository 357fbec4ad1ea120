// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Parse and build MetaRoCE packets; nothing here trusts a length it has not checked. */
#include "codec.h"

MR_STATIC_ASSERT(MR_BTH_LEN == 32, "BTH is 32 bytes");
MR_STATIC_ASSERT(MR_ACKH_LEN == 16 + MR_SACK_BITS / 8, "ACKH is 48 bytes");
MR_STATIC_ASSERT(MR_MAX_HDR_LEN == 208, "largest header is a full ACK");

static u16 mr_get16(const u8 *p)
{
	return (u16)((p[0] << 8) | p[1]);
}

static u32 mr_get32(const u8 *p)
{
	return ((u32)p[0] << 24) | ((u32)p[1] << 16) | ((u32)p[2] << 8) | p[3];
}

/* Four SACK bytes as one word: byte j holds bits 8j to 8j + 7, [MR-ACK-2]. */
static u32 mr_get32le(const u8 *p)
{
	return ((u32)p[3] << 24) | ((u32)p[2] << 16) | ((u32)p[1] << 8) | p[0];
}

static u64 mr_get64(const u8 *p)
{
	return ((u64)mr_get32(p) << 32) | mr_get32(p + 4);
}

static void mr_put16(u8 *p, u16 v)
{
	p[0] = (u8)(v >> 8);
	p[1] = (u8)v;
}

static void mr_put32(u8 *p, u32 v)
{
	p[0] = (u8)(v >> 24);
	p[1] = (u8)(v >> 16);
	p[2] = (u8)(v >> 8);
	p[3] = (u8)v;
}

static void mr_put32le(u8 *p, u32 v)
{
	p[0] = (u8)v;
	p[1] = (u8)(v >> 8);
	p[2] = (u8)(v >> 16);
	p[3] = (u8)(v >> 24);
}

static void mr_put64(u8 *p, u64 v)
{
	mr_put32(p, (u32)(v >> 32));
	mr_put32(p + 4, (u32)v);
}

/* What an opcode is and may carry: one look-up per packet instead of a switch per question. */
#define MR_OPI_KNOWN	0x01
#define MR_OPI_SEQ	0x02	/* sequenced on its path */
#define MR_OPI_PAYLOAD	0x04	/* may carry a payload */
#define MR_OPI_MULTI	0x08	/* a message of one or more packets: msg_len and offset */

struct mr_opcode_info {
	u16 flags;	/* the flags it may carry, [MR-WIRE-4] */
	u8 fixed_len;	/* its own header after the BTH */
	u8 props;	/* MR_OPI_* */
};

/* [MR-WIRE-4] sequenced packets; the requester's messages are the ones it probes, [MR-REL-11] */
#define MR_SEQ_FLAGS	(MR_F_ACK_REQ | MR_F_LAST | MR_F_RETX)
#define MR_REQ_FLAGS	(MR_SEQ_FLAGS | MR_F_MSG_PROBE)

static const struct mr_opcode_info mr_opcodes[MR_OP_CLOSE_ACK + 1] = {
	[MR_OP_SEND] = { MR_REQ_FLAGS | MR_F_SOLICITED | MR_F_IMM | MR_F_INV, MR_MSGH_LEN,
			 MR_OPI_KNOWN | MR_OPI_SEQ | MR_OPI_PAYLOAD | MR_OPI_MULTI },
	[MR_OP_WRITE] = { MR_REQ_FLAGS | MR_F_SOLICITED | MR_F_IMM, MR_RETH_LEN,
			  MR_OPI_KNOWN | MR_OPI_SEQ | MR_OPI_PAYLOAD | MR_OPI_MULTI },
	[MR_OP_READ_REQ] = { MR_REQ_FLAGS, MR_RETH_LEN, MR_OPI_KNOWN | MR_OPI_SEQ },
	[MR_OP_READ_RESP] = { MR_SEQ_FLAGS, MR_MSGH_LEN,
			      MR_OPI_KNOWN | MR_OPI_SEQ | MR_OPI_PAYLOAD | MR_OPI_MULTI },
	[MR_OP_ATOMIC_CAS] = { MR_REQ_FLAGS, MR_ATOMICETH_LEN, MR_OPI_KNOWN | MR_OPI_SEQ },
	[MR_OP_ATOMIC_FADD] = { MR_REQ_FLAGS, MR_ATOMICETH_LEN, MR_OPI_KNOWN | MR_OPI_SEQ },
	[MR_OP_ATOMIC_RESP] = { MR_SEQ_FLAGS, MR_ATOMICAH_LEN, MR_OPI_KNOWN | MR_OPI_SEQ },
	[MR_OP_UD_SEND] = { MR_F_LAST | MR_F_SOLICITED | MR_F_IMM, MR_UDH_LEN,
			    MR_OPI_KNOWN | MR_OPI_PAYLOAD },
	[MR_OP_ACK] = { 0, MR_ACKH_LEN, MR_OPI_KNOWN },
	[MR_OP_NAK] = { 0, MR_NAKH_LEN, MR_OPI_KNOWN },
	[MR_OP_PROBE] = { MR_F_ACK_REQ | MR_F_RETX, 0, MR_OPI_KNOWN | MR_OPI_SEQ },
	[MR_OP_CONNECT_REQ] = { 0, MR_CONNH_LEN, MR_OPI_KNOWN },
	[MR_OP_CONNECT_RESP] = { 0, MR_CONNH_LEN, MR_OPI_KNOWN },
	[MR_OP_CLOSE] = { 0, MR_CLOSEH_LEN, MR_OPI_KNOWN },
	[MR_OP_CLOSE_ACK] = { 0, MR_CLOSEH_LEN, MR_OPI_KNOWN },
};

/* The opcode's entry, or NULL for an unknown opcode. */
static const struct mr_opcode_info *mr_opcode_info(u8 opcode)
{
	if (opcode > MR_OP_CLOSE_ACK || !(mr_opcodes[opcode].props & MR_OPI_KNOWN))
		return NULL;
	return &mr_opcodes[opcode];
}

bool mr_opcode_known(u8 opcode)
{
	return mr_opcode_info(opcode);
}

bool mr_opcode_sequenced(u8 opcode)
{
	const struct mr_opcode_info *oi = mr_opcode_info(opcode);

	return oi && (oi->props & MR_OPI_SEQ);
}

bool mr_opcode_has_payload(u8 opcode)
{
	const struct mr_opcode_info *oi = mr_opcode_info(opcode);

	return oi && (oi->props & MR_OPI_PAYLOAD);
}

/* Flags each opcode may carry, [MR-WIRE-4]; 0xffff marks an unknown opcode. */
u16 mr_opcode_allowed_flags(u8 opcode)
{
	const struct mr_opcode_info *oi = mr_opcode_info(opcode);

	return oi ? oi->flags : 0xffff;
}

static u32 mr_hdr_len(const struct mr_opcode_info *oi, u8 opcode, u16 flags, u8 n_msg_acks)
{
	u32 len = MR_BTH_LEN + oi->fixed_len;

	if (flags & MR_F_IMM)
		len += MR_IMMH_LEN;
	if (flags & MR_F_INV)
		len += MR_IETH_LEN;
	if (opcode == MR_OP_ACK)
		len += (u32)n_msg_acks * MR_MSGACK_LEN;
	return len;
}

u32 mr_pkt_header_len(u8 opcode, u16 flags, u8 n_msg_acks)
{
	const struct mr_opcode_info *oi = mr_opcode_info(opcode);

	return oi ? mr_hdr_len(oi, opcode, flags, n_msg_acks) : 0;
}

u32 mr_pkt_msg_len(const struct mr_pkt *pkt)
{
	switch (pkt->bth.opcode) {
	case MR_OP_SEND:
	case MR_OP_READ_RESP:
		return pkt->msgh.msg_len;
	case MR_OP_WRITE:
		return pkt->reth.length;
	default:
		return pkt->bth.payload_len;
	}
}

static bool mr_flags_valid(const struct mr_opcode_info *oi, u16 flags)
{
	if (flags & ~oi->flags)
		return false;
	if ((flags & MR_F_IMM) && (flags & MR_F_INV))
		return false;
	/* IMMH and IETH travel in the LAST packet; a message probe is a LAST packet again */
	if ((flags & (MR_F_IMM | MR_F_INV | MR_F_MSG_PROBE)) && !(flags & MR_F_LAST))
		return false;
	return true;
}

static void mr_parse_bth(const u8 *p, struct mr_bth *bth)
{
	bth->version = p[0];
	bth->opcode = p[1];
	bth->flags = mr_get16(p + 2);
	bth->conn_id = mr_get32(p + 4);
	bth->path_id = mr_get16(p + 8);
	bth->payload_len = mr_get16(p + 10);
	bth->psn = mr_get32(p + 12);
	bth->stream = mr_get32(p + 16);
	bth->msn = mr_get32(p + 20);
	bth->offset = mr_get32(p + 24);
	bth->timestamp = mr_get32(p + 28);
}

static void mr_parse_ackh(const u8 *p, struct mr_ackh *ack)
{
	u32 i;

	ack->cum_psn = mr_get32(p);
	ack->ts_echo = mr_get32(p + 4);
	ack->rate_hint = mr_get16(p + 8);
	ack->ce_count = mr_get16(p + 10);
	ack->pkt_count = mr_get16(p + 12);
	ack->n_msg_acks = p[14];
	for (i = 0; i < MR_SACK_WORDS; i++)
		ack->sack[i] = mr_get32le(p + 16 + 4 * i);
}

/* Extension headers; the caller has checked that they fit. */
static void mr_parse_ext(const u8 *p, struct mr_pkt *pkt)
{
	u32 i;

	switch (pkt->bth.opcode) {
	case MR_OP_SEND:
	case MR_OP_READ_RESP:
		pkt->msgh.msg_len = mr_get32(p);
		pkt->msgh.rsn = mr_get32(p + 4);
		p += MR_MSGH_LEN;
		break;
	case MR_OP_WRITE:
	case MR_OP_READ_REQ:
		pkt->reth.va = mr_get64(p);
		pkt->reth.rkey = mr_get32(p + 8);
		pkt->reth.length = mr_get32(p + 12);
		p += MR_RETH_LEN;
		break;
	case MR_OP_ATOMIC_CAS:
	case MR_OP_ATOMIC_FADD:
		pkt->atomic.va = mr_get64(p);
		pkt->atomic.rkey = mr_get32(p + 8);
		pkt->atomic.swap_add = mr_get64(p + 16);
		pkt->atomic.compare = mr_get64(p + 24);
		break;
	case MR_OP_ATOMIC_RESP:
		pkt->atomic_orig = mr_get64(p);
		break;
	case MR_OP_UD_SEND:
		pkt->udh.qkey = mr_get32(p);
		pkt->udh.src_qpn = mr_get32(p + 4) & MR_STREAM_ID_MASK;
		p += MR_UDH_LEN;
		break;
	case MR_OP_ACK:
		mr_parse_ackh(p, &pkt->ack);
		for (i = 0; i < pkt->ack.n_msg_acks; i++) {
			const u8 *e = p + MR_ACKH_LEN + i * MR_MSGACK_LEN;

			pkt->ack.msg_acks[i].stream = mr_get32(e);
			pkt->ack.msg_acks[i].msn_cum = mr_get32(e + 4);
		}
		break;
	case MR_OP_NAK:
		pkt->nak.code = p[0];
		pkt->nak.info = mr_get32(p + 4);
		break;
	case MR_OP_CONNECT_REQ:
	case MR_OP_CONNECT_RESP:
		pkt->conn.ver_min = p[0];
		pkt->conn.ver_max = p[1];
		pkt->conn.max_paths = p[2];
		pkt->conn.src_conn_id = mr_get32(p + 4);
		pkt->conn.incarnation = mr_get64(p + 8);
		pkt->conn.pmtu = mr_get16(p + 16);
		pkt->conn.link_mbps = mr_get32(p + 20);
		pkt->conn.peer_incarnation = mr_get64(p + 24);
		pkt->conn.initial_psn = mr_get32(p + 32);
		break;
	case MR_OP_CLOSE:
	case MR_OP_CLOSE_ACK:
		pkt->close.reason = mr_get32(p);
		break;
	default:
		break;
	}
	if (pkt->bth.flags & MR_F_IMM) {
		pkt->imm = mr_get32(p);
		p += MR_IMMH_LEN;
	}
	if (pkt->bth.flags & MR_F_INV)
		pkt->inv_rkey = mr_get32(p);
}

/* Message-level checks of [MR-WIRE-11] and [MR-WIRE-12] on a fully decoded packet. */
static enum mr_parse_result mr_check_message(const struct mr_opcode_info *oi,
					     const struct mr_pkt *pkt)
{
	const struct mr_bth *bth = &pkt->bth;
	u64 end = (u64)bth->offset + bth->payload_len;
	bool multi = oi->props & MR_OPI_MULTI;
	bool ends_message;
	u32 msg_len;

	if (!(oi->props & MR_OPI_SEQ) && bth->opcode != MR_OP_UD_SEND)
		return MR_PARSE_OK;
	if (bth->opcode == MR_OP_PROBE)
		return MR_PARSE_OK;
	if (bth->opcode == MR_OP_READ_REQ && pkt->reth.length > MR_MAX_MSG_LEN)
		return MR_PARSE_BAD_MSG_LEN;
	msg_len = mr_pkt_msg_len(pkt);
	if (multi && msg_len > MR_MAX_MSG_LEN)
		return MR_PARSE_BAD_MSG_LEN;
	if (!multi && bth->offset != 0)
		return MR_PARSE_BAD_OFFSET;
	if (end > msg_len)
		return MR_PARSE_BAD_RANGE;
	ends_message = end == msg_len;
	if (ends_message != !!(bth->flags & MR_F_LAST))
		return MR_PARSE_BAD_LAST;
	return MR_PARSE_OK;
}

enum mr_parse_result mr_pkt_parse(const u8 *buf, u32 len, struct mr_pkt *pkt)
{
	const struct mr_opcode_info *oi;
	struct mr_bth *bth = &pkt->bth;
	u32 hdr_len;
	u8 n_acks = 0;

	/* An ACK's SACK and MSGACKs are written by mr_parse_ackh(), for an ACK only. */
	memset(pkt, 0, offsetof(struct mr_pkt, ack.sack));
	if (!buf || len < MR_BTH_LEN)
		return MR_PARSE_TRUNCATED;
	mr_parse_bth(buf, bth);
	if (bth->version != MR_VERSION)
		return MR_PARSE_BAD_VERSION;
	oi = mr_opcode_info(bth->opcode);
	if (!oi)
		return MR_PARSE_BAD_OPCODE;
	if (!mr_flags_valid(oi, bth->flags))
		return MR_PARSE_BAD_FLAGS;
	if (bth->path_id >= MR_MAX_PATHS)
		return MR_PARSE_BAD_PATH;
	if (bth->stream & ~MR_STREAM_ID_MASK)
		return MR_PARSE_BAD_STREAM;
	if (!(oi->props & MR_OPI_SEQ) && bth->psn != 0)
		return MR_PARSE_BAD_PSN;
	if (bth->opcode == MR_OP_ACK) {
		if (len < MR_BTH_LEN + MR_ACKH_LEN)
			return MR_PARSE_TRUNCATED;
		n_acks = buf[MR_BTH_LEN + 14];
		if (n_acks > MR_ACK_MAX_MSG_ACKS)
			return MR_PARSE_BAD_ACK_COUNT;
	}
	hdr_len = mr_hdr_len(oi, bth->opcode, bth->flags, n_acks);
	if (len < hdr_len)
		return MR_PARSE_TRUNCATED;
	if ((u64)hdr_len + bth->payload_len != len)
		return MR_PARSE_BAD_LENGTH;
	if (bth->payload_len && !(oi->props & MR_OPI_PAYLOAD))
		return MR_PARSE_BAD_PAYLOAD;
	mr_parse_ext(buf + MR_BTH_LEN, pkt);
	pkt->payload = bth->payload_len ? buf + hdr_len : NULL;
	return mr_check_message(oi, pkt);
}

u32 mr_pkt_header_need(const u8 *buf, u32 have)
{
	u8 n_acks = 0;
	u32 len;

	if (!buf || have < MR_PEEK_LEN)
		return MR_PEEK_LEN;
	if (buf[1] == MR_OP_ACK)
		n_acks = (u8)mr_min_u32(buf[MR_BTH_LEN + 14], MR_ACK_MAX_MSG_ACKS);
	len = mr_pkt_header_len(buf[1], mr_get16(buf + 2), n_acks);
	return mr_max_u32(len, MR_PEEK_LEN);
}

bool mr_pkt_payload_placed(const u8 *buf, u32 have)
{
	if (!buf || have < MR_PEEK_LEN)
		return false;
	return buf[1] == MR_OP_WRITE || buf[1] == MR_OP_SEND || buf[1] == MR_OP_READ_RESP;
}

static void mr_build_ackh(u8 *p, const struct mr_ackh *ack)
{
	u32 i;

	mr_put32(p, ack->cum_psn);
	mr_put32(p + 4, ack->ts_echo);
	mr_put16(p + 8, ack->rate_hint);
	mr_put16(p + 10, ack->ce_count);
	mr_put16(p + 12, ack->pkt_count);
	p[14] = ack->n_msg_acks;
	for (i = 0; i < MR_SACK_WORDS; i++)
		mr_put32le(p + 16 + 4 * i, ack->sack[i]);
	for (i = 0; i < ack->n_msg_acks && i < MR_ACK_MAX_MSG_ACKS; i++) {
		u8 *e = p + MR_ACKH_LEN + i * MR_MSGACK_LEN;

		mr_put32(e, ack->msg_acks[i].stream);
		mr_put32(e + 4, ack->msg_acks[i].msn_cum);
	}
}

static void mr_build_ext(u8 *p, const struct mr_pkt *pkt)
{
	switch (pkt->bth.opcode) {
	case MR_OP_SEND:
	case MR_OP_READ_RESP:
		mr_put32(p, pkt->msgh.msg_len);
		mr_put32(p + 4, pkt->msgh.rsn);
		p += MR_MSGH_LEN;
		break;
	case MR_OP_WRITE:
	case MR_OP_READ_REQ:
		mr_put64(p, pkt->reth.va);
		mr_put32(p + 8, pkt->reth.rkey);
		mr_put32(p + 12, pkt->reth.length);
		p += MR_RETH_LEN;
		break;
	case MR_OP_ATOMIC_CAS:
	case MR_OP_ATOMIC_FADD:
		mr_put64(p, pkt->atomic.va);
		mr_put32(p + 8, pkt->atomic.rkey);
		mr_put64(p + 16, pkt->atomic.swap_add);
		mr_put64(p + 24, pkt->atomic.compare);
		break;
	case MR_OP_ATOMIC_RESP:
		mr_put64(p, pkt->atomic_orig);
		break;
	case MR_OP_UD_SEND:
		mr_put32(p, pkt->udh.qkey);
		mr_put32(p + 4, pkt->udh.src_qpn);
		p += MR_UDH_LEN;
		break;
	case MR_OP_ACK:
		mr_build_ackh(p, &pkt->ack);
		break;
	case MR_OP_NAK:
		p[0] = pkt->nak.code;
		mr_put32(p + 4, pkt->nak.info);
		break;
	case MR_OP_CONNECT_REQ:
	case MR_OP_CONNECT_RESP:
		p[0] = pkt->conn.ver_min;
		p[1] = pkt->conn.ver_max;
		p[2] = pkt->conn.max_paths;
		mr_put32(p + 4, pkt->conn.src_conn_id);
		mr_put64(p + 8, pkt->conn.incarnation);
		mr_put16(p + 16, pkt->conn.pmtu);
		mr_put32(p + 20, pkt->conn.link_mbps);
		mr_put64(p + 24, pkt->conn.peer_incarnation);
		mr_put32(p + 32, pkt->conn.initial_psn);
		break;
	case MR_OP_CLOSE:
	case MR_OP_CLOSE_ACK:
		mr_put32(p, pkt->close.reason);
		break;
	default:
		break;
	}
	if (pkt->bth.flags & MR_F_IMM) {
		mr_put32(p, pkt->imm);
		p += MR_IMMH_LEN;
	}
	if (pkt->bth.flags & MR_F_INV)
		mr_put32(p, pkt->inv_rkey);
}

u32 mr_pkt_build_header(const struct mr_pkt *pkt, u8 *buf, u32 cap)
{
	const struct mr_bth *bth = &pkt->bth;
	u8 n_acks = bth->opcode == MR_OP_ACK ?
		    (u8)mr_min_u32(pkt->ack.n_msg_acks, MR_ACK_MAX_MSG_ACKS) : 0;
	u32 hdr_len = mr_pkt_header_len(bth->opcode, bth->flags, n_acks);
	u32 len = hdr_len + bth->payload_len;

	if (!hdr_len || len > cap)
		return 0;
	memset(buf, 0, hdr_len);
	buf[0] = bth->version;
	buf[1] = bth->opcode;
	mr_put16(buf + 2, bth->flags);
	mr_put32(buf + 4, bth->conn_id);
	mr_put16(buf + 8, bth->path_id);
	mr_put16(buf + 10, bth->payload_len);
	mr_put32(buf + 12, bth->psn);
	mr_put32(buf + 16, bth->stream);
	mr_put32(buf + 20, bth->msn);
	mr_put32(buf + 24, bth->offset);
	mr_put32(buf + 28, bth->timestamp);
	mr_build_ext(buf + MR_BTH_LEN, pkt);
	return len;
}

u32 mr_pkt_build(const struct mr_pkt *pkt, u8 *buf, u32 cap)
{
	u32 len = mr_pkt_build_header(pkt, buf, cap);
	u32 hdr_len = len - pkt->bth.payload_len;

	if (len && pkt->bth.payload_len) {
		if (pkt->payload)
			memcpy(buf + hdr_len, pkt->payload, pkt->bth.payload_len);
		else
			memset(buf + hdr_len, 0, pkt->bth.payload_len);
	}
	return len;
}

const char *mr_parse_result_name(enum mr_parse_result res)
{
	static const char * const names[MR_PARSE_NR_RESULTS] = {
		"ok", "truncated", "bad-version", "bad-opcode", "bad-flags", "bad-path",
		"bad-stream", "bad-psn", "bad-ack-count", "bad-length", "bad-payload",
		"bad-msg-len", "bad-offset", "bad-range", "bad-last",
	};

	if ((u32)res >= MR_PARSE_NR_RESULTS)
		return "unknown";
	return names[res];
}
