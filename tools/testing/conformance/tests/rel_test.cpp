// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// reliability.rst, path.rst and verbs.rst: the DUT as responder (completions, atomics,
// Reads) and as sender (exact retransmission, RTO, path failure).
#include <algorithm>
#include <cstdio>
#include <set>

#include "suite.hpp"

namespace conf {
namespace {

class RelTest : public Conformance {
 protected:
  // Pumps (answering the DUT) until the DUT's QP has a completion; its poll answer.
  std::string wait_wc(const Peer::Stream &s, int ms) { return wait_wc_of(P, s, ms); }
  std::string wait_wc_of(Peer &q, const Peer::Stream &s, int ms) {
    auto end = Clock::now() + std::chrono::milliseconds(ms);
    while (Clock::now() < end) {
      q.pump(5);  // which serves the shared connection too
      std::string wc = q.dut.cmd("poll " + std::to_string(s.qp) + " 0");
      if (wc != "none\n") return wc;
    }
    return "none\n";
  }
  // The bytes we received for the DUT's message (stream, msn), in offset order.
  Bytes in_bytes(uint32_t stream, uint32_t msn) {
    Bytes b;
    for (const auto &[off, part] : P.in_msgs[{stream, msn}].parts) {
      if (off != b.size()) return b;  // a hole
      b.insert(b.end(), part.begin(), part.end());
    }
    return b;
  }
};

// [MR-VERBS-2]: responder completions in MSN order whatever the arrival order, and
// [MR-WIRE-6]: Sends placed by (rsn, offset) as they arrive.
TEST_F(RelTest, MR_VERBS_2_CompletionsInMsnOrder) {
  CLAUSES("MR-VERBS-2 MR-WIRE-6 MR-VERBS-12 MR-WIRE-10 MR-VERBS-6");
  Peer::Stream s = P.open_stream();
  const std::string q = std::to_string(s.qp);
  std::string r0 = P.dut.cmd("recv " + q + " 0 4096");
  std::string r1 = P.dut.cmd("recv " + q + " 8192 4096");
  const uint32_t len0 = P.pmtu + 100;
  Bytes m0 = pattern(len0, 0x40), m1 = pattern(200, 0x80);
  Packet a0 = P.send_pkt(s, 0, 0, len0, 0, Bytes(m0.begin(), m0.begin() + P.pmtu));
  Packet a1 = P.send_pkt(s, 0, 0, len0, P.pmtu, Bytes(m0.begin() + P.pmtu, m0.end()));
  Packet b = P.send_pkt(s, 1, 1, 200, 0, m1);
  b.bth.flags |= kAckReq;
  P.send_seq(b, 3);  // message 1 first: complete but must wait for message 0
  ASSERT_TRUE(P.wait_ack(3, 300));
  EXPECT_EQ(poll_dut(s, 50), "none\n") << "message 1 completed before message 0";
  EXPECT_EQ(hex(P.dut_bytes("l", s.qp, 8192, 200)), hex(m1)) << "message 1 not placed on arrival";
  P.send_seq(a1, 4);  // then message 0's second packet, then its first
  P.send_seq(a0, 5);
  std::string wc = poll_dut(s, 500);
  wc += poll_dut(s, 100);
  uint64_t w0 = Dut::field(r0, "wr"), w1 = Dut::field(r1, "wr");
  size_t p0 = wc.find("wr=" + std::to_string(w0) + " status=0 opcode=128 len=" +
                      std::to_string(len0));
  size_t p1 = wc.find("wr=" + std::to_string(w1) + " status=0 opcode=128 len=200");
  EXPECT_NE(p0, std::string::npos) << wc;
  EXPECT_NE(p1, std::string::npos) << wc;
  EXPECT_LT(p0, p1) << "completions out of MSN order: " << wc;
  EXPECT_EQ(hex(P.dut_bytes("l", s.qp, 0, len0)), hex(m0));
}

// [MR-REL-12]: a duplicate atomic is answered from the replay cache, executed once.
TEST_F(RelTest, MR_REL_12_AtomicsExactlyOnce) {
  CLAUSES("MR-REL-12 MR-WIRE-8 MR-VERBS-1 MR-ENC-4 MR-VERBS-4");
  Target t = target("a", 4096, 0x10);
  Bytes before = mr_bytes(t, 0, 8);
  uint64_t orig = 0;
  for (uint8_t c : before) orig = orig << 8 | c;  // big-endian view of the bytes
  Packet f = P.atomic_pkt(t.s, 0, kAtomicFadd, t.mr.va, t.mr.rkey, 5, 0);
  P.send_seq(f, 1);
  // Responses are matched by msn: the DUT may send one again (a tail-loss probe) when
  // our ACK is late, and that copy must not pass for the answer to a later request.
  auto resp_to = [](uint32_t msn) {
    return [msn](const Received &x) {
      return x.pkt.bth.opcode == kAtomicResp && x.pkt.bth.msn == msn;
    };
  };
  auto r1 = P.wait(resp_to(0), 500);
  ASSERT_TRUE(r1) << "no ATOMIC_RESP";
  EXPECT_EQ(r1->pkt.bth.stream, t.s.my_qpn);
  EXPECT_EQ(r1->pkt.bth.msn, 0u);
  EXPECT_EQ(r1->tos & 3, 2) << "sequenced packets are sent ECT(0)";
  // The same request again, as a retransmission on another path.
  f.bth.flags |= kRetx;
  P.send_seq(f, 2);
  auto r2 = P.wait(resp_to(0), 500);
  ASSERT_TRUE(r2) << "no ATOMIC_RESP to the duplicate";
  EXPECT_EQ(r2->pkt.atomic_orig, r1->pkt.atomic_orig) << "the duplicate was executed again";
  Bytes after = mr_bytes(t, 0, 8);
  uint64_t host_before = 0, host_after = 0;  // the MR holds a host-endian u64
  memcpy(&host_before, before.data(), 8);
  memcpy(&host_after, after.data(), 8);
  EXPECT_EQ(host_after, host_before + 5) << "the add was not executed exactly once";
  EXPECT_EQ(r1->pkt.atomic_orig, host_before) << "orig is the value before the add";
  (void)orig;
  // A CAS that matches, then its duplicate: swapped once.
  Packet c = P.atomic_pkt(t.s, 1, kAtomicCas, t.mr.va + 8, t.mr.rkey, 0x1122334455667788ull, 0);
  memcpy(&c.aeth.compare, mr_bytes(t, 8, 8).data(), 8);
  P.send_seq(c, 3);
  auto c1 = P.wait(resp_to(1), 500);
  ASSERT_TRUE(c1);
  P.dut.cmd("fill m " + std::to_string(t.mr.idx) + " 8 8 0");  // changed behind its back
  Bytes changed = mr_bytes(t, 8, 8);
  c.bth.flags |= kRetx;
  P.send_seq(c, 4);
  auto c2 = P.wait(resp_to(1), 500);
  ASSERT_TRUE(c2);
  EXPECT_EQ(c2->pkt.atomic_orig, c1->pkt.atomic_orig) << "CAS duplicate not from the cache";
  EXPECT_EQ(hex(mr_bytes(t, 8, 8)), hex(changed)) << "CAS duplicate executed again";
}

// [MR-WIRE-7]: READ_RESP packets: requester's stream, the Read's msn, byte offsets cut at
// the PMTU, msg_len = length, LAST exactly on the last.
TEST_F(RelTest, MR_WIRE_7_ReadResponsePackets) {
  CLAUSES("MR-WIRE-7 MR-WIRE-10 MR-WIRE-11 MR-ENC-4 MR-ENC-2 MR-VERBS-1");
  Target t = target("r", 8192, 0x21);
  const uint32_t len = 3 * P.pmtu - 17;
  P.send_seq(P.read_pkt(t.s, 0, t.mr.va + 5, t.mr.rkey, len), 1);
  std::map<uint32_t, Bytes> got;
  for (int i = 0; i < 16 && got.size() < 3; i++) {
    auto r = P.wait([](const Received &x) { return x.pkt.bth.opcode == kReadResp; }, 500);
    if (!r) break;
    const Packet &p = r->pkt;
    EXPECT_EQ(p.bth.stream, t.s.my_qpn);
    EXPECT_EQ(p.bth.msn, 0u);
    EXPECT_EQ(p.msgh.msg_len, len);
    EXPECT_EQ(p.bth.offset % P.pmtu, 0u);
    EXPECT_EQ(p.bth.payload_len, std::min<uint32_t>(P.pmtu, len - p.bth.offset));
    EXPECT_EQ(bool(p.bth.flags & kLast), p.bth.offset + p.bth.payload_len == len);
    EXPECT_EQ(r->tos & 3, 2) << "ECT(0)";
    EXPECT_GE(r->sport, 49152);
    got[p.bth.offset] = p.payload;
  }
  ASSERT_EQ(got.size(), 3u);
  Bytes all;
  for (auto &[off, b] : got) all.insert(all.end(), b.begin(), b.end());
  Bytes want = mr_bytes(t, 5, len);
  EXPECT_EQ(hex(all), hex(want));
}

// [MR-SACK-2], [MR-REL-1], [MR-REL-2]: a SACK gap makes the DUT resend exactly the missing
// packet, with a new PSN, the same message fields and RETX, and nothing else.  We answer
// every packet at once.  A resend with ACK_REQ of another packet is a probe (tail-loss
// [MR-REL-6], message [MR-REL-11]).  Our ACKs must win the race with the DUT's timers,
// and in the emulated guest they can take milliseconds: two lossless Writes first, their
// packets taken in 4 ms and then 16 ms late (Peer::data_delay), raise every path's RTT
// estimate and so its RTO and PTO well above that.  Right after them (no idle spell that
// would restart the estimates, [MR-REL-3]) the Write under test loses its first packet.
// An attempt proves nothing, and is made again (up to five in all), when an RTO came
// during it (a stall of the guest: it may resend anything outstanding) or when no packet
// followed the lost one on its path (no SACK gap).  Only the Write under test counts: the
// warm-ups' own resends, held back 16 ms, arrive during it.  A sender that resends
// acknowledged packets when a gap shows (go-back-N) fails.
TEST_F(RelTest, MR_SACK_2_RetransmitsExactlyTheMissingPacket) {
  CLAUSES("MR-SACK-2 MR-SACK-3 MR-REL-1 MR-REL-2 MR-SACK-1 MR-VERBS-3 MR-CC-8");
  Peer::Stream s = P.open_stream();
  const uint32_t len = 64 * P.pmtu;
  const std::string write = "write " + std::to_string(s.qp) + " 0 " + std::to_string(len) +
                            " 0x10000 0x1234";
  P.dut.cmd("fill l " + std::to_string(s.qp) + " 0 " + std::to_string(len) + " 3");
  uint32_t msn = 0;
  bool judged = false;
  for (int attempt = 1; attempt <= 5 && !judged; attempt++) {
    for (int late_ms : {4, 16}) {
      P.data_delay = std::chrono::milliseconds(late_ms);
      P.dut.cmd(write);
      msn++;
      std::string warm = wait_wc(s, 10000);
      P.data_delay = {};
      ASSERT_NE(warm.find("status=0 opcode=1 "), std::string::npos) << "warm-up Write: " << warm;
    }
    const uint64_t rtos0 = P.dut.counter("rtos");
    P.seen_data.clear();
    std::optional<Received> lost;
    P.lose = [&](const Received &r) {
      if (lost || r.pkt.bth.opcode != kWrite || r.pkt.bth.offset != 0) return false;
      lost = r;
      return true;
    };
    P.dut.cmd(write);
    std::string wc = wait_wc(s, 10000);
    P.lose = nullptr;
    const uint64_t rtos = P.dut.counter("rtos") - rtos0;
    ASSERT_NE(wc.find("status=0 opcode=1 "), std::string::npos) << "Write completion: " << wc;
    ASSERT_TRUE(lost);
    ASSERT_EQ(hex(in_bytes(s.my_qpn, msn++)), hex(pattern(len, 3))) << "the bytes that arrived";
    unsigned originals = 0, probes = 0, of_lost = 0, followers = 0;
    std::string extra;
    for (const Received &r : P.seen_data) {
      // Only the Write under test: resends of the warm-ups that the 16 ms delay held
      // back arrive during it, and they are no resends of this message's packets.
      if (r.pkt.bth.opcode != kWrite || r.pkt.bth.stream != s.my_qpn ||
          r.pkt.bth.msn != lost->pkt.bth.msn)
        continue;
      const unsigned path = r.pkt.bth.path_id;
      if (!(r.pkt.bth.flags & kRetx)) {
        originals++;
        followers += path == lost->pkt.bth.path_id && psn_before(lost->pkt.bth.psn, r.pkt.bth.psn);
      } else if (r.pkt.bth.offset == 0) {
        of_lost++;
        EXPECT_EQ(r.pkt.bth.msn, lost->pkt.bth.msn);
        EXPECT_EQ(r.pkt.reth.va, lost->pkt.reth.va);
        EXPECT_EQ(r.pkt.reth.length, lost->pkt.reth.length);
        EXPECT_FALSE(path == lost->pkt.bth.path_id && r.pkt.bth.psn == lost->pkt.bth.psn)
            << "a retransmission must get a new PSN";
      } else if (r.pkt.bth.flags & kAckReq) {
        probes++;
      } else {
        extra += " " + std::to_string(r.pkt.bth.offset / P.pmtu);
      }
    }
    printf("# attempt %d: %u new packets after the lost one on its path; %u resend(s) of the lost "
           "packet, %u probe(s), other packets resent:%s; %llu RTOs\n", attempt, followers,
           of_lost, probes, extra.empty() ? " none" : extra.c_str(), (unsigned long long)rtos);
    EXPECT_EQ(originals, 63u) << "new packets (the lost one not counted)";
    EXPECT_GE(of_lost, 1u) << "the missing packet was not retransmitted";
    if (rtos || !followers) continue;  // a stall, or no SACK gap to judge by
    judged = true;
    EXPECT_EQ(extra, "") << "packets resent that were acknowledged (their offsets / pmtu)";
    if (!extra.empty()) {
      // What the DUT sent, to tell a go-back-N from a race of this test.
      printf("# lost: path %u psn %#x msn %u; sent (path/psn/msn/offset/flags):",
             lost->pkt.bth.path_id, lost->pkt.bth.psn, lost->pkt.bth.msn);
      for (const Received &r : P.seen_data)
        if (r.pkt.bth.stream == s.my_qpn)
          printf(" %u/%#x/%u/%u/%#x", r.pkt.bth.path_id, r.pkt.bth.psn, r.pkt.bth.msn,
                 r.pkt.bth.offset / P.pmtu, r.pkt.bth.flags);
      printf("\n");
    }
  }
  EXPECT_TRUE(judged) << "in every attempt an RTO (the guest stalled longer than the DUT's RTO) "
                          "or no packet after the lost one on its path";
}

// [MR-REL-3], [MR-REL-5], [MR-PATH-6]: silence makes RTOs (after at least MR_MIN_RTO, at
// most MR_MAX_RTO apart), paths fail and re-roll their entropy within 49152..65535; when
// ACKs return ([MR-PATH-5]) the message completes.  The doubling of [MR-REL-4] is not
// checked: retransmissions move to other paths, so one path rarely times out twice.
// The silence lasts until a path has re-rolled, at most 1.5 s (under MR_CONN_TIMEOUT):
// how soon a path sees MR_PATH_FAIL_RTOS timeouts depends on the RTTs the emulated
// guest measured before.
TEST_F(RelTest, MR_REL_3_RtoRetransmitsAndPathsReroll) {
  CLAUSES("MR-REL-3 MR-REL-5 MR-PATH-5 MR-PATH-6 MR-PATH-2 MR-ENC-2");
  Peer::Stream s = P.open_stream();
  auto start = Clock::now();
  const auto silence = std::chrono::milliseconds(1500);
  std::vector<Received> dropped;
  std::map<unsigned, uint16_t> first_sport;
  bool seen_reroll = false;
  P.lose = [&](const Received &r) {
    if (seen_reroll || Clock::now() - start > silence) return false;
    auto [it, fresh] = first_sport.emplace(r.pkt.bth.path_id, r.sport);
    seen_reroll |= !fresh && it->second != r.sport;
    dropped.push_back(r);
    return true;
  };
  P.dut.cmd("write " + std::to_string(s.qp) + " 0 100 0x20000 0x77");
  std::string wc = wait_wc(s, 10000);  // the loaded emulated guest can be slow
  EXPECT_NE(wc.find("status=0 opcode=1 "), std::string::npos) << "Write completion: " << wc;
  std::vector<double> sends;
  std::map<unsigned, std::set<uint16_t>> sports;
  std::string line = "# Write sent at (ms, path):";
  for (const Received &r : dropped) {
    EXPECT_GE(r.sport, 49152) << "entropy outside 49152..65535";
    sports[r.pkt.bth.path_id].insert(r.sport);
    if (r.pkt.bth.opcode != kWrite) continue;
    double t = std::chrono::duration<double, std::milli>(r.when - start).count();
    sends.push_back(t);
    line += " " + std::to_string(t).substr(0, 5) + "/" + std::to_string(r.pkt.bth.path_id);
  }
  printf("%s\n", line.c_str());
  ASSERT_GE(sends.size(), 2u) << "no retransmission in the silence";
  EXPECT_GE(sends[1] - sends[0], 0.1) << "retransmitted before MR_MIN_RTO";
  // MR_MAX_RTO is 1 s; the guest's timers add their lateness.
  for (size_t i = 1; i < sends.size(); i++)
    EXPECT_LE(sends[i] - sends[i - 1], 1000 + 100) << "silent longer than MR_MAX_RTO";
  bool rerolled = false;
  for (auto &[path, set] : sports) rerolled |= set.size() > 1;
  EXPECT_TRUE(rerolled) << "no path changed its entropy after repeated RTOs";
}

// [MR-VERBS-12]: a Write with immediate places at va and consumes a receive WQE.
TEST_F(RelTest, MR_VERBS_12_WriteWithImmediateConsumesReceive) {
  CLAUSES("MR-VERBS-12 MR-WIRE-9 MR-WIRE-4");
  Target t = target("w", 4096, 0);
  std::string r = P.dut.cmd("recv " + std::to_string(t.s.qp) + " 0 64");
  Bytes data = pattern(100, 0x3c);
  Packet w = P.write_pkt(t.s, 0, t.mr.va + 16, t.mr.rkey, 100, 0, data);
  w.bth.flags |= kImm | kAckReq;
  w.imm = 0xfeedbeef;
  P.send_seq(w, 2);
  std::string wc = poll_dut(t.s, 500);
  EXPECT_NE(wc.find("wr=" + std::to_string(Dut::field(r, "wr")) +
                    " status=0 opcode=129 len=100 imm=0xfeedbeef"), std::string::npos) << wc;
  EXPECT_EQ(hex(mr_bytes(t, 16, 100)), hex(data));
  EXPECT_EQ(hex(P.dut_bytes("l", t.s.qp, 0, 8)), hex(Bytes(8, 0))) << "bytes in the receive buffer";
}

// [MR-VERBS-4]: a Read executes only after the messages before it are complete, so it
// returns the bytes of a Write that was posted before it but arrives after it.
TEST_F(RelTest, MR_VERBS_4_ReadWaitsForEarlierWrite) {
  CLAUSES("MR-VERBS-4 MR-WIRE-7");
  Target t = target("rw", 4096, 0x10);
  P.send_seq(P.read_pkt(t.s, 1, t.mr.va + 128, t.mr.rkey, 64), 1);
  expect_none([](const Received &r) { return r.pkt.bth.opcode == kReadResp; }, 100,
              "a READ_RESP before the earlier Write arrived");
  Bytes data = pattern(64, 0x99);
  P.send_seq(P.write_pkt(t.s, 0, t.mr.va + 128, t.mr.rkey, 64, 0, data), 2);
  auto r = P.wait([](const Received &x) { return x.pkt.bth.opcode == kReadResp; }, 1000);
  ASSERT_TRUE(r) << "no READ_RESP";
  EXPECT_EQ(hex(r->pkt.payload), hex(data)) << "the Read did not observe the earlier Write";
}

// [MR-CC-1], [MR-REL-13], [MR-REL-1]: with every packet lost, a new connection's paths send
// at most MR_INIT_CWND (16) new packets each until the first timeout, and the message
// completes once packets get through.  A connection of its own (from 198.18.1.21): the
// shared one's windows have grown.  After a timeout a path may send anew, since its
// lost packets go out again on other paths, so only new packets before the first
// retransmission count.
TEST_F(RelTest, MR_CC_1_InitialWindowBoundsNewPackets) {
  CLAUSES("MR-CC-1 MR-REL-13 MR-REL-1 MR-CC-6 MR-SACK-1 MR-PATH-4");
  Peer q("198.18.1.21", 8);
  Peer::Stream s = q.open_stream();
  auto start = Clock::now();
  std::map<unsigned, unsigned> fresh;  // path -> new Write packets before the first RETX
  std::set<uint32_t> offsets;
  bool resent = false;
  q.lose = [&](const Received &r) {
    if (Clock::now() - start > std::chrono::milliseconds(150)) return false;
    if (r.pkt.bth.flags & kRetx)
      resent = true;
    else if (!resent && r.pkt.bth.opcode == kWrite && offsets.insert(r.pkt.bth.offset).second)
      fresh[r.pkt.bth.path_id]++;
    return true;
  };
  const uint32_t len = 160 * 1024;  // more packets than all initial windows (8 x 16)
  const std::string qs = std::to_string(s.qp);
  q.dut.cmd("write " + qs + " 0 " + std::to_string(len) + " 0x40000 0x2");
  std::string wc = wait_wc_of(q, s, 30000);
  q.lose = nullptr;
  unsigned total = 0;
  for (auto &[path, n] : fresh) {
    EXPECT_LE(n, 16u) << "path " << path << " sent more than its window";
    total += n;
  }
  printf("# %u new packets on %zu of %u paths before the first retransmission\n", total,
         fresh.size(), q.npaths);
  EXPECT_GT(total, 0u);
  EXPECT_LE(total, 16u * q.npaths);
  EXPECT_NE(wc.find("status=0 opcode=1 "), std::string::npos) << "the Write completes: " << wc;
  uint64_t have = 0;
  for (const auto &[off, part] : q.in_msgs[{s.my_qpn, 0}].parts) have += part.size();
  EXPECT_EQ(have, len) << "bytes missing";
  q.dut.cmd("destroy " + qs);
  q.close_connection();
}

// [MR-VERBS-3], [MR-REL-11]: a Send completes at the requester only when a MSGACK covers
// it; without one the sender probes with the message's last packet and ACK_REQ.
TEST_F(RelTest, MR_VERBS_3_RequesterCompletesOnMsgAck) {
  CLAUSES("MR-VERBS-3 MR-REL-11 MR-ACK-6");
  Peer::Stream s = P.open_stream();
  P.send_msgack = false;
  P.dut.cmd("send " + std::to_string(s.qp) + " 0 100");
  P.pump(600);  // more than one RTO, even at MR_MAX_RTO with the guest's delays
  EXPECT_EQ(poll_dut(s, 0), "none\n") << "completed without a MSGACK";
  unsigned sends = 0, probes = 0;
  for (const Received &r : P.seen_data)
    if (r.pkt.bth.opcode == kSend && r.pkt.bth.stream == s.my_qpn) {
      sends++;
      if (!(r.pkt.bth.flags & kMsgProbe)) continue;
      // [MR-REL-11] the probe is the last packet again, with ACK_REQ and MSG_PROBE
      EXPECT_GT(sends, 1u) << "MSG_PROBE on the first transmission";
      EXPECT_TRUE((r.pkt.bth.flags & kAckReq) && (r.pkt.bth.flags & kLast));
      probes++;
    }
  EXPECT_GE(probes, 1u) << "no message probe while the MSGACK was missing";
  P.send_msgack = true;
  std::string wc = wait_wc(s, 2000);
  EXPECT_NE(wc.find("status=0 opcode=0 "), std::string::npos) << "Send completion: " << wc;
}

// [MR-REL-9], [MR-REL-13]: the DUT's sender keeps at most 64 messages of a stream open.
// We hold back every MSGACK while it has 72 Writes posted: MSNs 0..63 come, 64 and later
// do not; once MSGACKs flow, the rest come and all 72 complete.
TEST_F(RelTest, MR_REL_9_SenderKeepsSixtyFourMessagesOpen) {
  CLAUSES("MR-REL-9 MR-REL-13 MR-VERBS-3");
  Peer::Stream s = P.open_stream();
  P.send_msgack = false;
  const std::string q = std::to_string(s.qp);
  const uint32_t n = 72;
  for (uint32_t i = 0; i < n; i++)
    P.dut.cmd("write " + q + " 0 8 " + std::to_string(0x1000 + 8 * i) + " 0x5");
  auto msns_seen = [&] {
    std::set<uint32_t> m;
    for (const Received &r : P.seen_data)
      if (r.pkt.bth.opcode == kWrite && r.pkt.bth.stream == s.my_qpn) m.insert(r.pkt.bth.msn);
    return m;
  };
  // until 64 have come (a slow guest may take a while), then long enough for a 65th
  for (auto end = Clock::now() + std::chrono::seconds(5);
       msns_seen().size() < 64 && Clock::now() < end;)
    P.pump(20);
  P.pump(300);
  std::set<uint32_t> before = msns_seen();
  EXPECT_EQ(before.size(), 64u) << "MSNs 0..63 should all come while no MSGACK does";
  ASSERT_FALSE(before.empty()) << "no Write came";
  EXPECT_EQ(*before.rbegin(), 63u) << "an MSN beyond msn_acked + 63";
  EXPECT_EQ(poll_dut(s, 0), "none\n") << "a Write completed without a MSGACK";
  P.send_msgack = true;
  std::string wcs;  // a poll takes every completion there is
  auto count = [&](const std::string &what) {
    size_t k = 0;
    for (size_t at = wcs.find(what); at != std::string::npos; at = wcs.find(what, at + 1)) k++;
    return k;
  };
  auto end = Clock::now() + std::chrono::seconds(10);
  while (count("wc ") < n && Clock::now() < end) wcs += wait_wc(s, 1000);
  EXPECT_EQ(count("status=0 opcode=1 "), n) << wcs;
  EXPECT_EQ(msns_seen().size(), n);
}

// [MR-NAK-2], [MR-VERBS-8]: a fatal NAK completes the requester's WQE with its status and
// flushes the later ones.
TEST_F(RelTest, MR_NAK_2_RequesterCompletesWithNakStatus) {
  CLAUSES("MR-NAK-2 MR-VERBS-8");
  Peer::Stream s = P.open_stream();
  P.send_msgack = false;
  const std::string q = std::to_string(s.qp);
  std::string w0 = P.dut.cmd("write " + q + " 0 100 0x1000 0x5");
  std::string w1 = P.dut.cmd("write " + q + " 0 100 0x2000 0x5");
  auto first = P.wait([&](const Received &r) { return r.pkt.bth.opcode == kWrite &&
                                                      r.pkt.bth.stream == s.my_qpn; }, 1000);
  ASSERT_TRUE(first);
  Packet n;
  n.bth.opcode = kNak;
  n.bth.conn_id = P.dut_conn_id;
  n.bth.stream = s.my_qpn;
  n.bth.msn = first->pkt.bth.msn;
  n.nak.code = kNakBadRkey;
  P.send_raw(n.encode(), P.my_sport(0));
  std::string wc = wait_wc(s, 1000);
  wc += poll_dut(s, 200);
  EXPECT_NE(wc.find("wr=" + std::to_string(Dut::field(w0, "wr")) + " status=10 "),
            std::string::npos) << "REM_ACCESS_ERR for the NAKed Write: " << wc;
  EXPECT_NE(wc.find("wr=" + std::to_string(Dut::field(w1, "wr")) + " status=5 "),
            std::string::npos) << "WR_FLUSH_ERR for the next: " << wc;
  EXPECT_EQ(qp_state(s), 6) << "the requester QP is not in the error state";
}

// [MR-VERBS-5]: a WQE posted with IBV_SEND_FENCE is not sent while an earlier Read of the
// QP is incomplete.  We hold back the READ_RESP: no packet of the fenced Write may come;
// once the Read's bytes are in, the Write is sent and completes after the Read.
TEST_F(RelTest, MR_VERBS_5_FencedWriteWaitsForRead) {
  CLAUSES("MR-VERBS-5 MR-WIRE-7");
  Peer::Stream s = P.open_stream();
  const std::string q = std::to_string(s.qp);
  P.dut.cmd("fill l " + q + " 0 64 0");
  P.dut.cmd("fill l " + q + " 4096 100 0x55");
  std::string rd = P.dut.cmd("read " + q + " 0 64 0x30000 0x4321");
  auto req = P.wait([&](const Received &r) {
    return r.pkt.bth.opcode == kReadReq && r.pkt.bth.stream == s.my_qpn;
  }, 2000);
  ASSERT_TRUE(req) << "no READ_REQ from the DUT";
  std::string wr = P.dut.cmd("write " + q + " 4096 100 0x31000 0x4321 fence");
  auto is_write = [&](const Received &r) {
    return r.pkt.bth.opcode == kWrite && r.pkt.bth.stream == s.my_qpn;
  };
  expect_none(is_write, 500, "the fenced Write was sent while the Read was incomplete");
  EXPECT_EQ(poll_dut(s, 0), "none\n") << "a completion before the READ_RESP";
  // The READ_RESP: one packet, our stream's view of the Read ([MR-WIRE-7]).
  Bytes data = pattern(64, 0x70);
  Packet rr;
  rr.bth.opcode = kReadResp;
  rr.bth.flags = kLast;
  rr.bth.stream = s.dut_qpn;
  rr.bth.msn = req->pkt.bth.msn;
  rr.bth.payload_len = uint16_t(data.size());
  rr.msgh = {uint32_t(data.size()), 0};
  rr.payload = data;
  const auto resp_at = Clock::now();
  P.send_seq(rr, 2);
  // Answered: the Read is a complete message of the stream, for our MSGACKs.
  P.in_msgs[{s.my_qpn, req->pkt.bth.msn}].parts[0] = data;
  auto w = P.wait(is_write, 2000);
  ASSERT_TRUE(w) << "the fenced Write was not sent after the Read completed";
  EXPECT_GE(w->when, resp_at) << "the fenced Write came before the READ_RESP was sent";
  std::string wc = wait_wc(s, 2000);
  wc += poll_dut(s, 500);
  size_t pr = wc.find("wr=" + std::to_string(Dut::field(rd, "wr")) + " status=0 opcode=2 ");
  size_t pw = wc.find("wr=" + std::to_string(Dut::field(wr, "wr")) + " status=0 opcode=1 ");
  EXPECT_NE(pr, std::string::npos) << "Read completion: " << wc;
  EXPECT_NE(pw, std::string::npos) << "Write completion: " << wc;
  EXPECT_LT(pr, pw) << wc;
  EXPECT_EQ(hex(P.dut_bytes("l", s.qp, 0, 64)), hex(data)) << "the Read's bytes";
  EXPECT_EQ(hex(in_bytes(s.my_qpn, w->pkt.bth.msn)), hex(pattern(100, 0x55)));
}

// [MR-VERBS-16]: with max_rd_atomic 2 the DUT has at most two Reads outstanding.  It has
// five posted; we answer none, and only MSNs 0 and 1 come as READ_REQs.  Each READ_RESP we
// send lets one more go, and all five complete in order with our bytes.
TEST_F(RelTest, MR_VERBS_16_ReadsInFlightBoundedByMaxRdAtomic) {
  CLAUSES("MR-VERBS-16 MR-VERBS-3");
  Peer::Stream s = P.open_stream(2);
  const std::string q = std::to_string(s.qp);
  const uint32_t n = 5, len = 64;
  std::vector<std::string> rds;
  for (uint32_t i = 0; i < n; i++)
    rds.push_back(P.dut.cmd("read " + q + " " + std::to_string(len * i) + " " +
                            std::to_string(len) + " " + std::to_string(0x30000 + len * i) +
                            " 0x4321"));
  auto reqs_seen = [&] {
    std::set<uint32_t> m;
    for (const Received &r : P.seen_data)
      if (r.pkt.bth.opcode == kReadReq && r.pkt.bth.stream == s.my_qpn) m.insert(r.pkt.bth.msn);
    return m;
  };
  auto wait_reqs = [&](size_t k) {
    for (auto end = Clock::now() + std::chrono::seconds(3);
         reqs_seen().size() < k && Clock::now() < end;)
      P.pump(20);
    P.pump(300);  // long enough for one too many
  };
  auto answer = [&](uint32_t msn) {
    Bytes data = pattern(len, uint8_t(0x40 + msn));
    Packet rr;
    rr.bth.opcode = kReadResp;
    rr.bth.flags = kLast;
    rr.bth.stream = s.dut_qpn;
    rr.bth.msn = msn;
    rr.bth.payload_len = uint16_t(len);
    rr.msgh = {len, 0};
    rr.payload = data;
    P.send_seq(rr, msn % 4);
    P.in_msgs[{s.my_qpn, msn}].parts[0] = data;
  };
  wait_reqs(2);
  EXPECT_EQ(reqs_seen(), (std::set<uint32_t>{0, 1})) << "READ_REQs beyond max_rd_atomic 2";
  EXPECT_EQ(poll_dut(s, 0), "none\n");
  for (uint32_t msn = 0; msn < n; msn++) {
    answer(msn);
    std::set<uint32_t> want;
    for (uint32_t m = 0; m < std::min(n, msn + 3); m++) want.insert(m);
    wait_reqs(want.size());
    EXPECT_EQ(reqs_seen(), want) << "after the READ_RESP of MSN " << msn;
  }
  std::string wcs;  // a poll takes every completion there is
  auto count = [&] {
    size_t k = 0;
    for (size_t at = wcs.find("wc "); at != std::string::npos; at = wcs.find("wc ", at + 1)) k++;
    return k;
  };
  for (auto end = Clock::now() + std::chrono::seconds(5); count() < n && Clock::now() < end;)
    wcs += wait_wc(s, 1000);
  size_t at = 0;
  for (uint32_t i = 0; i < n; i++) {
    size_t k = wcs.find("wr=" + std::to_string(Dut::field(rds[i], "wr")) + " status=0 opcode=2 ");
    EXPECT_NE(k, std::string::npos) << "Read " << i << ": " << wcs;
    EXPECT_GE(k, at) << "Read " << i << " completed out of order: " << wcs;
    at = k == std::string::npos ? at : k;
    EXPECT_EQ(hex(P.dut_bytes("l", s.qp, len * i, len)), hex(pattern(len, uint8_t(0x40 + i))))
        << "Read " << i << "'s bytes";
  }
}

// [MR-CC-11]: with every ACK carrying a hint of 4 Mbit/s, the DUT sends a 128 KiB Write no
// faster than that.  Measured on the kernel's receive times, with generous tolerance (the
// guest is emulated): the whole transfer at most 1.25 x the hint, any 50 ms at most
// 1.5 x the hint plus two packets.  Without the hint this Write takes a few ms.
TEST_F(RelTest, MR_CC_11_SenderKeepsToTheRateHint) {
  CLAUSES("MR-CC-11 MR-CC-10");
  Peer::Stream s = P.open_stream();
  const std::string q = std::to_string(s.qp);
  const double mbps = 4;
  P.rate_hint = encode_rate_hint(uint32_t(mbps));
  // A small Write first: its ACKs bring the hint before the measured Write starts.
  P.dut.cmd("write " + q + " 0 100 0x1000 0x1");
  ASSERT_NE(wait_wc(s, 3000).find("status=0 opcode=1 "), std::string::npos);
  P.seen_data.clear();
  const uint32_t len = 128 * 1024;
  P.dut.cmd("fill l " + q + " 0 " + std::to_string(len) + " 9");
  P.dut.cmd("write " + q + " 0 " + std::to_string(len) + " 0x40000 0x2");
  std::string wc = wait_wc(s, 20000);
  // Leave the DUT with the hint of our announced link (10 Gbit/s) for the later tests.
  P.rate_hint = encode_rate_hint(10000);
  P.dut.cmd("write " + q + " 0 100 0x1000 0x1");
  wc += wait_wc(s, 3000);
  EXPECT_NE(wc.find("status=0 opcode=1 len=" + std::to_string(len)), std::string::npos) << wc;
  std::vector<std::pair<double, size_t>> sent;  // (kernel receive time in ms, payload bytes)
  for (const Received &r : P.seen_data)
    if (r.pkt.bth.stream == s.my_qpn && r.pkt.bth.opcode == kWrite &&
        r.pkt.reth.length == len) {
      ASSERT_GE(r.kernel_ms, 0) << "no kernel receive time";
      sent.emplace_back(r.kernel_ms, r.pkt.payload.size());
    }
  ASSERT_GE(sent.size(), len / P.pmtu);
  std::sort(sent.begin(), sent.end());
  const double bytes_per_ms = mbps * 1e3 / 8;
  double total = 0;
  for (size_t i = 1; i < sent.size(); i++) total += double(sent[i].second);
  const double span = sent.back().first - sent.front().first;
  printf("# %zu packets in %.1f ms: %.2f Mbit/s under a hint of %.0f Mbit/s\n", sent.size(),
         span, span > 0 ? total * 8 / span / 1e3 : 0.0, mbps);
  EXPECT_GE(span * bytes_per_ms * 1.25, total) << "faster than the hint over the transfer";
  const double window = 50;
  double worst = 0;
  for (size_t i = 0, j = 0; i < sent.size(); i++) {
    double in = 0;
    for (j = i; j < sent.size() && sent[j].first < sent[i].first + window; j++)
      in += double(sent[j].second);
    worst = std::max(worst, in);
  }
  EXPECT_LE(worst, window * bytes_per_ms * 1.5 + 2 * P.pmtu)
      << "bytes within " << window << " ms";
}

// [MR-REL-8]: while packet 0 of a message is lost (every transmission of it dropped, every
// other packet acknowledged), the DUT sends no packet index 256 or later of that message;
// when packet 0 gets through, the message completes.
TEST_F(RelTest, MR_REL_8_MessagePacketWindow) {
  CLAUSES("MR-REL-8 MR-SACK-2 MR-REL-1");
  Peer::Stream s = P.open_stream();
  const std::string q = std::to_string(s.qp);
  const uint32_t len = 300 * P.pmtu;
  ASSERT_LE(len, 512u * 1024) << "the DUT's local buffer";
  P.dut.cmd("fill l " + q + " 0 " + std::to_string(len) + " 0x31");
  bool hold = true;
  std::set<uint32_t> held_idx;  // packet indexes sent while packet 0 was held back
  unsigned zero_sends = 0;
  P.lose = [&](const Received &r) {
    if (!hold || r.pkt.bth.opcode != kWrite || r.pkt.bth.stream != s.my_qpn) return false;
    held_idx.insert(r.pkt.bth.offset / P.pmtu);
    if (r.pkt.bth.offset != 0) return false;
    zero_sends++;
    return true;
  };
  P.dut.cmd("write " + q + " 0 " + std::to_string(len) + " 0x80000 0x3");
  P.pump(1000);  // less than MR_CONN_TIMEOUT: the connection stays up
  hold = false;
  const uint32_t top = held_idx.empty() ? 0 : *held_idx.rbegin();
  printf("# packet 0 dropped %u times; %zu packet indexes sent meanwhile, highest %u\n",
         zero_sends, held_idx.size(), top);
  EXPECT_GE(zero_sends, 1u);
  EXPECT_LT(top, 256u) << "a packet at or beyond first_unacked + 256 was sent";
  EXPECT_GE(held_idx.size(), 64u) << "too few packets to see the window";
  std::string wc = wait_wc(s, 20000);
  P.lose = nullptr;
  EXPECT_NE(wc.find("status=0 opcode=1 "), std::string::npos) << "Write completion: " << wc;
  EXPECT_EQ(hex(in_bytes(s.my_qpn, 0)), hex(pattern(len, 0x31)));
}

// [MR-CONST-1]: the constants visible in the DUT's packets: UDP port 64791, entropy within
// 49152..65535, DSCP 26, version 1, the header lengths (each datagram is exactly the base
// header, its opcode's extension headers and payload_len bytes), at most 16 paths and
// 16 MSGACKs per ACK.
TEST_F(RelTest, MR_CONST_1_WireConstants) {
  CLAUSES("MR-CONST-1");
  Target t = target("rw", 8192, 0x44);
  Peer::Stream &s = t.s;
  const std::string q = std::to_string(s.qp);
  P.dut.cmd("write " + q + " 0 " + std::to_string(3 * P.pmtu) + " 0x1000 0x1");
  P.dut.cmd("send " + q + " 0 100");
  P.send_seq(P.read_pkt(s, 0, t.mr.va, t.mr.rkey, 2 * P.pmtu + 5), 1);
  Packet w = P.write_pkt(s, 1, t.mr.va + 4096, t.mr.rkey, 8, 0, pattern(8, 1));
  w.bth.flags |= kAckReq;
  P.send_seq(w, 2);
  std::string wc = wait_wc(s, 3000);
  wc += wait_wc(s, 1000);
  P.pump(100);
  std::map<uint8_t, unsigned> seen;
  EXPECT_LE(P.resp.max_paths, 16);
  for (const Received &r : P.inbox) {
    const Packet &p = r.pkt;
    seen[p.bth.opcode]++;
    EXPECT_EQ(p.bth.version, 1) << p.describe();
    EXPECT_EQ(r.tos >> 2, 26) << "DSCP: " << p.describe();
    EXPECT_GE(r.sport, 49152) << p.describe();
    EXPECT_LT(p.bth.path_id, 16) << p.describe();
    size_t ext = 0;
    switch (p.bth.opcode) {
      case kWrite:
        ext = 16;  // RETH
        break;
      case kSend:
      case kReadResp:
        ext = 8;  // MSGH
        break;
      case kAck:
        EXPECT_LE(p.ack.msg_acks.size(), 16u);
        ext = 48 + 8 * p.ack.msg_acks.size();  // ACKH and MSGACKs
        break;
      default:
        continue;
    }
    EXPECT_EQ(r.size, 32 + ext + p.bth.payload_len) << "datagram length of " << p.describe();
  }
  for (uint8_t op : {kWrite, kSend, kReadResp, kAck})
    EXPECT_GE(seen[op], 1u) << "no packet of opcode " << int(op) << " to check";
}

// [MR-PATH-7]: losses found by SACK while ACKs keep coming are not path failures; only
// RTOs count.  On paths 0 and 1 we drop the first transmission of the 2nd, 4th, 6th and
// 8th packet (the later packets of the path reveal each gap) and acknowledge everything
// else at once.  The DUT completes the Write, and every path failure it counts needs
// MR_PATH_FAIL_RTOS (3) RTOs of its own: failures <= RTOs / 3; with fewer than 3 RTOs no
// path may re-roll its entropy ([MR-PATH-6]) but for the moves off a shared bottleneck
// the DUT counts in path_rebalances ([MR-PATH-10]), if it has that counter.  In the emulated guest a path sends a
// packet every few ms, so a gap would mostly be found by an RTO before the next packet
// is acknowledged: a lossless Write first, acknowledged 4 ms late, raises the RTOs so that
// the gaps are found by SACK.  The counts are printed.
TEST_F(RelTest, MR_PATH_7_SackLossesAreNotFailures) {
  CLAUSES("MR-PATH-7 MR-SACK-2 MR-PATH-2");
  Peer::Stream s = P.open_stream();
  const std::string q = std::to_string(s.qp);
  const uint32_t len = 128 * P.pmtu;
  P.dut.cmd("fill l " + q + " 0 " + std::to_string(len) + " 0x5a");
  const uint64_t warm_rtos = P.dut.counter("rtos"), warm_failures = P.dut.counter("path_failures");
  P.auto_ack = false;
  P.seen_data.clear();
  P.dut.cmd("write " + q + " 0 " + std::to_string(len) + " 0x60000 0x4");
  std::string warm;
  size_t acked = 0;
  for (auto end = Clock::now() + std::chrono::seconds(20); Clock::now() < end;) {
    P.pump(1);
    for (; acked < P.seen_data.size() &&
           Clock::now() - P.seen_data[acked].when > std::chrono::milliseconds(4);
         acked++)
      P.ack_dut_path(P.seen_data[acked].pkt.bth.path_id, &P.seen_data[acked].pkt);
    warm = poll_dut(s, 0);
    if (warm != "none\n") break;
  }
  P.auto_ack = true;
  ASSERT_NE(warm.find("status=0 opcode=1 "), std::string::npos) << warm;
  P.pump(50);
  printf("# after the warm-up: qp state %d, conn_failures %llu, timer_past %llu, %zu packets "
         "seen, last at %.1f ms ago\n", qp_state(s),
         (unsigned long long)P.dut.counter("conn_failures"),
         (unsigned long long)P.dut.counter("timer_past_deadlines"), P.seen_data.size(),
         P.seen_data.empty() ? -1.0 : std::chrono::duration<double, std::milli>(
                                          Clock::now() - P.seen_data.back().when).count());
  printf("# lossless warm-up: %llu RTOs, %llu path failures\n",
         (unsigned long long)(P.dut.counter("rtos") - warm_rtos),
         (unsigned long long)(P.dut.counter("path_failures") - warm_failures));
  P.in_msgs.clear();
  const uint64_t failures0 = P.dut.counter("path_failures"), rtos0 = P.dut.counter("rtos"),
                 sack0 = P.dut.counter("sack_losses"), moves0 = P.dut.counter("path_rebalances");
  std::map<unsigned, std::set<uint16_t>> sports;
  unsigned dropped = 0;
  std::map<unsigned, unsigned> firsts;  // path -> first transmissions seen
  P.lose = [&](const Received &r) {
    if (r.pkt.bth.stream != s.my_qpn || r.pkt.bth.opcode != kWrite) return false;
    const unsigned path = r.pkt.bth.path_id;
    sports[path].insert(r.sport);
    if ((r.pkt.bth.flags & kRetx) || path > 1) return false;
    const unsigned n = ++firsts[path];
    if (n % 2 || n > 8) return false;
    dropped++;
    return true;
  };
  P.dut.cmd("write " + q + " 0 " + std::to_string(len) + " 0x60000 0x4");
  std::string wc = wait_wc(s, 20000);
  P.lose = nullptr;
  const uint64_t failures = P.dut.counter("path_failures") - failures0;
  const uint64_t moves = moves0 == ~0ull ? 0 : P.dut.counter("path_rebalances") - moves0;
  printf("# %u first transmissions dropped, %zu paths; %llu SACK losses, %llu RTOs, %llu path "
         "failures and %llu moves counted\n", dropped, sports.size(),
         (unsigned long long)(P.dut.counter("sack_losses") - sack0),
         (unsigned long long)(P.dut.counter("rtos") - rtos0), (unsigned long long)failures,
         (unsigned long long)moves);
  EXPECT_NE(wc.find("status=0 opcode=1 "), std::string::npos) << "Write completion: " << wc;
  EXPECT_EQ(hex(in_bytes(s.my_qpn, 1)), hex(pattern(len, 0x5a)));
  EXPECT_GE(dropped, 4u) << "too few losses to see";
  const uint64_t rtos = P.dut.counter("rtos") - rtos0;
  ASSERT_NE(failures0, ~0ull) << "no path_failures counter";
  EXPECT_LE(3 * failures, rtos) << "path failures not explained by RTOs";
  if (rtos < 3) {
    std::string changed;
    uint64_t changes = 0;
    for (const auto &[path, set] : sports) {
      changes += set.size() - 1;
      if (set.size() > 1)
        changed += " " + std::to_string(path) + ":" + std::to_string(set.size());
    }
    EXPECT_LE(changes, moves) << "entropy changes (path:entropies" << changed
                              << ") that neither a failure nor a counted move explains";
  }
}

// [MR-VERBS-9]: the DUT's UD QP drops a UD_SEND that arrives while no receive WQE is
// posted (it is not kept for a later one) and one whose qkey differs from the QP's; a
// matching one completes, with the payload after the 40-byte GRH area whose last 20 bytes
// are the packet's IPv4 header ([MR-VERBS-14]).
TEST_F(RelTest, MR_VERBS_9_UdReceiverDropsWrongQkeyAndNoReceive) {
  CLAUSES("MR-VERBS-9 MR-VERBS-14");
  const uint32_t qkey = 0x1234;
  std::string a = P.dut.cmd("udqp " + std::to_string(qkey));
  Peer::Stream s;
  s.qp = int(Dut::field(a, "qp"));
  s.dut_qpn = uint32_t(Dut::field(a, "qpn"));
  P.opened.push_back(s.qp);
  const std::string q = std::to_string(s.qp);
  auto ud = [&](uint32_t key, const Bytes &payload) {
    Packet p;
    p.bth.opcode = kUdSend;
    p.bth.flags = kLast;
    p.bth.stream = s.dut_qpn;
    p.bth.payload_len = uint16_t(payload.size());
    p.ud_qkey = key;
    p.ud_src_qpn = 0x77;
    p.payload = payload;
    P.send_raw(p.encode(), P.my_sport(0));
  };
  ud(qkey, pattern(64, 0x01));  // no receive WQE yet
  P.pump(200);
  std::string r = P.dut.cmd("recv " + q + " 0 1024");
  EXPECT_EQ(poll_dut(s, 300), "none\n") << "a UD_SEND without a receive WQE was kept";
  ud(qkey ^ 0x10, pattern(64, 0x02));  // another qkey
  EXPECT_EQ(poll_dut(s, 300), "none\n") << "a UD_SEND with the wrong qkey was delivered";
  const Bytes good = pattern(64, 0x03);
  ud(qkey, good);
  std::string wc = poll_dut(s, 1000);
  EXPECT_NE(wc.find("wr=" + std::to_string(Dut::field(r, "wr")) + " status=0 opcode=128 len=" +
                    std::to_string(40 + good.size())),
            std::string::npos)
      << wc;
  EXPECT_EQ(hex(P.dut_bytes("l", s.qp, 40, good.size())), hex(good)) << "the payload";
  Bytes ip = P.dut_bytes("l", s.qp, 20, 20);
  ASSERT_EQ(ip.size(), 20u);
  EXPECT_EQ(ip[0], 0x45) << "no IPv4 header in the GRH area";
  EXPECT_EQ(hex(Bytes(ip.begin() + 12, ip.begin() + 16)), "c6120101") << "its source address";
}

// [MR-REL-4]: consecutive RTOs on one path double its RTO.  We drop every packet on the
// path of the Write's first packet and answer the others.  The path keeps sending (its
// data, then probes, [MR-PATH-8]) into the silence: within one entropy, the gaps between
// its sends are its successive RTOs, and the gap to the first send with a new entropy is
// the third RTO, the failure ([MR-PATH-6]) that resets the RTO.  So per entropy the gaps
// should grow as 1 : 2 : 4.  Timers of the emulated guest are late by up to milliseconds,
// so only the medians over all entropies of each gap's ratio to the one before are
// compared: at least 1.5.  Ratios within an entropy, not gaps across entropies: the RTO the
// backoff starts from may change between entropies (a stall floor of [MR-REL-5] halves
// after a second; seen in CI: gaps 17.5, 35, 70 ms for five entropies, then 8.8, 17.5, 35,
// whose medians 17.4, 34.4, 35.1 failed the test although every entropy doubled).  The
// silence lasts until seven entropies have shown their three RTOs (or 8 s): a stall floor
// left by earlier tests on a slow host may start the backoff at up to 100 ms, and then a
// fixed second held fewer than three (seen in CI).
TEST_F(RelTest, MR_REL_4_ConsecutiveRtosDoubleThePathRto) {
  CLAUSES("MR-REL-4 MR-PATH-6 MR-PATH-8");
  Peer::Stream s = P.open_stream();
  // A lossless Write first, acknowledged at once: the paths' RTT estimates are fresh
  // and small then.  Estimates left by earlier tests (MR_PATH_7 acknowledges 4 ms late)
  // made RTOs so long that one second showed no three failures (seen once in CI).
  P.dut.cmd("write " + std::to_string(s.qp) + " 0 " + std::to_string(32 * P.pmtu) +
            " 0x70000 0x5");
  ASSERT_NE(wait_wc(s, 10000).find("status=0 opcode=1 "), std::string::npos)
      << "the warm-up Write failed";
  int path = -1;
  bool silent = true;
  std::vector<std::pair<double, uint16_t>> sends;  // (kernel ms, entropy) on the path
  P.lose = [&](const Received &r) {
    if (path < 0 && r.pkt.bth.opcode == kWrite && r.pkt.bth.stream == s.my_qpn)
      path = r.pkt.bth.path_id;
    if (r.pkt.bth.path_id != path || !silent) return false;
    sends.emplace_back(r.kernel_ms, r.sport);
    return true;
  };
  // Send events per entropy: packets less than 0.3 ms apart (a burst of data) are one.
  struct Epoch {
    uint16_t sport;
    std::vector<double> at;
  };
  std::vector<Epoch> epochs;
  std::vector<double> ratio[2];
  std::string line;
  auto analyse = [&] {
    epochs.clear();
    for (auto &r : ratio) r.clear();
    line = "# gaps (ms) per entropy:";
    for (const auto &[t, sport] : sends) {
      if (epochs.empty() || epochs.back().sport != sport) epochs.push_back({sport, {}});
      auto &at = epochs.back().at;
      if (at.empty() || t - at.back() > 0.3) at.push_back(t);
    }
    for (size_t e = 0; e + 1 < epochs.size(); e++) {
      const auto &at = epochs[e].at;
      line += " [";
      for (size_t i = 1; i < at.size(); i++)
        line += std::to_string(at[i] - at[i - 1]).substr(0, 5) + " ";
      line += "| " + std::to_string(epochs[e + 1].at[0] - at.back()).substr(0, 5) + "]";
      if (at.size() != 3) continue;  // not the 1 + 2 RTOs of a clean epoch
      ratio[0].push_back((at[2] - at[1]) / (at[1] - at[0]));
      ratio[1].push_back((epochs[e + 1].at[0] - at[2]) / (at[2] - at[1]));
    }
    return ratio[0].size();
  };
  const auto start = Clock::now();
  P.dut.cmd("write " + std::to_string(s.qp) + " 0 " + std::to_string(32 * P.pmtu) +
            " 0x70000 0x5");
  std::string wc = wait_wc(s, 10000);
  while (analyse() < 7 && Clock::now() - start < std::chrono::seconds(8)) P.pump(20);
  silent = false;
  P.lose = nullptr;
  EXPECT_NE(wc.find("status=0 opcode=1 "), std::string::npos) << "Write completion: " << wc;
  const size_t n = analyse();
  printf("%s\n# path %d: %zu sends, %zu entropies, %zu with three sends in %.1f s\n",
         line.c_str(), path, sends.size(), epochs.size(), n,
         std::chrono::duration<double>(Clock::now() - start).count());
  ASSERT_GE(n, 3u) << "too few path failures to see the backoff";
  double med[2];
  for (int i = 0; i < 2; i++) {
    std::sort(ratio[i].begin(), ratio[i].end());
    med[i] = ratio[i][n / 2];
  }
  printf("# median ratios: second RTO / first %.2f, third / second %.2f\n", med[0], med[1]);
  EXPECT_GE(med[0], 1.5) << "the second RTO is not about twice the first";
  EXPECT_GE(med[1], 1.5) << "the third RTO is not about twice the second";
}

// [MR-VERBS-13]: the DUT answers our Read of 32 packets; we drop every transmission of
// packets 8 and later, so it must re-send them, then deregister the source MR.  From then
// on it sends no READ_RESP (it cannot read the source), NAKs the Read with ACCESS and
// keeps its QP in RTS.  The deregistered buffer is filled with 0xee: bytes sent from it
// would show.
TEST_F(RelTest, MR_VERBS_13_ReadSourceGoneStopsAndNaks) {
  CLAUSES("MR-VERBS-13 MR-NAK-1");
  Target t = target("r", 65536, 0x11);
  const uint32_t len = 32 * P.pmtu;
  bool hold = true;
  unsigned dropped = 0;
  std::vector<Received> resps;  // every READ_RESP, dropped or not
  P.lose = [&](const Received &r) {
    if (r.pkt.bth.opcode != kReadResp || r.pkt.bth.stream != t.s.my_qpn) return false;
    resps.push_back(r);
    if (!hold || r.pkt.bth.offset < 8 * P.pmtu) return false;
    dropped++;
    return true;
  };
  P.send_seq(P.read_pkt(t.s, 0, t.mr.va, t.mr.rkey, len), 1);
  P.pump(300);
  const size_t before = resps.size();
  P.dut.cmd("dereg " + std::to_string(t.mr.idx));
  const double gone = std::chrono::duration<double, std::milli>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  hold = false;
  auto nak = P.wait_nak(t.s.dut_qpn, 1500);
  P.pump(200);
  P.lose = nullptr;
  printf("# %zu READ_RESP packets before the MR went (%u dropped), %zu after\n", before,
         dropped, resps.size() - before);
  EXPECT_GE(dropped, 1u) << "nothing left to re-send";
  std::string late;
  for (const Received &r : resps) {
    const Bytes ee(r.pkt.payload.size(), 0xee);
    EXPECT_FALSE(!r.pkt.payload.empty() && r.pkt.payload == ee)
        << "bytes of the deregistered buffer sent at offset " << r.pkt.bth.offset;
    if (r.kernel_ms > gone + 1) late += " " + std::to_string(r.pkt.bth.offset / P.pmtu);
  }
  EXPECT_TRUE(late.empty()) << "READ_RESP packets sent after the source went:" << late;
  ASSERT_TRUE(nak) << "no NAK for the Read whose source went";
  EXPECT_EQ(nak->pkt.nak.code, kNakAccess);
  EXPECT_EQ(nak->pkt.bth.msn, 0u);
  EXPECT_EQ(qp_state(t.s), 3) << "the responder's QP left RTS";
}

// [MR-REL-5]: when the receiver stalls, every path's RTO comes due; the first path's
// timeout tells all there is, so the others wait until some path hears from the peer
// again.  A connection of its own (from 198.18.1.25) carries bulk Writes over a 2 ms
// link; then the receiver takes nothing in (nor answers) until 300 ms after the first
// path showed a timeout, or 1.7 s.  A path shows one by a PROBE ([MR-PATH-5]: a path
// that timed out probes) or by sending again more than two of the packets it sent
// before the stall (a tail-loss probe resends one).  At most one path may show one,
// and the others together may send one packet again: [MR-REL-6] one tail-loss probe
// for a silence of the whole connection.
TEST_F(RelTest, MR_REL_5_StallTimesOutOnePathNotEvery) {
  CLAUSES("MR-REL-5 MR-REL-4 MR-REL-6 MR-PATH-5");
  Peer q("198.18.1.25", 4);
  Peer::Stream s = q.open_stream();
  q.data_delay = std::chrono::milliseconds(2);
  using Key = std::pair<uint32_t, uint32_t>;  // a Write packet: msn, offset
  std::map<Key, unsigned> first_path;
  std::map<unsigned, std::set<Key>> before, resent;
  std::map<unsigned, unsigned> probes;
  bool stalled = false;
  q.lose = [&](const Received &r) {
    if (stalled && r.pkt.bth.opcode == kProbe) probes[r.pkt.bth.path_id]++;
    if (r.pkt.bth.opcode != kWrite) return false;
    Key key{r.pkt.bth.msn, r.pkt.bth.offset};
    auto [it, fresh] = first_path.emplace(key, r.pkt.bth.path_id);
    if (fresh && !stalled) before[it->second].insert(key);
    if (!fresh && stalled && (r.pkt.bth.flags & kRetx) && before[it->second].count(key))
      resent[it->second].insert(key);
    return false;
  };
  auto timed_out_paths = [&] {
    std::set<unsigned> paths;
    for (auto &[path, set] : resent)
      if (set.size() > 2) paths.insert(path);
    for (auto &[path, n] : probes) paths.insert(path);
    return paths;
  };
  auto timed_out = [&] { return unsigned(timed_out_paths().size()); };
  const std::string qs = std::to_string(s.qp);
  const unsigned writes = 6;
  const uint32_t len = 512 * 1024;
  for (unsigned i = 0; i < writes; i++)
    q.dut.cmd("write " + qs + " 0 " + std::to_string(len) + " " +
              std::to_string(0x100000 * (i + 1)) + " 0x2");
  q.pump(100);
  stalled = true;
  q.stall(true);
  const auto stall_start = Clock::now();
  auto first = Clock::time_point::max();
  // MR_CONN_TIMEOUT (2 s) counts from the last ACK: the stall ends well before.
  while (Clock::now() - stall_start < std::chrono::milliseconds(1700)) {
    q.pump(5);
    if (first == Clock::time_point::max() && timed_out()) first = Clock::now();
    if (first != Clock::time_point::max() && Clock::now() > first + std::chrono::milliseconds(300))
      break;
  }
  const double stall_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - stall_start).count();
  const unsigned n = timed_out();
  // [MR-REL-6] one tail-loss probe for the connection's silence, not one per path.
  unsigned tail_probes = 0;
  for (auto &[path, set] : resent)
    if (!timed_out_paths().count(path)) tail_probes += unsigned(set.size());
  q.stall(false);
  stalled = false;
  std::string wcs;
  for (unsigned i = 0; i < writes; i++) wcs += wait_wc_of(q, s, 30000);
  q.lose = nullptr;
  q.data_delay = std::chrono::microseconds(0);
  std::string line = "# a stall of " + std::to_string(int(stall_ms)) +
                     " ms; per path: packets before it / sent again in it / PROBEs in it:";
  for (auto &[path, set] : before)
    line += " " + std::to_string(path) + ":" + std::to_string(set.size()) + "/" +
            std::to_string(resent[path].size()) + "/" + std::to_string(probes[path]);
  printf("%s\n", line.c_str());
  ASSERT_GE(before.size(), 2u) << "fewer than two paths carried the Writes before the stall";
  ASSERT_GE(n, 1u) << "no path timed out in a stall of " << int(stall_ms) << " ms";
  EXPECT_LE(n, 1u) << "paths that timed out in one stall";
  EXPECT_LE(tail_probes, 1u) << "packets the paths that did not time out sent again";
  unsigned ok = 0;
  for (size_t at = wcs.find("status=0 opcode=1 "); at != std::string::npos;
       at = wcs.find("status=0 opcode=1 ", at + 1))
    ok++;
  EXPECT_EQ(ok, writes) << "Write completions: " << wcs;
  for (unsigned i = 0; i < writes; i++) {
    uint64_t have = 0;
    for (const auto &[off, part] : q.in_msgs[{s.my_qpn, i}].parts) have += part.size();
    EXPECT_EQ(have, len) << "bytes missing from Write " << i;
  }
  q.dut.cmd("destroy " + qs);
  q.close_connection();
}

}  // namespace
}  // namespace conf
