// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// headers.rst: packets that break a rule are dropped, counted and change nothing.
#include "suite.hpp"

namespace conf {
namespace {

class WireTest : public Conformance {
 protected:
  // Sends bad (a corrupted form of a valid one-packet Write at the path's next PSN) and
  // checks that it is dropped before lookup (counted under counter, no ACK, nothing
  // placed), then that the valid packet at the same PSN is placed and acknowledged.
  void expect_dropped(const std::function<void(Bytes &)> &corrupt, const char *what,
                      const std::string &counter = "rx_drop_malformed") {
    SCOPED_TRACE(what);
    if (!t_) t_ = target("w", 4096, 0x10);
    const Target &t = *t_;
    P.dut.cmd("fill m " + std::to_string(t.mr.idx) + " 0 4096 16");
    Bytes data = pattern(200, 0x55);
    Packet w = P.write_pkt(t.s, msn_++, t.mr.va + 64, t.mr.rkey, 200, 0, data);
    w.bth.flags |= kAckReq;
    w.bth.conn_id = P.dut_conn_id;
    w.bth.path_id = 2;
    w.bth.psn = P.next_psn[2];
    Bytes bad = w.encode();
    corrupt(bad);
    uint64_t before = P.dut.counter(counter);
    P.send_raw(bad, P.my_sport(2));
    expect_none([](const Received &r) { return r.pkt.bth.opcode == kAck ||
                                               r.pkt.bth.opcode == kNak; }, 60,
                "an answer to a packet that must be dropped");
    EXPECT_EQ(P.dut.counter(counter), before + 1) << counter << " counts the drop";
    EXPECT_EQ(hex(mr_bytes(t, 64, 200)), hex(pattern(200, 0x10 + 64))) << "nothing placed";
    // The connection is unaffected: the valid packet with the same PSN works.
    P.send_seq(w, 2);
    expect_ack_matches_model(2, 500, "after the dropped packet");
    EXPECT_EQ(hex(mr_bytes(t, 64, 200)), hex(data));
  }
  std::optional<Target> t_;
  uint32_t msn_ = 0;
};

TEST_F(WireTest, MR_WIRE_1_OtherVersionDropped) {
  CLAUSES("MR-WIRE-1 MR-GEN-5 MR-WIRE-13");
  expect_dropped([](Bytes &b) { b[0] = 2; }, "version 2");
  expect_dropped([](Bytes &b) { b[0] = 0; }, "version 0");
}

TEST_F(WireTest, MR_WIRE_2_UnknownOpcodeDropped) {
  CLAUSES("MR-WIRE-2 MR-GEN-5");
  expect_dropped([](Bytes &b) { b[1] = 0x7f; }, "opcode 0x7f");
  expect_dropped([](Bytes &b) { b[1] = 0x09; }, "opcode 0x09");
}

TEST_F(WireTest, MR_WIRE_4_BadFlagsDropped) {
  CLAUSES("MR-WIRE-4 MR-GEN-5");
  expect_dropped([](Bytes &b) { b[2] |= 0x40; }, "reserved flag bit 14");
  expect_dropped([](Bytes &b) { b[3] |= 0x80; }, "reserved flag bit 7");  // bit 6 is MSG_PROBE
  expect_dropped([](Bytes &b) { b[3] |= kInv; }, "INV on a WRITE");
  expect_dropped([](Bytes &b) { b[3] &= uint8_t(~kLast); }, "LAST missing on the last packet");
}

TEST_F(WireTest, MR_WIRE_5_PathAndStreamRangeDropped) {
  CLAUSES("MR-WIRE-5 MR-GEN-5");
  expect_dropped([](Bytes &b) { b[9] = 16; }, "path_id 16");
  expect_dropped([](Bytes &b) { b[16] = 1; }, "stream top bits set");
}

TEST_F(WireTest, MR_WIRE_12_LengthChecksDropped) {
  CLAUSES("MR-WIRE-12 MR-SEC-6 MR-GEN-5 MR-ENC-7");
  expect_dropped([](Bytes &b) { b.push_back(0); }, "one byte more than payload_len");
  expect_dropped([](Bytes &b) { b.pop_back(); }, "one byte less than payload_len");
  expect_dropped([](Bytes &b) { b.resize(40); }, "truncated in the RETH");
  expect_dropped([](Bytes &b) { b.resize(31); }, "shorter than the base header");
  expect_dropped([](Bytes &b) { b[10] = 0xff; b[11] = 0xff; }, "payload_len 65535");
  // RETH length above 2^31 (with a matching LAST rule it is still too long).
  expect_dropped([](Bytes &b) { b[32 + 12] = 0x80; b[32 + 15] = 1; }, "length 2^31 + 1");
  expect_dropped([](Bytes &b) { b[24] = 0xff; }, "offset + payload_len beyond the message");
}

TEST_F(WireTest, MR_WIRE_12_UnsequencedWithPsnDropped) {
  CLAUSES("MR-WIRE-12 MR-WIRE-3");
  // An ACK with a nonzero psn: malformed.  Nothing must answer it.
  Packet a;
  a.bth.opcode = kAck;
  a.bth.conn_id = P.dut_conn_id;
  a.bth.psn = 1;
  uint64_t before = P.dut.counter("rx_drop_malformed");
  P.send_raw(a.encode(), P.my_sport(0));
  P.pump(50);
  EXPECT_EQ(P.dut.counter("rx_drop_malformed"), before + 1);
}

TEST_F(WireTest, MR_CONN_3_UnknownConnectionDropped) {
  CLAUSES("MR-CONN-3 MR-SEC-3 MR-SEC-5");
  expect_dropped([](Bytes &b) { b[4] ^= 0x5a; }, "unknown conn_id", "rx_drop_unknown_conn");
}

TEST_F(WireTest, MR_WIRE_10_OffsetNotAtPmtuDropped) {
  CLAUSES("MR-WIRE-10 MR-WIRE-13 MR-CONN-6");
  // Checked after lookup ([MR-WIRE-13]): dropped, nothing placed, the PSN not acknowledged.
  expect_dropped([&](Bytes &b) { b[27] = 8; b[47] = 208; }, "offset 8 of 208: not a PMTU cut",
                 "rx_packets");
}

}  // namespace
}  // namespace conf
