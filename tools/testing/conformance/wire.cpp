// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Encoding and total parsing of MetaRoCE packets, from the spec's header tables.
#include "wire.hpp"

#include <algorithm>
#include <cstdio>

namespace conf {
namespace {

// [MR-GEN-2]: every multi-byte field is big-endian.  Writer and Reader have the same
// methods, so that walk() below lists each header's fields once for both directions.
class Writer {
 public:
  explicit Writer(Bytes &out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) {
    u8(uint8_t(v >> 8));
    u8(uint8_t(v));
  }
  void u32(uint32_t v) {
    u16(uint16_t(v >> 16));
    u16(uint16_t(v));
  }
  void u64(uint64_t v) {
    u32(uint32_t(v >> 32));
    u32(uint32_t(v));
  }
  void reserved(size_t n) { out_.insert(out_.end(), n, 0); }
  void bytes(const uint8_t *p, size_t n) { out_.insert(out_.end(), p, p + n); }

 private:
  Bytes &out_;
};

// The caller checks has() before reading.
class Reader {
 public:
  Reader(const uint8_t *p, size_t len) : p_(p), len_(len) {}
  bool has(size_t n) const { return len_ - pos_ >= n; }
  size_t left() const { return len_ - pos_; }
  void u8(uint8_t &v) { v = p_[pos_++]; }
  void u16(uint16_t &v) {
    v = uint16_t(p_[pos_] << 8 | p_[pos_ + 1]);
    pos_ += 2;
  }
  void u32(uint32_t &v) {
    uint16_t hi, lo;
    u16(hi);
    u16(lo);
    v = uint32_t(hi) << 16 | lo;
  }
  void u64(uint64_t &v) {
    uint32_t hi, lo;
    u32(hi);
    u32(lo);
    v = uint64_t(hi) << 32 | lo;
  }
  // n reserved bytes; any that is not zero is noted in nonzero.
  void reserved(size_t n) {
    for (size_t i = 0; i < n; i++) nonzero |= p_[pos_ + i] != 0;
    pos_ += n;
  }
  void bytes(uint8_t *p, size_t n) {
    std::copy(p_ + pos_, p_ + pos_ + n, p);
    pos_ += n;
  }
  const uint8_t *here() const { return p_ + pos_; }
  bool nonzero = false;

 private:
  const uint8_t *p_;
  size_t len_;
  size_t pos_ = 0;
};

// The fixed part of the extension header of an opcode (after the base header): its
// length and name; {0, ""} for none.
struct Ext {
  size_t len;
  const char *name;
};
Ext ext_of(uint8_t op) {
  switch (op) {
    case kSend:
    case kReadResp:
      return {kMsghLen, "MSGH"};
    case kWrite:
    case kReadReq:
      return {kRethLen, "RETH"};
    case kAtomicCas:
    case kAtomicFadd:
      return {kAtomicEthLen, "ATOMICETH"};
    case kAtomicResp:
      return {kAtomicAhLen, "ATOMICAH"};
    case kUdSend:
      return {kUdhLen, "UDH"};
    case kAck:
      return {kAckhLen, "ACKH"};
    case kNak:
      return {kNakhLen, "NAKH"};
    case kConnectReq:
    case kConnectResp:
      return {kConnhLen, "CONNH"};
    case kClose:
    case kCloseAck:
      return {kCloseLen, "CLOSEH"};
    default:
      return {0, ""};
  }
}

// The base header and the fixed part of the opcode's extension header, in wire order
// (headers.rst, ack.rst, connection.rst): P is Packet for the Reader, const Packet for
// the Writer.  n_msg_acks is the ACK's MSGACK count.
template <class Io, class P>
void walk(Io &io, P &p, uint8_t &n_msg_acks) {
  auto &b = p.bth;
  io.u8(b.version);
  io.u8(b.opcode);
  io.u16(b.flags);
  io.u32(b.conn_id);
  io.u16(b.path_id);
  io.u16(b.payload_len);
  io.u32(b.psn);
  io.u32(b.stream);
  io.u32(b.msn);
  io.u32(b.offset);
  io.u32(b.timestamp);
  switch (b.opcode) {
    case kSend:
    case kReadResp:
      io.u32(p.msgh.msg_len);
      io.u32(p.msgh.rsn);
      break;
    case kWrite:
    case kReadReq:
      io.u64(p.reth.va);
      io.u32(p.reth.rkey);
      io.u32(p.reth.length);
      break;
    case kAtomicCas:
    case kAtomicFadd:
      io.u64(p.aeth.va);
      io.u32(p.aeth.rkey);
      io.reserved(4);
      io.u64(p.aeth.swap_add);
      io.u64(p.aeth.compare);
      break;
    case kAtomicResp:
      io.u64(p.atomic_orig);
      break;
    case kUdSend:
      io.u32(p.ud_qkey);
      io.u32(p.ud_src_qpn);
      break;
    case kAck:
      io.u32(p.ack.cum_psn);
      io.u32(p.ack.ts_echo);
      io.u16(p.ack.rate_hint);
      io.u16(p.ack.ce_count);
      io.u16(p.ack.pkt_count);
      io.u8(n_msg_acks);
      io.reserved(1);
      io.bytes(p.ack.sack.data(), p.ack.sack.size());
      break;
    case kNak:
      io.u8(p.nak.code);
      io.reserved(3);
      io.u32(p.nak.info);
      break;
    case kConnectReq:
    case kConnectResp:
      io.u8(p.conn.ver_min);
      io.u8(p.conn.ver_max);
      io.u8(p.conn.max_paths);
      io.reserved(1);
      io.u32(p.conn.src_conn_id);
      io.u64(p.conn.incarnation);
      io.u16(p.conn.pmtu);
      io.reserved(2);
      io.u32(p.conn.link_mbps);
      io.u64(p.conn.peer_incarnation);
      io.u32(p.conn.initial_psn);
      io.reserved(4);
      break;
    case kClose:
    case kCloseAck:
      io.u32(p.close_reason);
      io.reserved(4);
      break;
    default:
      break;
  }
}

bool is_data(uint8_t op) {
  return op == kSend || op == kWrite || op == kReadResp || op == kUdSend;
}

// Flags each opcode may carry ([MR-WIRE-4]).
uint16_t allowed_flags(uint8_t op) {
  switch (op) {
    case kSend:
      return kAckReq | kLast | kRetx | kSolicited | kImm | kInv | kMsgProbe;
    case kWrite:
      return kAckReq | kLast | kRetx | kSolicited | kImm | kMsgProbe;
    case kUdSend:
      return kAckReq | kLast | kRetx | kSolicited | kImm;
    case kReadReq:
    case kAtomicCas:
    case kAtomicFadd:
      return kAckReq | kLast | kRetx | kMsgProbe;
    case kReadResp:
    case kAtomicResp:
      return kAckReq | kLast | kRetx;
    case kProbe:
      return kAckReq | kRetx;
    default:
      return 0;
  }
}

bool fail(std::string *why, const char *what) {
  if (why) *why = what;
  return false;
}

}  // namespace

bool is_known_opcode(uint8_t op) {
  switch (op) {
    case kSend:
    case kWrite:
    case kReadReq:
    case kReadResp:
    case kAtomicCas:
    case kAtomicFadd:
    case kAtomicResp:
    case kUdSend:
    case kAck:
    case kNak:
    case kProbe:
    case kConnectReq:
    case kConnectResp:
    case kClose:
    case kCloseAck:
      return true;
    default:
      return false;
  }
}

bool is_sequenced(uint8_t op) {
  return (op >= kSend && op <= kAtomicResp) || op == kProbe;
}

bool Ackh::reports(uint32_t psn) const {
  if (psn_before(psn, cum_psn)) return true;
  uint32_t d = psn - cum_psn;
  return d >= 1 && d <= kSackBits && sack_bit(d - 1);
}

Bytes Packet::encode() const {
  Bytes out;
  Writer w(out);
  uint8_t n = uint8_t(ack.msg_acks.size());
  walk(w, *this, n);
  if (bth.opcode == kAck) {
    for (const auto &m : ack.msg_acks) {
      w.u32(m.stream);
      w.u32(m.msn_cum);
    }
  }
  if ((bth.flags & kImm) && (bth.opcode == kSend || bth.opcode == kWrite || bth.opcode == kUdSend))
    w.u32(imm);
  if ((bth.flags & kInv) && bth.opcode == kSend) w.u32(inv_rkey);
  w.bytes(payload.data(), payload.size());
  return out;
}

std::optional<Packet> parse(const uint8_t *p, size_t len, std::string *why) {
  Packet pkt;
  Reader r(p, len);
  if (!r.has(kBthLen)) return fail(why, "shorter than the base header"), std::nullopt;
  const Ext ext = ext_of(p[1]);
  if (!r.has(kBthLen + ext.len)) {
    if (why) *why = std::string("truncated ") + ext.name;
    return std::nullopt;
  }
  uint8_t n = 0;
  walk(r, pkt, n);
  pkt.reserved_nonzero = r.nonzero;
  const Bth &b = pkt.bth;
  if (b.version != kVersion) return fail(why, "version"), std::nullopt;
  if (!is_known_opcode(b.opcode)) return fail(why, "opcode"), std::nullopt;
  const uint16_t f = b.flags;
  if (f & ~allowed_flags(b.opcode)) return fail(why, "flag not allowed"), std::nullopt;
  if ((f & kImm) && (f & kInv)) return fail(why, "IMM with INV"), std::nullopt;
  if ((f & (kImm | kInv)) && !(f & kLast)) return fail(why, "IMM/INV without LAST"), std::nullopt;
  if ((f & kMsgProbe) && !(f & kLast)) return fail(why, "MSG_PROBE without LAST"), std::nullopt;
  if (b.path_id >= kMaxPaths) return fail(why, "path_id"), std::nullopt;
  if (b.stream >> 24) return fail(why, "stream top bits"), std::nullopt;
  if (!is_sequenced(b.opcode) && b.psn) return fail(why, "psn on unsequenced"), std::nullopt;
  if (!is_data(b.opcode) && b.payload_len) return fail(why, "payload on non-data"), std::nullopt;

  uint64_t msg_len = 0;  // the message length LAST is judged against
  bool single = false;
  switch (b.opcode) {
    case kSend:
    case kReadResp:
      msg_len = pkt.msgh.msg_len;
      break;
    case kWrite:
    case kReadReq:
      msg_len = pkt.reth.length;
      single = b.opcode == kReadReq;
      break;
    case kAtomicCas:
    case kAtomicFadd:
    case kAtomicResp:
      single = true;
      break;
    case kUdSend:
      pkt.reserved_nonzero |= (pkt.ud_src_qpn >> 24) != 0;
      single = true;
      break;
    case kAck:
      if (n > kMaxMsgAcks) return fail(why, "n_msg_acks"), std::nullopt;
      if (!r.has(size_t(n) * kMsgAckLen)) return fail(why, "truncated MSGACKs"), std::nullopt;
      pkt.ack.msg_acks.resize(n);
      for (MsgAck &m : pkt.ack.msg_acks) {
        r.u32(m.stream);
        r.u32(m.msn_cum);
      }
      break;
    default:
      break;
  }
  if (f & kImm) {
    if (!r.has(kImmhLen)) return fail(why, "truncated IMMH"), std::nullopt;
    r.u32(pkt.imm);
  }
  if (f & kInv) {
    if (!r.has(kIethLen)) return fail(why, "truncated IETH"), std::nullopt;
    r.u32(pkt.inv_rkey);
  }
  if (r.left() != b.payload_len) return fail(why, "length"), std::nullopt;
  pkt.payload.assign(r.here(), r.here() + b.payload_len);

  // Message checks: 64-bit sums, LAST exactly at the end ([MR-WIRE-11], [MR-WIRE-12]).
  const bool has_msg = b.opcode == kSend || b.opcode == kWrite || b.opcode == kReadResp ||
                       b.opcode == kReadReq;
  if (has_msg && msg_len > kMaxMsgLen) return fail(why, "message length"), std::nullopt;
  if (has_msg && b.opcode != kReadReq) {
    uint64_t end = uint64_t(b.offset) + b.payload_len;
    if (end > msg_len) return fail(why, "beyond the message"), std::nullopt;
    if (bool(f & kLast) != (end == msg_len)) return fail(why, "LAST"), std::nullopt;
  } else if (single && b.opcode != kUdSend) {
    if (!(f & kLast)) return fail(why, "LAST missing"), std::nullopt;
  }
  return pkt;
}

std::string Packet::describe() const {
  char buf[160];
  snprintf(buf, sizeof(buf), "op=0x%02x flags=0x%x conn=0x%x path=%u psn=0x%x stream=0x%x msn=%u off=%u len=%u",
           bth.opcode, bth.flags, bth.conn_id, bth.path_id, bth.psn, bth.stream, bth.msn,
           bth.offset, bth.payload_len);
  return buf;
}

uint16_t encode_rate_hint(uint32_t mbps) {
  if (!mbps) return 0;
  unsigned e = 0;
  while ((mbps >> e) >= 4096) e++;
  uint32_t m = mbps >> e;
  if (!m) m = 1;
  return uint16_t(e << 12 | m);
}

uint32_t decode_rate_hint(uint16_t hint) { return uint32_t(hint & 0xfff) << (hint >> 12); }

}  // namespace conf
