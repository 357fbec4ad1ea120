// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ack.rst NAK codes, security.rst [MR-SEC-1]/[MR-SEC-2]: what a responder refuses, and how.
#include "suite.hpp"

namespace conf {
namespace {

constexpr int kQpsErr = 6;  // enum ib_qp_state IB_QPS_ERR

class NakTest : public Conformance {
 protected:
  // Sends p on path 1 and expects a NAK code for it, its PSN acknowledged, the QP in error
  // when fatal, and the NAK repeated for a later packet of the stream.
  void expect_nak(const Peer::Stream &s, Packet p, uint8_t code, bool fatal = true) {
    p.bth.flags |= kAckReq;
    P.send_seq(p, 1);
    auto n = P.wait_nak(s.dut_qpn, 500);
    ASSERT_TRUE(n) << "no NAK";
    EXPECT_EQ(n->pkt.nak.code, code);
    EXPECT_EQ(n->pkt.bth.msn, p.bth.msn);
    EXPECT_EQ(n->pkt.bth.psn, 0u);
    EXPECT_EQ(n->pkt.bth.path_id, 0u);
    // [MR-NAK-1]: the PSN is still acknowledged.
    auto a = P.wait_ack(1, 300);
    ASSERT_TRUE(a) << "the NAKed packet's PSN was not acknowledged";
    EXPECT_EQ(a->pkt.ack.cum_psn, P.model[1].cum);
    if (!fatal) return;
    // [MR-NAK-2]: the responder's QP is in the error state.
    for (int i = 0; i < 50 && qp_state(s) != kQpsErr; i++) P.pump(10);
    EXPECT_EQ(qp_state(s), kQpsErr) << "the responder QP is not in the error state";
    // [MR-NAK-3]: repeated for a later packet of the stream.
    Packet later = p;
    later.bth.msn = p.bth.msn + 1;
    P.send_seq(later, 1);
    auto again = P.wait_nak(s.dut_qpn, 500);
    EXPECT_TRUE(again) << "the NAK is not repeated for a later message";
  }
};

TEST_F(NakTest, MR_SEC_1_BadRkeyNaked) {
  CLAUSES("MR-SEC-1 MR-NAK-1 MR-NAK-2 MR-NAK-3 MR-VERBS-8");
  Target t = target("w", 4096, 0x30);
  Packet w = P.write_pkt(t.s, 0, t.mr.va, t.mr.rkey ^ 0x00010000, 64, 0, pattern(64, 1));
  expect_nak(t.s, w, kNakBadRkey);
  EXPECT_EQ(hex(mr_bytes(t, 0, 64)), hex(pattern(64, 0x30))) << "bytes placed under a bad rkey";
}

TEST_F(NakTest, MR_SEC_1_BadKeyByteNaked) {
  CLAUSES("MR-SEC-1 MR-NAK-1");
  Target t = target("w", 4096, 0x30);
  Packet w = P.write_pkt(t.s, 0, t.mr.va, t.mr.rkey ^ 0x1, 64, 0, pattern(64, 1));
  expect_nak(t.s, w, kNakBadRkey);
  EXPECT_EQ(hex(mr_bytes(t, 0, 64)), hex(pattern(64, 0x30)));
}

TEST_F(NakTest, MR_SEC_1_OutOfBoundsNaked) {
  CLAUSES("MR-SEC-1 MR-NAK-1 MR-NAK-2");
  Target t = target("w", 4096, 0x30);
  Packet w = P.write_pkt(t.s, 0, t.mr.va + 4096 - 32, t.mr.rkey, 64, 0, pattern(64, 1));
  expect_nak(t.s, w, kNakBounds);
  EXPECT_EQ(hex(mr_bytes(t, 4096 - 32, 32)), hex(pattern(32, uint8_t(0x30 + 4096 - 32))));
}

TEST_F(NakTest, MR_SEC_1_NoRemoteWriteAccessNaked) {
  CLAUSES("MR-SEC-1 MR-NAK-1 MR-NAK-2");
  Target t = target("r", 4096, 0x30);
  Packet w = P.write_pkt(t.s, 0, t.mr.va, t.mr.rkey, 64, 0, pattern(64, 1));
  expect_nak(t.s, w, kNakAccess);
  EXPECT_EQ(hex(mr_bytes(t, 0, 64)), hex(pattern(64, 0x30)));
}

TEST_F(NakTest, MR_SEC_1_MisalignedAtomicNaked) {
  CLAUSES("MR-SEC-1 MR-NAK-2 MR-WIRE-8");
  Target t = target("a", 4096, 0x30);
  Packet a = P.atomic_pkt(t.s, 0, kAtomicFadd, t.mr.va + 4, t.mr.rkey, 1, 0);
  expect_nak(t.s, a, kNakAccess);
  EXPECT_EQ(hex(mr_bytes(t, 0, 16)), hex(pattern(16, 0x30)));
}

// [MR-SEC-1]: a zero-length WRITE or READ names no memory, so its rkey and va are not
// checked (IB C9-88; UCX flushes with zero-length WRITEs of rkey 0): acknowledged, not
// NAKed, the QP stays up, the Read is answered with one empty READ_RESP, nothing changes.
TEST_F(NakTest, MR_SEC_1_ZeroLengthWriteAndReadNeedNoKey) {
  CLAUSES("MR-SEC-1 MR-WIRE-10 MR-WIRE-7");
  Target t = target("rw", 4096, 0x30);
  Packet w = P.write_pkt(t.s, 0, 0, 0, 0, 0, Bytes{});
  w.bth.flags |= kAckReq;
  P.send_seq(w, 1);
  auto a = P.wait_ack(1, 500);
  ASSERT_TRUE(a) << "the zero-length WRITE was not acknowledged";
  EXPECT_EQ(a->pkt.ack.cum_psn, P.model[1].cum);
  expect_none([&](const Received &r) { return r.pkt.bth.opcode == kNak; }, 100,
              "a NAK for a zero-length WRITE with rkey 0");
  EXPECT_NE(qp_state(t.s), kQpsErr) << "the zero-length WRITE failed the QP";

  P.send_seq(P.read_pkt(t.s, 1, 0, 0, 0), 1);
  auto r = P.wait([](const Received &x) { return x.pkt.bth.opcode == kReadResp; }, 1000);
  ASSERT_TRUE(r) << "no READ_RESP for a zero-length READ with rkey 0";
  EXPECT_EQ(r->pkt.bth.msn, 1u);
  EXPECT_EQ(r->pkt.bth.payload_len, 0u);
  EXPECT_TRUE(r->pkt.bth.flags & kLast);
  expect_none([&](const Received &x) { return x.pkt.bth.opcode == kNak; }, 100,
              "a NAK for a zero-length READ with rkey 0");
  EXPECT_EQ(hex(mr_bytes(t, 0, 64)), hex(pattern(64, 0x30)));
}

// [MR-VERBS-8], [MR-SEC-8]: once the consumer moves the DUT's QP to Error, a valid Write
// and a valid Read for its stream are refused with NAK REMOTE_OP_ERROR (not INVALID_REQUEST:
// the request is good, the QP cannot execute it), nothing is placed and nothing is read.
// Before a packet arrives, it sends no NAK.
TEST_F(NakTest, MR_VERBS_8_QpInErrorRefusesWithRemoteOpError) {
  CLAUSES("MR-VERBS-8 MR-SEC-8 MR-NAK-1 MR-NAK-3");
  Target t = target("rw", 4096, 0x30);
  P.dut.cmd("error " + std::to_string(t.s.qp));
  ASSERT_EQ(qp_state(t.s), kQpsErr);
  expect_none([](const Received &x) { return x.pkt.bth.opcode == kNak; }, 200,
              "a NAK that no packet asked for");
  Packet w = P.write_pkt(t.s, 0, t.mr.va, t.mr.rkey, 64, 0, pattern(64, 1));
  expect_nak(t.s, w, kNakRemoteOpError);
  EXPECT_EQ(hex(mr_bytes(t, 0, 64)), hex(pattern(64, 0x30))) << "placed into an errored QP's MR";

  Packet r = P.read_pkt(t.s, 2, t.mr.va, t.mr.rkey, 64);
  r.bth.flags |= kAckReq;
  P.send_seq(r, 1);
  auto n = P.wait_nak(t.s.dut_qpn, 500);
  ASSERT_TRUE(n) << "no NAK for a Read to an errored QP";
  EXPECT_EQ(n->pkt.nak.code, kNakRemoteOpError);
  EXPECT_EQ(n->pkt.bth.msn, 0u) << "not the first message the stream did not complete";
  expect_none([](const Received &x) { return x.pkt.bth.opcode == kReadResp; }, 200,
              "a READ_RESP from an errored QP");
}

TEST_F(NakTest, MR_SEC_2_SendLongerThanReceiveNaked) {
  CLAUSES("MR-SEC-2 MR-NAK-2 MR-WIRE-6");
  Peer::Stream s = P.open_stream();
  P.dut.cmd("recv " + std::to_string(s.qp) + " 0 100");
  Packet p = P.send_pkt(s, 0, 0, 200, 0, pattern(200, 3));
  expect_nak(s, p, kNakInvalidRequest);
  std::string wc = poll_dut(s, 200);
  EXPECT_EQ(wc.find("status=0 "), std::string::npos) << "a successful completion: " << wc;
}

TEST_F(NakTest, MR_NAK_4_RnrThenResend) {
  CLAUSES("MR-NAK-4 MR-VERBS-7 MR-NAK-1");
  Peer::Stream s = P.open_stream();
  Bytes data = pattern(300, 9);
  Packet p = P.send_pkt(s, 0, 0, 300, 0, data);
  expect_nak(s, p, kNakRnr, false);
  EXPECT_NE(qp_state(s), kQpsErr) << "RNR is not fatal";
  // Resend from offset 0 after a receive is posted: placed and completed.
  P.dut.cmd("recv " + std::to_string(s.qp) + " 0 1024");
  p.bth.flags = kLast | kRetx | kAckReq;
  P.send_seq(p, 2);
  std::string wc = poll_dut(s, 1000);
  EXPECT_NE(wc.find("status=0 opcode=128 len=300"), std::string::npos) << wc;
  EXPECT_EQ(hex(P.dut_bytes("l", s.qp, 0, 300)), hex(data));
}

// [MR-REL-11] a message probe of a Send the DUT does not have whole (its first packet was
// refused, as if by an RNR whose NAK was lost) places nothing and brings an RNR NAK, so
// that the requester resends it all; a probe of a complete message is a duplicate.
TEST_F(NakTest, MR_REL_11_ProbeOfAnIncompleteSendIsAnsweredWithRnr) {
  CLAUSES("MR-REL-11 MR-NAK-3 MR-NAK-4 MR-NAK-1");
  Peer::Stream s = P.open_stream();
  const uint32_t len = P.pmtu + 100;
  Bytes data = pattern(len, 11);
  P.dut.cmd("recv " + std::to_string(s.qp) + " 0 " + std::to_string(len));
  Packet first = P.send_pkt(s, 0, 0, len, 0, Bytes(data.begin(), data.begin() + P.pmtu));
  Packet last = P.send_pkt(s, 0, 0, len, P.pmtu, Bytes(data.begin() + P.pmtu, data.end()));
  Packet probe = last;
  probe.bth.flags |= kMsgProbe | kRetx | kAckReq;
  P.send_seq(probe, 1);
  auto n = P.wait_nak(s.dut_qpn, 500);
  ASSERT_TRUE(n) << "no NAK for the probe of an incomplete message";
  EXPECT_EQ(n->pkt.nak.code, kNakRnr);
  EXPECT_EQ(n->pkt.bth.msn, 0u);
  auto a = P.wait_ack(1, 300);
  ASSERT_TRUE(a) << "the probe's PSN was not acknowledged";
  EXPECT_EQ(a->pkt.ack.cum_psn, P.model[1].cum);
  EXPECT_EQ(poll_dut(s, 100), "none\n") << "completed from the probe";
  // The whole message again, as [MR-NAK-4] has it: placed and completed.
  P.send_seq(first, 2);
  P.send_seq(last, 3);
  std::string wc = poll_dut(s, 1000);
  EXPECT_NE(wc.find("status=0 opcode=128 len=" + std::to_string(len)), std::string::npos) << wc;
  EXPECT_EQ(hex(P.dut_bytes("l", s.qp, 0, len)), hex(data));
  // A probe of the complete message is a duplicate: acknowledged, no NAK.
  P.send_seq(probe, 1);
  EXPECT_TRUE(P.wait_ack(1, 300)) << "the probe of a complete message was not acknowledged";
  EXPECT_FALSE(P.wait_nak(s.dut_qpn, 200)) << "a NAK for a complete message";
}

}  // namespace
}  // namespace conf
