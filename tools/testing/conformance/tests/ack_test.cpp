// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ack.rst and reliability.rst, receiver side: cum_psn and SACK contents after crafted
// arrival patterns, duplicates, ECN echo, MSGACKs.
#include <cstring>
#include <vector>

#include "suite.hpp"

namespace conf {
namespace {

class AckTest : public Conformance {
 protected:
  void SetUp() override {
    Conformance::SetUp();
    t_ = target("w", 16384, 0);
  }
  // One single-packet Write of 8 bytes into slot i of the MR, msn msn_, at PSN base + k.
  Packet slot_write(unsigned slot, uint8_t seed, bool ack_req = true) {
    Packet w = P.write_pkt(t_.s, msn_++, t_.mr.va + 8 * slot, t_.mr.rkey, 8, 0, pattern(8, seed));
    if (ack_req) w.bth.flags |= kAckReq;
    return w;
  }
  Target t_;
  uint32_t msn_ = 0;
};

// [MR-ACK-1], [MR-ACK-2], [MR-SACK-4]: in order, gaps, fill-ins, reordering.
TEST_F(AckTest, MR_ACK_2_SackBitsAfterArrivalPatterns) {
  CLAUSES("MR-ACK-1 MR-ACK-2 MR-SACK-4 MR-ACK-5 MR-PATH-3 MR-PATH-9 MR-GEN-2");
  const unsigned path = 4;
  const uint32_t base = P.next_psn[path];
  // Offsets from base, in arrival order: in order, a gap, a wider gap, fill-ins, bit 7/8
  // boundary, reordering of the fill.
  const int order[] = {0, 1, 2, 4, 9, 8, 3, 20, 17, 5, 7, 6, 10, 12, 11, 19, 18, 16,
                       15, 14, 13};
  unsigned slot = 0;
  for (int k : order) {
    Packet w = slot_write(slot, uint8_t(slot));
    slot++;
    P.send_at(w, path, base + uint32_t(k));
    expect_ack_matches_model(path, 300, ("after PSN base+" + std::to_string(k)).c_str());
  }
  EXPECT_EQ(P.model[path].cum, base + 21);
  for (unsigned i = 0; i < slot; i++)
    EXPECT_EQ(hex(mr_bytes(t_, 8 * i, 8)), hex(pattern(8, uint8_t(i)))) << "slot " << i;
}

// [MR-ACK-8]: an ACK goes back with the source port of its path's newest packet, so
// ACKs spread over the fabric like the data and follow a re-rolled path.
TEST_F(AckTest, MR_ACK_8_AckLeavesWithThePathsNewestSourcePort) {
  CLAUSES("MR-ACK-8 MR-PATH-2 MR-PATH-9");
  const unsigned path = 3;
  const uint16_t sports[] = {61001, 57777, P.my_sport(path)};
  for (unsigned k = 0; k < 3; k++) {
    Packet w = slot_write(k, uint8_t(0x40 + k));
    w.bth.conn_id = P.dut_conn_id;
    w.bth.path_id = uint16_t(path);
    w.bth.psn = P.next_psn[path]++;
    P.model[path].arrive(w.bth.psn);
    P.send_raw(w.encode(), sports[k]);
    auto a = P.wait_ack(path, 300);
    ASSERT_TRUE(a) << "no ACK for the packet from port " << sports[k];
    EXPECT_EQ(a->sport, sports[k]) << "the ACK did not leave with the path's entropy";
    EXPECT_EQ(a->pkt.ack.cum_psn, w.bth.psn + 1);
    EXPECT_EQ(hex(mr_bytes(t_, 8 * k, 8)), hex(pattern(8, uint8_t(0x40 + k))));
  }
}

// Reordering across paths: each path's SACK is its own.
TEST_F(AckTest, MR_PATH_3_PathsAcknowledgedIndependently) {
  CLAUSES("MR-PATH-3 MR-PATH-1 MR-SACK-4 MR-ACK-2");
  uint32_t b5 = P.next_psn[5], b6 = P.next_psn[6];
  P.send_at(slot_write(0, 1), 5, b5 + 1);
  expect_ack_matches_model(5);
  P.send_at(slot_write(1, 2), 6, b6);
  expect_ack_matches_model(6);
  P.send_at(slot_write(2, 3), 6, b6 + 2);
  expect_ack_matches_model(6);
  P.send_at(slot_write(3, 4), 5, b5);
  expect_ack_matches_model(5);
  EXPECT_EQ(P.model[5].cum, b5 + 2);
  EXPECT_EQ(P.model[6].cum, b6 + 1);
  P.send_at(slot_write(4, 5), 6, b6 + 1);
  expect_ack_matches_model(6);
}

// [MR-ACK-3]: a duplicate PSN is acknowledged at once and not placed again.
TEST_F(AckTest, MR_ACK_3_DuplicateAckedNotPlaced) {
  CLAUSES("MR-ACK-3 MR-ACK-5 MR-REL-7");
  const unsigned path = 1;
  Packet a = slot_write(0, 0x11);
  uint32_t psn = P.send_seq(a, path);
  expect_ack_matches_model(path);
  Packet b = P.write_pkt(t_.s, msn_++, t_.mr.va, t_.mr.rkey, 8, 0, pattern(8, 0x77));
  P.send_at(b, path, psn);  // no ACK_REQ: the duplicate alone must trigger the ACK
  expect_ack_matches_model(path, 300, "ACK for a duplicate");
  EXPECT_EQ(hex(mr_bytes(t_, 0, 8)), hex(pattern(8, 0x11))) << "a path duplicate was placed";
}

// [MR-ACK-3]: a PSN 2^24 or more after cum_psn is dropped without acknowledgement.
TEST_F(AckTest, MR_ACK_3_FarPsnDroppedWithoutAck) {
  CLAUSES("MR-ACK-3 MR-SEC-3");
  const unsigned path = 7;
  Packet w = slot_write(0, 0x99);
  w.bth.conn_id = P.dut_conn_id;
  w.bth.path_id = path;
  w.bth.psn = P.model[path].cum + kPsnJumpMax;
  P.send_raw(w.encode(), P.my_sport(path));
  expect_none([&](const Received &r) { return r.pkt.bth.opcode == kAck &&
                                              r.pkt.bth.path_id == path; }, 100,
              "an ACK for a PSN 2^24 ahead");
  EXPECT_EQ(hex(mr_bytes(t_, 0, 8)), hex(pattern(8, 0))) << "placed";
  P.send_seq(slot_write(1, 1), path);
  expect_ack_matches_model(path, 300, "the path still works");
}

// [MR-SACK-5]: a PSN more than 256 ahead abandons everything before p - 256.
TEST_F(AckTest, MR_SACK_5_WindowSlides) {
  CLAUSES("MR-SACK-5 MR-ACK-3 MR-SACK-4");
  const unsigned path = 3;
  uint32_t base = P.next_psn[path];
  P.send_at(slot_write(0, 1), path, base + 1);  // base is missing
  expect_ack_matches_model(path);
  P.send_at(slot_write(1, 2), path, base + 300);
  expect_ack_matches_model(path, 300, "after PSN base+300");
  EXPECT_EQ(P.model[path].cum, base + 300 - 256);
  P.send_at(slot_write(2, 3), path, base);  // abandoned: a path duplicate
  expect_ack_matches_model(path, 300, "after the abandoned PSN");
  EXPECT_EQ(hex(mr_bytes(t_, 16, 8)), hex(pattern(8, 16))) << "an abandoned PSN was placed";
  P.send_at(slot_write(3, 4), path, base + 300 - 256);
  expect_ack_matches_model(path);
}

// [MR-ACK-5]: an ACK comes without ACK_REQ too (within MR_ACK_DELAY; we allow the
// emulated guest's scheduling), after MR_ACK_FREQ packets at the latest.
TEST_F(AckTest, MR_ACK_5_AckWithoutAckReq) {
  CLAUSES("MR-ACK-5 MR-ACK-6");
  const unsigned path = 2;
  P.send_seq(slot_write(0, 1, false), path);
  auto a = P.wait_ack(path, 200);
  ASSERT_TRUE(a) << "no ACK without ACK_REQ";
  EXPECT_EQ(a->pkt.ack.cum_psn, P.model[path].cum);
  // [MR-ACK-6]: it carries a MSGACK for the stream the packet touched.
  bool found = false;
  for (const MsgAck &m : a->pkt.ack.msg_acks)
    if (m.stream == t_.s.dut_qpn) {
      found = true;
      EXPECT_EQ(m.msn_cum, 1u) << "msn_cum after message 0 completed";
    }
  EXPECT_TRUE(found) << "no MSGACK for the stream";
}

// [MR-ACK-9]: a stream whose QP is moved to Error repeats its MSGACK at once, on the path
// that heard from us last, echoing no time, and once more on another path.  Every ACK of
// the Write is taken as lost; we send nothing more, so nothing but this clause makes the
// DUT speak again.
TEST_F(AckTest, MR_ACK_9_StreamMovedToErrorRepeatsItsMsgack) {
  CLAUSES("MR-ACK-9 MR-ACK-6 MR-VERBS-8");
  const unsigned path = 3;
  P.send_seq(slot_write(0, 0x41), path);
  ASSERT_TRUE(P.wait_ack(path, 300)) << "no ACK for the Write";
  auto is_ack = [](const Received &r) { return r.pkt.bth.opcode == kAck; };
  while (P.wait(is_ack, 150)) {
  }  // the Write's ACKs, MSGACK and all: lost
  P.dut.cmd("error " + std::to_string(t_.s.qp));
  const uint32_t stream = t_.s.dut_qpn;
  auto carries = [stream](const Received &r) {
    if (r.pkt.bth.opcode != kAck) return false;
    for (const MsgAck &m : r.pkt.ack.msg_acks)
      if (m.stream == stream) return true;
    return false;
  };
  // Both copies leave at once, in either order.
  std::vector<Received> copies;
  while (copies.size() < 2) {
    auto a = P.wait(carries, 300);
    if (!a) break;
    copies.push_back(*a);
  }
  ASSERT_FALSE(copies.empty())
      << "the stream's MSGACK did not come again when its QP went to Error";
  const Received *first = nullptr, *other = nullptr;
  for (const Received &r : copies) {
    for (const MsgAck &m : r.pkt.ack.msg_acks) {
      if (m.stream == stream) {
        EXPECT_EQ(m.msn_cum, 1u) << "message 0 was completed";
      }
    }
    if (r.pkt.bth.path_id == path && !first)
      first = &r;
    else
      other = &r;
  }
  ASSERT_TRUE(first) << "not on the path that heard from us last";
  EXPECT_EQ(first->pkt.ack.pkt_count, 0u) << "no packet triggered it";
  EXPECT_EQ(first->pkt.ack.ts_echo, 0u) << "an ACK no packet triggered echoes no time";
  EXPECT_EQ(first->pkt.ack.cum_psn, P.model[path].cum);
  // SHOULD: a second copy at once, on another path (no other heard from us: any other).
  ASSERT_TRUE(other) << "no second copy of the MSGACK (SHOULD)";
  EXPECT_NE(other->pkt.bth.path_id, path) << "the second copy on the same path (SHOULD: another)";
}

// [MR-ACK-4], [MR-ENC-4]: CE marks are counted and echoed per path.
TEST_F(AckTest, MR_ACK_4_CeMarksEchoed) {
  CLAUSES("MR-ACK-4 MR-ENC-4 MR-ACK-5");
  const unsigned path = 6;
  const uint8_t ce = 3, ect0 = 2;
  const uint8_t tos[] = {ect0, ce, ce, ect0, ce, ect0};
  unsigned pkts = 0, ces = 0, n = 0;
  for (uint8_t t : tos) {
    P.send_seq(slot_write(n, uint8_t(n), n == 5), path, t);
    n++;
  }
  for (int i = 0; i < 8 && pkts < 6; i++) {
    auto a = P.wait_ack(path, 200);
    if (!a) break;
    pkts += a->pkt.ack.pkt_count;
    ces += a->pkt.ack.ce_count;
  }
  EXPECT_EQ(pkts, 6u) << "pkt_count over the path's ACKs";
  EXPECT_EQ(ces, 3u) << "ce_count over the path's ACKs";
}

// [MR-CC-9]: every ACK carries the receiver's rate hint (0 only for "no allocation").
TEST_F(AckTest, MR_CC_9_AckCarriesRateHint) {
  CLAUSES("MR-CC-9 MR-CC-10 MR-CC-12");
  P.send_seq(slot_write(0, 1), 0);
  auto a = P.wait_ack(0, 300);
  ASSERT_TRUE(a);
  EXPECT_NE(a->pkt.ack.rate_hint, 0) << "rate_hint is 0: the receiver allocates no share";
  if (a->pkt.ack.rate_hint) {
    uint32_t r = decode_rate_hint(a->pkt.ack.rate_hint);
    EXPECT_EQ(encode_rate_hint(r), a->pkt.ack.rate_hint) << "not the canonical encoding";
  }
}

// [MR-VERBS-11]: a packet for a stream that does not exist is not placed or MSGACKed,
// but its PSN is acknowledged.
TEST_F(AckTest, MR_VERBS_11_UnknownStreamAckedNotPlaced) {
  CLAUSES("MR-VERBS-11 MR-ACK-6");
  Peer::Stream ghost = t_.s;
  ghost.dut_qpn = 0xabcde;
  Packet w = P.write_pkt(ghost, 0, t_.mr.va, t_.mr.rkey, 8, 0, pattern(8, 0x42));
  w.bth.flags |= kAckReq;
  P.send_seq(w, 0);
  auto a = P.wait_ack(0, 300);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->pkt.ack.cum_psn, P.model[0].cum);
  for (const MsgAck &m : a->pkt.ack.msg_acks) EXPECT_NE(m.stream, ghost.dut_qpn);
  EXPECT_EQ(hex(mr_bytes(t_, 0, 8)), hex(pattern(8, 0)));
}

// [MR-REL-9]: the stream window is 64 MSNs from msn_cum: MSN msn_cum + 63 is placed and
// acknowledged, MSN msn_cum + 64 is dropped without acknowledgement.
TEST_F(AckTest, MR_REL_9_MsnOutsideWindowDropped) {
  CLAUSES("MR-REL-9 MR-SEC-3");
  const unsigned path = 5;
  Packet in = P.write_pkt(t_.s, 63, t_.mr.va + 8, t_.mr.rkey, 8, 0, pattern(8, 0x24));
  in.bth.flags |= kAckReq;
  P.send_seq(in, path);
  expect_ack_matches_model(path, 300, "after a Write at MSN msn_cum + 63");
  EXPECT_EQ(hex(mr_bytes(t_, 8, 8)), hex(pattern(8, 0x24))) << "MSN msn_cum + 63 not placed";
  Packet w = P.write_pkt(t_.s, 64, t_.mr.va, t_.mr.rkey, 8, 0, pattern(8, 0x42));
  w.bth.flags |= kAckReq;
  w.bth.conn_id = P.dut_conn_id;
  w.bth.path_id = path;
  w.bth.psn = P.next_psn[path];
  P.send_raw(w.encode(), P.my_sport(path));
  expect_none([&](const Received &r) { return r.pkt.bth.opcode == kAck &&
                                              r.pkt.bth.path_id == path; }, 100,
              "an ACK for MSN msn_cum + 64");
  EXPECT_EQ(hex(mr_bytes(t_, 0, 8)), hex(pattern(8, 0)));
}

// [MR-REL-10], [MR-REL-7]: bytes of a completed message are never placed again, even
// when they come back with a new PSN (a retransmission).
TEST_F(AckTest, MR_REL_10_CompletedMessageNotPlacedAgain) {
  CLAUSES("MR-REL-10 MR-REL-7 MR-REL-1");
  Packet a = slot_write(0, 0x31);
  P.send_seq(a, 1);
  expect_ack_matches_model(1);
  Packet b = a;
  b.payload = pattern(8, 0x66);
  b.bth.flags |= kRetx;
  P.send_seq(b, 2);
  expect_ack_matches_model(2, 300, "a message duplicate is acknowledged");
  EXPECT_EQ(hex(mr_bytes(t_, 0, 8)), hex(pattern(8, 0x31)));
}

// [MR-PATH-8]: a PROBE is acknowledged like data and otherwise ignored.
TEST_F(AckTest, MR_PATH_8_ProbeAcknowledged) {
  CLAUSES("MR-PATH-8 MR-WIRE-3 MR-ACK-5");
  Packet p;
  p.bth.opcode = kProbe;
  p.bth.flags = kAckReq;
  P.send_seq(p, 0);
  expect_ack_matches_model(0, 300, "after a PROBE");
  expect_none([](const Received &r) { return r.pkt.bth.opcode == kNak; }, 30, "a NAK for a PROBE");
}

// [MR-ENC-5]: a MetaRoCE datagram over IPv4 without a UDP checksum is dropped, counted.
TEST_F(AckTest, MR_ENC_5_ZeroUdpChecksumDropped) {
  CLAUSES("MR-ENC-5 MR-GEN-5");
  const unsigned path = 1;
  Packet w = slot_write(3, 0x5c);
  w.bth.conn_id = P.dut_conn_id;
  w.bth.path_id = path;
  w.bth.psn = P.next_psn[path];
  uint64_t before = P.dut.counter("rx_drop_malformed");
  send_udp_with_checksum(P.my_addr, P.dut_addr, P.my_sport(path), w.encode(), 0);
  expect_none([&](const Received &r) { return r.pkt.bth.opcode == kAck &&
                                              r.pkt.bth.path_id == path; }, 60,
              "an ACK for a datagram without checksum");
  EXPECT_EQ(P.dut.counter("rx_drop_malformed"), before + 1);
  EXPECT_EQ(hex(mr_bytes(t_, 24, 8)), hex(pattern(8, 24))) << "placed";
  // A wrong nonzero checksum: dropped by UDP itself.
  send_udp_with_checksum(P.my_addr, P.dut_addr, P.my_sport(path), w.encode(), 0x1234);
  expect_none([&](const Received &r) { return r.pkt.bth.opcode == kAck &&
                                              r.pkt.bth.path_id == path; }, 60,
              "an ACK for a datagram with a wrong checksum");
  EXPECT_EQ(hex(mr_bytes(t_, 24, 8)), hex(pattern(8, 24))) << "placed";
  P.send_seq(w, path);
  expect_ack_matches_model(path, 300, "the same packet with its checksum");
  EXPECT_EQ(hex(mr_bytes(t_, 24, 8)), hex(pattern(8, 0x5c)));
}

// [MR-GEN-3]: PSNs are compared in serial arithmetic: a path's SACK state crosses 2^32
// (our path 0 starts 200 before it), with a gap and a reordering across the wrap.
TEST_F(AckTest, MR_GEN_3_PsnWrapOnAPath) {
  CLAUSES("MR-GEN-3 MR-ACK-1 MR-ACK-2 MR-SACK-4");
  const unsigned path = 0;
  uint32_t next = P.next_psn[path];
  ASSERT_TRUE(psn_before(next, 0u - 3u)) << "path 0 already crossed 2^32";
  ASSERT_LT(0u - next, 240u) << "path 0 is too far from 2^32 for one SACK window";
  // Fill up to the wrap in order, one ACKed packet at a time (a burst of ~200 datagrams
  // can overflow the DUT's socket in the emulated guest).
  unsigned slot = 0;
  while (next != 0u - 3u) {
    P.send_at(slot_write(slot % 64, uint8_t(slot)), path, next);
    auto a = P.wait_ack(path, 300);
    ASSERT_TRUE(a) << "no ACK while filling up to the wrap";
    EXPECT_EQ(a->pkt.ack.cum_psn, P.model[path].cum);
    next++;
    slot++;
  }
  const uint32_t order[] = {0u - 3u, 0u - 1u, 2u, 0u, 0u - 2u, 1u, 3u};  // gaps across 2^32
  for (uint32_t psn : order) {
    P.send_at(slot_write(slot % 64, uint8_t(slot)), path, psn);
    slot++;
    expect_ack_matches_model(path, 300, ("after PSN " + std::to_string(int32_t(psn))).c_str());
  }
  EXPECT_EQ(P.model[path].cum, 4u);
}

// [MR-GEN-4]: reserved fields are ignored on receipt (and every packet the DUT sends has
// them zero: the tester checks that on each packet it receives).
TEST_F(AckTest, MR_GEN_4_ReservedFieldsIgnored) {
  CLAUSES("MR-GEN-4");
  Target t = target("a", 4096, 0x10);
  Packet f = P.atomic_pkt(t.s, 0, kAtomicFadd, t.mr.va, t.mr.rkey, 1, 0xdeadbeef);  // compare: reserved for FADD
  Bytes b;
  f.bth.conn_id = P.dut_conn_id;
  f.bth.path_id = 2;
  f.bth.psn = P.next_psn[2];
  b = f.encode();
  b[32 + 12] = 0xa5;  // ATOMICETH reserved
  P.model[2].arrive(P.next_psn[2]++);
  P.send_raw(b, P.my_sport(2));
  auto r = P.wait([](const Received &x) { return x.pkt.bth.opcode == kAtomicResp; }, 500);
  ASSERT_TRUE(r) << "an atomic with nonzero reserved bytes was not executed";
  uint64_t v;
  Bytes m = mr_bytes(t, 0, 8);
  memcpy(&v, m.data(), 8);
  EXPECT_EQ(v, r->pkt.atomic_orig + 1);
}

// [MR-ACK-7]: an ACK for PSNs never sent is dropped: it does not retire the DUT's
// outstanding packet, which is still retransmitted.
TEST_F(AckTest, MR_ACK_7_AckBeyondNextPsnDropped) {
  CLAUSES("MR-ACK-7 MR-REL-2");
  std::optional<Received> lost;
  P.lose = [&](const Received &r) {
    if (lost || r.pkt.bth.opcode != kWrite || r.pkt.bth.stream != t_.s.my_qpn) return false;
    lost = r;
    return true;
  };
  P.dut.cmd("write " + std::to_string(t_.s.qp) + " 0 100 0x1000 0x5");
  for (int i = 0; i < 100 && !lost; i++) P.pump(5);
  ASSERT_TRUE(lost);
  Packet a;
  a.bth.opcode = kAck;
  a.bth.conn_id = P.dut_conn_id;
  a.bth.path_id = lost->pkt.bth.path_id;
  a.ack.cum_psn = lost->pkt.bth.psn + (1u << 20);  // far after anything sent
  a.ack.msg_acks.push_back({t_.s.my_qpn, 0});
  P.send_raw(a.encode(), P.my_sport(0));
  auto again = P.wait([&](const Received &r) { return r.pkt.bth.opcode == kWrite &&
                                                      r.pkt.bth.stream == t_.s.my_qpn; }, 2000);
  EXPECT_TRUE(again) << "the lost packet was not retransmitted after a bogus ACK";
  std::string wc;
  for (int i = 0; i < 100 && (wc = poll_dut(t_.s, 0)) == "none\n"; i++) P.pump(10);
  EXPECT_NE(wc.find("status=0 opcode=1 "), std::string::npos) << wc;
}

}  // namespace
}  // namespace conf
