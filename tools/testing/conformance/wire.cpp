// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Encoding and total parsing of MetaRoCE packets, from the spec's header tables.
#include "wire.hpp"

#include <cstdio>

namespace conf {
namespace {

// [MR-GEN-2]: every multi-byte field is big-endian.
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
  void zeros(size_t n) { out_.insert(out_.end(), n, 0); }
  void bytes(const uint8_t *p, size_t n) { out_.insert(out_.end(), p, p + n); }

 private:
  Bytes &out_;
};

class Reader {
 public:
  Reader(const uint8_t *p, size_t len) : p_(p), len_(len) {}
  bool has(size_t n) const { return len_ - pos_ >= n; }
  size_t left() const { return len_ - pos_; }
  uint8_t u8() { return p_[pos_++]; }
  uint16_t u16() {
    uint16_t v = uint16_t(p_[pos_] << 8 | p_[pos_ + 1]);
    pos_ += 2;
    return v;
  }
  uint32_t u32() {
    uint32_t hi = u16();
    return hi << 16 | u16();
  }
  uint64_t u64() {
    uint64_t hi = u32();
    return hi << 32 | u32();
  }
  void skip(size_t n) { pos_ += n; }
  // Skips n reserved bytes; false when any is nonzero.
  bool reserved(size_t n) {
    bool zero = true;
    for (size_t i = 0; i < n; i++) zero &= p_[pos_ + i] == 0;
    pos_ += n;
    return zero;
  }
  const uint8_t *here() const { return p_ + pos_; }

 private:
  const uint8_t *p_;
  size_t len_;
  size_t pos_ = 0;
};

bool is_data(uint8_t op) {
  return op == kSend || op == kWrite || op == kReadResp || op == kUdSend;
}

// Flags each opcode may carry ([MR-WIRE-4]).
uint16_t allowed_flags(uint8_t op) {
  switch (op) {
    case kSend:
      return kAckReq | kLast | kRetx | kSolicited | kImm | kInv;
    case kWrite:
    case kUdSend:
      return kAckReq | kLast | kRetx | kSolicited | kImm;
    case kReadResp:
      return kAckReq | kLast | kRetx;
    case kReadReq:
    case kAtomicCas:
    case kAtomicFadd:
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
  w.u8(bth.version);
  w.u8(bth.opcode);
  w.u16(bth.flags);
  w.u32(bth.conn_id);
  w.u16(bth.path_id);
  w.u16(bth.payload_len);
  w.u32(bth.psn);
  w.u32(bth.stream);
  w.u32(bth.msn);
  w.u32(bth.offset);
  w.u32(bth.timestamp);
  switch (bth.opcode) {
    case kSend:
    case kReadResp:
      w.u32(msgh.msg_len);
      w.u32(msgh.rsn);
      break;
    case kWrite:
    case kReadReq:
      w.u64(reth.va);
      w.u32(reth.rkey);
      w.u32(reth.length);
      break;
    case kAtomicCas:
    case kAtomicFadd:
      w.u64(aeth.va);
      w.u32(aeth.rkey);
      w.u32(0);
      w.u64(aeth.swap_add);
      w.u64(aeth.compare);
      break;
    case kAtomicResp:
      w.u64(atomic_orig);
      break;
    case kUdSend:
      w.u32(ud_qkey);
      w.u32(ud_src_qpn);
      break;
    case kAck:
      w.u32(ack.cum_psn);
      w.u32(ack.ts_echo);
      w.u16(ack.rate_hint);
      w.u16(ack.ce_count);
      w.u16(ack.pkt_count);
      w.u8(uint8_t(ack.msg_acks.size()));
      w.u8(0);
      w.bytes(ack.sack.data(), ack.sack.size());
      for (const auto &m : ack.msg_acks) {
        w.u32(m.stream);
        w.u32(m.msn_cum);
      }
      break;
    case kNak:
      w.u8(nak.code);
      w.zeros(3);
      w.u32(nak.info);
      break;
    case kConnectReq:
    case kConnectResp:
      w.u8(conn.ver_min);
      w.u8(conn.ver_max);
      w.u8(conn.max_paths);
      w.u8(0);
      w.u32(conn.src_conn_id);
      w.u64(conn.incarnation);
      w.u16(conn.pmtu);
      w.u16(0);
      w.u32(conn.link_mbps);
      w.u64(conn.peer_incarnation);
      w.u32(conn.initial_psn);
      w.u32(0);
      break;
    case kClose:
    case kCloseAck:
      w.u32(close_reason);
      w.u32(0);
      break;
    default:
      break;
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
  Bth &b = pkt.bth;
  b.version = r.u8();
  b.opcode = r.u8();
  b.flags = r.u16();
  b.conn_id = r.u32();
  b.path_id = r.u16();
  b.payload_len = r.u16();
  b.psn = r.u32();
  b.stream = r.u32();
  b.msn = r.u32();
  b.offset = r.u32();
  b.timestamp = r.u32();
  if (b.version != kVersion) return fail(why, "version"), std::nullopt;
  if (!is_known_opcode(b.opcode)) return fail(why, "opcode"), std::nullopt;
  const uint16_t f = b.flags;
  if (f & ~allowed_flags(b.opcode)) return fail(why, "flag not allowed"), std::nullopt;
  if ((f & kImm) && (f & kInv)) return fail(why, "IMM with INV"), std::nullopt;
  if ((f & (kImm | kInv)) && !(f & kLast)) return fail(why, "IMM/INV without LAST"), std::nullopt;
  if (b.path_id >= kMaxPaths) return fail(why, "path_id"), std::nullopt;
  if (b.stream >> 24) return fail(why, "stream top bits"), std::nullopt;
  if (!is_sequenced(b.opcode) && b.psn) return fail(why, "psn on unsequenced"), std::nullopt;
  if (!is_data(b.opcode) && b.payload_len) return fail(why, "payload on non-data"), std::nullopt;

  uint64_t msg_len = 0;  // the message length LAST is judged against
  bool single = false;
  switch (b.opcode) {
    case kSend:
    case kReadResp:
      if (!r.has(kMsghLen)) return fail(why, "truncated MSGH"), std::nullopt;
      pkt.msgh.msg_len = r.u32();
      pkt.msgh.rsn = r.u32();
      msg_len = pkt.msgh.msg_len;
      break;
    case kWrite:
    case kReadReq:
      if (!r.has(kRethLen)) return fail(why, "truncated RETH"), std::nullopt;
      pkt.reth.va = r.u64();
      pkt.reth.rkey = r.u32();
      pkt.reth.length = r.u32();
      msg_len = pkt.reth.length;
      single = b.opcode == kReadReq;
      break;
    case kAtomicCas:
    case kAtomicFadd:
      if (!r.has(kAtomicEthLen)) return fail(why, "truncated ATOMICETH"), std::nullopt;
      pkt.aeth.va = r.u64();
      pkt.aeth.rkey = r.u32();
      pkt.reserved_nonzero |= !r.reserved(4);
      pkt.aeth.swap_add = r.u64();
      pkt.aeth.compare = r.u64();
      single = true;
      break;
    case kAtomicResp:
      if (!r.has(kAtomicAhLen)) return fail(why, "truncated ATOMICAH"), std::nullopt;
      pkt.atomic_orig = r.u64();
      single = true;
      break;
    case kUdSend:
      if (!r.has(kUdhLen)) return fail(why, "truncated UDH"), std::nullopt;
      pkt.ud_qkey = r.u32();
      pkt.ud_src_qpn = r.u32();
      pkt.reserved_nonzero |= (pkt.ud_src_qpn >> 24) != 0;
      single = true;
      break;
    case kAck: {
      if (!r.has(kAckhLen)) return fail(why, "truncated ACKH"), std::nullopt;
      Ackh &a = pkt.ack;
      a.cum_psn = r.u32();
      a.ts_echo = r.u32();
      a.rate_hint = r.u16();
      a.ce_count = r.u16();
      a.pkt_count = r.u16();
      unsigned n = r.u8();
      pkt.reserved_nonzero |= !r.reserved(1);
      for (auto &byte : a.sack) byte = r.u8();
      if (n > kMaxMsgAcks) return fail(why, "n_msg_acks"), std::nullopt;
      if (!r.has(size_t(n) * kMsgAckLen)) return fail(why, "truncated MSGACKs"), std::nullopt;
      for (unsigned i = 0; i < n; i++) {
        MsgAck m;
        m.stream = r.u32();
        m.msn_cum = r.u32();
        a.msg_acks.push_back(m);
      }
      break;
    }
    case kNak:
      if (!r.has(kNakhLen)) return fail(why, "truncated NAKH"), std::nullopt;
      pkt.nak.code = r.u8();
      pkt.reserved_nonzero |= !r.reserved(3);
      pkt.nak.info = r.u32();
      break;
    case kConnectReq:
    case kConnectResp: {
      if (!r.has(kConnhLen)) return fail(why, "truncated CONNH"), std::nullopt;
      Connh &c = pkt.conn;
      c.ver_min = r.u8();
      c.ver_max = r.u8();
      c.max_paths = r.u8();
      pkt.reserved_nonzero |= !r.reserved(1);
      c.src_conn_id = r.u32();
      c.incarnation = r.u64();
      c.pmtu = r.u16();
      pkt.reserved_nonzero |= !r.reserved(2);
      c.link_mbps = r.u32();
      c.peer_incarnation = r.u64();
      c.initial_psn = r.u32();
      pkt.reserved_nonzero |= !r.reserved(4);
      break;
    }
    case kClose:
    case kCloseAck:
      if (!r.has(kCloseLen)) return fail(why, "truncated CLOSEH"), std::nullopt;
      pkt.close_reason = r.u32();
      pkt.reserved_nonzero |= !r.reserved(4);
      break;
    default:
      break;
  }
  if (f & kImm) {
    if (!r.has(kImmhLen)) return fail(why, "truncated IMMH"), std::nullopt;
    pkt.imm = r.u32();
  }
  if (f & kInv) {
    if (!r.has(kIethLen)) return fail(why, "truncated IETH"), std::nullopt;
    pkt.inv_rkey = r.u32();
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
