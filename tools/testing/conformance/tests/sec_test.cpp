// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// security.rst and [MR-CONN-7]: one spoofed packet must not end a live connection.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "suite.hpp"

namespace conf {
namespace {

using SecTest = Conformance;
using Ms = std::chrono::milliseconds;

// A CONNECT_REQ claiming that peer q restarted: a new incarnation and conn_id.
Packet restart_claim(Peer &q, uint32_t src_conn_id) {
  Packet x = q.connect_req(1, 1, src_conn_id);
  x.conn.incarnation = q.incarnation ^ 0x5a5a000000000000ull;
  return x;
}

// Sends the claim the way a restarted requester retries it ([MR-CONN-5]: 1 ms, doubling,
// 8 retries) until a CONNECT_RESP to it arrives; returns its delay in ms, or -1.
double retry_until_answered(Peer &q, const Packet &x) {
  const auto t0 = Clock::now();
  int gap = 1;
  for (int attempt = 0; attempt < 9; attempt++, gap *= 2) {
    q.send_raw(x.encode(), q.my_sport(1));
    auto r = q.wait(
        [&](const Received &p) {
          return p.pkt.bth.opcode == kConnectResp && p.pkt.bth.conn_id == x.conn.src_conn_id;
        },
        gap);
    if (r) return std::chrono::duration<double, std::milli>(r->when - t0).count();
  }
  return -1;
}

// [MR-CONN-7], [MR-SEC-3]: a CONNECT_REQ from a connected peer's address with another
// incarnation, while the peer still answers on the connection, is challenged (a PROBE
// with ACK_REQ on the old connection, which the peer answers) and never accepted; the
// connection and its QPs live on.
TEST_F(SecTest, MR_CONN_7_SpoofedRestartIsChallengedAndRefused) {
  CLAUSES("MR-CONN-7 MR-SEC-3");
  Peer::Stream s = P.open_stream();
  const uint64_t before = P.dut.counter("restart_challenges");
  const auto t0 = Clock::now();
  EXPECT_LT(retry_until_answered(P, restart_claim(P, 0x5ec00001)), 0)
      << "a spoofed restart claim was accepted while the peer was alive";
  for (const char *n : {"restart_challenges", "conn_failures", "rx_drop_wrong_addr",
                        "rx_drop_unknown_conn", "conn_limit_drops"})
    printf("# %s %llu\n", n, (unsigned long long)P.dut.counter(n));
  unsigned probes = 0;
  for (const Received &r : P.seen_data)
    if (r.pkt.bth.opcode == kProbe && r.when >= t0 && (r.pkt.bth.flags & kAckReq)) probes++;
  EXPECT_GE(probes, 1u) << "the DUT did not challenge the old connection";
  EXPECT_GT(P.dut.counter("restart_challenges"), before);
  EXPECT_EQ(qp_state(s), 3) << "the QP on the old connection left RTS";
  expect_connection_works(0x71);
}

// [MR-CONN-7]: a real restart (the old connection no longer answers) is accepted once the
// challenge has gone unanswered for MR_RESTART_CHALLENGE (50 ms), within the requester's
// retries; the old connection's QPs go to Error.  A connection of its own (198.18.1.22).
TEST_F(SecTest, MR_CONN_7_RestartIsAcceptedAfterAnUnansweredChallenge) {
  CLAUSES("MR-CONN-7");
  Peer q("198.18.1.22", 8);
  Peer::Stream s = q.open_stream();
  q.pump(20);
  q.auto_ack = false;  // the old incarnation is gone: nothing answers its connection
  const double ms = retry_until_answered(q, restart_claim(q, 0x5ec00002));
  ASSERT_GE(ms, 0) << "a restarted peer's request was never accepted";
  EXPECT_GE(ms, 45.0) << "accepted before the challenge could be answered";
  printf("# the restart was believed after %.1f ms\n", ms);
  const std::string st = q.dut.cmd("state " + std::to_string(s.qp));
  EXPECT_EQ(Dut::field(st, "state"), 6u) << "the old connection's QP: " << st;
  q.dut.cmd("destroy " + std::to_string(s.qp));
}

// [MR-SEC-3]: the DUT's conn_id from another source address is not the peer's: a CLOSE
// from there ends nothing, gets no CLOSE_ACK, and is counted.
TEST_F(SecTest, MR_SEC_3_OurConnIdFromAnotherAddressIsDropped) {
  CLAUSES("MR-SEC-3 MR-CONN-9");
  Peer::Stream s = P.open_stream();
  const uint64_t before = P.dut.counter("rx_drop_wrong_addr");
  int fd = open_udp("198.18.1.23", kUdpPort);
  ASSERT_GE(fd, 0);
  Packet c;
  c.bth.opcode = kClose;
  c.bth.conn_id = P.dut_conn_id;
  Bytes b = c.encode();
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(kUdpPort);
  inet_pton(AF_INET, P.dut_addr.c_str(), &to.sin_addr);
  sendto(fd, b.data(), b.size(), 0, reinterpret_cast<sockaddr *>(&to), sizeof(to));
  P.pump(100);
  close(fd);
  EXPECT_EQ(P.dut.counter("rx_drop_wrong_addr"), before + 1);
  for (const Received &r : P.inbox)
    EXPECT_NE(r.pkt.bth.opcode, kCloseAck) << "the DUT acknowledged a foreign CLOSE";
  EXPECT_EQ(qp_state(s), 3) << "the QP left RTS";
  expect_connection_works(0x72);
}

}  // namespace
}  // namespace conf
