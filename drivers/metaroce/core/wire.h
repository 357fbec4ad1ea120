/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The MetaRoCE v1 wire format: constants, header sizes and the parsed packet. */
#ifndef MR_WIRE_H
#define MR_WIRE_H

#include "mr_shim.h"

#define MR_UDP_PORT		64791
#define MR_ENTROPY_MIN		49152
#define MR_ENTROPY_MAX		65535
#define MR_VERSION		1

#define MR_BTH_LEN		32
#define MR_MSGH_LEN		8
#define MR_RETH_LEN		16
#define MR_ATOMICETH_LEN	32
#define MR_ATOMICAH_LEN		8
#define MR_IMMH_LEN		4
#define MR_IETH_LEN		4
#define MR_UDH_LEN		8
#define MR_ACKH_LEN		48
#define MR_MSGACK_LEN		8
#define MR_NAKH_LEN		8
#define MR_CONNH_LEN		40
#define MR_CLOSEH_LEN		8

#define MR_ACK_MAX_MSG_ACKS	16
#define MR_MAX_HDR_LEN		(MR_BTH_LEN + MR_ACKH_LEN + MR_ACK_MAX_MSG_ACKS * MR_MSGACK_LEN)
#define MR_MAX_MSG_LEN		0x80000000U
#define MR_MAX_PATHS		16
#define MR_MIN_PMTU		256	/* [MR-CONN-6] */
#define MR_PMTU_ALIGN		64	/* [MR-CONN-6] a connection's pmtu is a multiple of it */
#define MR_MAX_HDR_STACK	64	/* the largest headers of a data or atomic packet */
#define MR_UDP_HDR_LEN		8	/* the UDP header in front of ours */
#define MR_DEFAULT_PATHS	8
#define MR_SACK_BITS		256
#define MR_SACK_WORDS		(MR_SACK_BITS / 32)
#define MR_MSG_PKT_WINDOW	256
#define MR_STREAM_MAX_MSGS	64
#define MR_REPLAY_DEPTH		64
#define MR_STREAM_ID_MASK	0x00ffffffU
#define MR_GSI_QKEY		0x80010000U
#define MR_PATH_PSN_STRIDE	0x01000000U

enum mr_opcode {
	MR_OP_SEND		= 0x01,
	MR_OP_WRITE		= 0x02,
	MR_OP_READ_REQ		= 0x03,
	MR_OP_READ_RESP		= 0x04,
	MR_OP_ATOMIC_CAS	= 0x05,
	MR_OP_ATOMIC_FADD	= 0x06,
	MR_OP_ATOMIC_RESP	= 0x07,
	MR_OP_UD_SEND		= 0x08,
	MR_OP_ACK		= 0x10,
	MR_OP_NAK		= 0x11,
	MR_OP_PROBE		= 0x12,
	MR_OP_CONNECT_REQ	= 0x20,
	MR_OP_CONNECT_RESP	= 0x21,
	MR_OP_CLOSE		= 0x22,
	MR_OP_CLOSE_ACK		= 0x23,
};

#define MR_F_ACK_REQ		0x0001
#define MR_F_LAST		0x0002
#define MR_F_RETX		0x0004
#define MR_F_SOLICITED		0x0008
#define MR_F_IMM		0x0010
#define MR_F_INV		0x0020
#define MR_F_MSG_PROBE		0x0040	/* [MR-REL-11] all of the message was acknowledged */

enum mr_nak_code {
	MR_NAK_RNR		= 1,
	MR_NAK_INVALID_REQUEST	= 2,
	MR_NAK_BAD_RKEY		= 3,
	MR_NAK_BOUNDS		= 4,
	MR_NAK_ACCESS		= 5,
	MR_NAK_REMOTE_OP_ERROR	= 6,
};

/* Header fields in host order; which members are meaningful depends on bth.opcode. */
struct mr_bth {
	u8 version;
	u8 opcode;
	u16 flags;
	u32 conn_id;
	u16 path_id;
	u16 payload_len;
	u32 psn;
	u32 stream;
	u32 msn;
	u32 offset;
	u32 timestamp;
};

struct mr_msgh {
	u32 msg_len;
	u32 rsn;
};

struct mr_reth {
	u64 va;
	u32 rkey;
	u32 length;
};

struct mr_atomiceth {
	u64 va;
	u32 rkey;
	u64 swap_add;
	u64 compare;
};

struct mr_udh {
	u32 qkey;
	u32 src_qpn;
};

struct mr_msgack {
	u32 stream;
	u32 msn_cum;
};

struct mr_ackh {
	u32 cum_psn;
	u32 ts_echo;
	u16 rate_hint;
	u16 ce_count;
	u16 pkt_count;
	u8 n_msg_acks;
	u32 sack[MR_SACK_WORDS];	/* bit i of word w reports PSN cum_psn + 1 + 32w + i */
	struct mr_msgack msg_acks[MR_ACK_MAX_MSG_ACKS];
};

struct mr_nakh {
	u8 code;
	u32 info;
};

struct mr_connh {
	u8 ver_min;
	u8 ver_max;
	u8 max_paths;
	u32 src_conn_id;
	u64 incarnation;
	u16 pmtu;
	u32 link_mbps;
	u64 peer_incarnation;
	u32 initial_psn;
};

struct mr_closeh {
	u32 reason;
};

struct mr_pkt {
	struct mr_bth bth;
	struct mr_msgh msgh;
	struct mr_reth reth;
	struct mr_atomiceth atomic;
	u64 atomic_orig;
	u32 imm;
	u32 inv_rkey;
	struct mr_udh udh;
	struct mr_nakh nak;
	struct mr_connh conn;
	struct mr_closeh close;
	const u8 *payload;	/* points into the parsed buffer; payload_len bytes */
	/*
	 * Not on the wire: the UDP source port a received packet came with,
	 * or the one the engine chose to send it with ([MR-ACK-8], [MR-ENC-2]).
	 */
	u16 sport;
	/*
	 * Last, and its SACK and MSGACKs at its end: mr_pkt_parse() clears the
	 * packet up to them, and writes them for an ACK only (msg_acks up to
	 * n_msg_acks); in any other packet they are left as they were.
	 */
	struct mr_ackh ack;
};

#endif /* MR_WIRE_H */
