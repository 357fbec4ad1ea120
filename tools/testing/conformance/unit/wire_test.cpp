// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Unit tests of the suite's own codec against the header tables of the spec.
#include <gtest/gtest.h>

#include "wire.hpp"

namespace conf {
namespace {

Packet one_write() {
  Packet p;
  p.bth.opcode = kWrite;
  p.bth.flags = kLast | kAckReq;
  p.bth.conn_id = 0xa1b2c3d4;
  p.bth.path_id = 3;
  p.bth.payload_len = 4;
  p.bth.psn = 0x01020304;
  p.bth.stream = 0x11;
  p.bth.msn = 7;
  p.bth.timestamp = 0x2000;
  p.reth = {0x1122334455667788ull, 0xabcd, 4};
  p.payload = {1, 2, 3, 4};
  return p;
}

// [MR-GEN-2]: big-endian fields at the table's offsets.
TEST(Wire, BaseHeaderLayoutIsBigEndian) {
  Bytes b = one_write().encode();
  ASSERT_EQ(b.size(), kBthLen + kRethLen + 4);
  EXPECT_EQ(b[0], 1);
  EXPECT_EQ(b[1], kWrite);
  EXPECT_EQ(b[3], kLast | kAckReq);
  EXPECT_EQ(b[4], 0xa1);
  EXPECT_EQ(b[7], 0xd4);
  EXPECT_EQ(b[9], 3);
  EXPECT_EQ(b[11], 4);
  EXPECT_EQ(b[12], 0x01);
  EXPECT_EQ(b[15], 0x04);
  EXPECT_EQ(b[19], 0x11);
  EXPECT_EQ(b[32], 0x11);
  EXPECT_EQ(b[39], 0x88);
  EXPECT_EQ(b[43], 0xcd);
  EXPECT_EQ(b[47], 4);
}

TEST(Wire, RoundTrip) {
  Packet p = one_write();
  auto q = parse(p.encode());
  ASSERT_TRUE(q);
  EXPECT_EQ(q->bth.psn, p.bth.psn);
  EXPECT_EQ(q->reth.va, p.reth.va);
  EXPECT_EQ(q->payload, p.payload);
  Packet a;
  a.bth.opcode = kAck;
  a.ack.cum_psn = 9;
  a.ack.set_sack_bit(0);
  a.ack.set_sack_bit(9);
  a.ack.msg_acks = {{5, 6}};
  auto b = parse(a.encode());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->ack.msg_acks.size(), 1u);
  EXPECT_TRUE(b->ack.reports(10));
  EXPECT_FALSE(b->ack.reports(9));
  EXPECT_TRUE(b->ack.reports(19));
  EXPECT_TRUE(b->ack.reports(8));
}

// [MR-ACK-2]: bit i is 1 << (i mod 8) of byte i div 8.
TEST(Wire, SackBitNumbering) {
  Ackh a;
  a.set_sack_bit(9);
  EXPECT_EQ(a.sack[1], 0x02);
  a.set_sack_bit(255);
  EXPECT_EQ(a.sack[31], 0x80);
}

TEST(Wire, RejectsWhatMrWire12Rejects) {
  Bytes good = one_write().encode();
  auto bad = [&](auto f) {
    Bytes b = good;
    f(b);
    return !parse(b);
  };
  EXPECT_TRUE(bad([](Bytes &b) { b[0] = 2; }));
  EXPECT_TRUE(bad([](Bytes &b) { b[1] = 0x7f; }));
  EXPECT_TRUE(bad([](Bytes &b) { b[2] = 0x80; }));
  EXPECT_TRUE(bad([](Bytes &b) { b[9] = 16; }));
  EXPECT_TRUE(bad([](Bytes &b) { b[16] = 1; }));
  EXPECT_TRUE(bad([](Bytes &b) { b.push_back(0); }));
  EXPECT_TRUE(bad([](Bytes &b) { b.pop_back(); }));
  EXPECT_TRUE(bad([](Bytes &b) { b.resize(31); }));
  EXPECT_TRUE(bad([](Bytes &b) { b[3] &= uint8_t(~kLast); }));
  EXPECT_TRUE(bad([](Bytes &b) { b[44] = 0x80; b[47] = 1; }));
  EXPECT_FALSE(bad([](Bytes &) {}));
  for (size_t n = 0; n < good.size(); n++) EXPECT_FALSE(parse(good.data(), n)) << n;
}

// One valid packet of each opcode, every field set: each parses back to the same fields
// and the same bytes, and every byte short of it is truncated.
TEST(Wire, EveryOpcodeRoundTrips) {
  const uint8_t ops[] = {kSend,    kWrite, kReadReq, kReadResp,   kAtomicCas,   kAtomicFadd,
                         kAtomicResp, kUdSend, kAck, kNak, kProbe, kConnectReq, kConnectResp,
                         kClose,   kCloseAck};
  for (uint8_t op : ops) {
    SCOPED_TRACE(int(op));
    Packet p;
    p.bth.opcode = op;
    p.bth.conn_id = 0x01020304;
    p.bth.path_id = 5;
    p.bth.psn = is_sequenced(op) ? 0x0a0b0c0d : 0;
    p.bth.stream = 0x00e0f0;
    p.bth.msn = 0x11121314;
    p.bth.timestamp = 0x21222324;
    p.msgh = {8, 0x31323334};
    p.reth = {0x4142434445464748ull, 0x51525354, op == kReadReq ? 0x9000u : 8u};
    p.aeth = {0x6162636465666768ull, 0x71727374, 0x8182838485868788ull, 0x9192939495969798ull};
    p.atomic_orig = 0xa1a2a3a4a5a6a7a8ull;
    p.ud_qkey = 0xb1b2b3b4;
    p.ud_src_qpn = 0x00c2c3c4;
    p.ack.cum_psn = 0xd1d2d3d4;
    p.ack.ts_echo = 0xd5d6d7d8;
    p.ack.rate_hint = 0xe1e2;
    p.ack.ce_count = 0xe3e4;
    p.ack.pkt_count = 0xe5e6;
    for (unsigned i = 0; i < 256; i += 7) p.ack.set_sack_bit(i);
    p.ack.msg_acks = {{0x000102, 3}, {0x000405, 6}};
    p.nak = {kNakBounds, 0xf1f2f3f4};
    p.conn = {1, 1, 8, 0x12345678, 0x1122334455667788ull, 1024, 25000, 0x8877665544332211ull,
              0x0badcafe};
    p.close_reason = 3;
    const bool data = op == kSend || op == kWrite || op == kReadResp || op == kUdSend;
    if ((is_sequenced(op) && op != kProbe) || op == kUdSend) p.bth.flags = kLast;
    if (data) {
      p.payload = {9, 8, 7, 6, 5, 4, 3, 2};
      p.bth.payload_len = 8;
    }
    if (op == kSend || op == kWrite || op == kUdSend) {
      p.bth.flags |= kImm;
      p.imm = 0x0c0d0e0f;
    }
    const Bytes b = p.encode();
    std::string why;
    auto q = parse(b, &why);
    ASSERT_TRUE(q) << why;
    EXPECT_EQ(q->encode(), b);
    EXPECT_FALSE(q->reserved_nonzero);
    EXPECT_EQ(q->bth.msn, p.bth.msn);
    EXPECT_EQ(q->bth.timestamp, p.bth.timestamp);
    EXPECT_EQ(q->payload, p.payload);
    for (size_t n = kBthLen; n < b.size(); n++) EXPECT_FALSE(parse(b.data(), n)) << n;
  }
}

// [MR-CC-10]: smallest exponent, rounding down.
TEST(Wire, RateHintEncoding) {
  EXPECT_EQ(encode_rate_hint(0), 0);
  EXPECT_EQ(encode_rate_hint(4095), 4095);
  EXPECT_EQ(encode_rate_hint(4096), (1 << 12) | 2048);
  EXPECT_EQ(decode_rate_hint(encode_rate_hint(100000)), 100000u >> 5 << 5);
}

}  // namespace
}  // namespace conf
