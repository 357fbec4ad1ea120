// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Runs last (linked last): what the DUT puts on the wire below UDP, then the ends of the
// connection the other tests share: twice with a stream that goes on ([MR-CONN-14]), and
// last the peer's CLOSE that ends it.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>

#include "suite.hpp"

namespace conf {
namespace {

// The peer ends the shared connection with a stream that carried a Write and one that
// carried nothing on it; end(P) ends it (an idle CLOSE, or a replacing CONNECT_REQ).
// [MR-CONN-14]: the first QP fails, the second goes on in the next connection and takes
// a Write there.
class LastTest : public Conformance {
 protected:
  void expect_unused_stream_goes_on(const std::function<void()> &end) {
    Target used = target("w", 4096, 0x31);
    Packet w = P.write_pkt(used.s, 0, used.mr.va, used.mr.rkey, 64, 0, pattern(64, 0x41));
    w.bth.flags |= kAckReq;
    P.send_seq(w, 0);
    ASSERT_TRUE(P.wait_ack(0, 500)) << "the Write before the end is not acknowledged";
    Target fresh = target("w", 4096, 0x32);
    const uint64_t renewals = P.dut.counter("conn_renewals");
    const uint32_t old_id = P.dut_conn_id;
    end();
    for (int i = 0; i < 50 && qp_state(used.s) != 6; i++) P.pump(10);
    EXPECT_EQ(qp_state(used.s), 6) << "the QP whose stream carried a Write is not in Error";
    EXPECT_NE(qp_state(fresh.s), 6) << "the QP whose stream carried nothing failed";
    // Posted while the connection starts over: it waits for the next one.
    P.dut.cmd("send " + std::to_string(fresh.s.qp) + " 0 100");
    if (P.dut_conn_id == old_id) {  // end() did not connect anew: we ask, the lower address
      P.connected = false;
      P.connect();
    }
    EXPECT_NE(P.dut_conn_id, old_id) << "the DUT kept its conn_id for the new connection";
    auto send = P.wait(
        [&](const Received &r) {
          return r.pkt.bth.opcode == kSend && r.pkt.bth.stream == fresh.s.my_qpn;
        },
        1000);
    ASSERT_TRUE(send) << "the Send posted as the connection started over never left";
    EXPECT_EQ(send->pkt.bth.conn_id, P.my_conn_id) << "the Send left on the old connection";
    EXPECT_EQ(send->pkt.bth.msn, 0u) << "the Send is not the stream's first message";
    std::string wc = "none\n";
    for (int i = 0; i < 200 && wc == "none\n"; i++) {
      P.pump(5);
      wc = poll_dut(fresh.s, 0);
    }
    EXPECT_NE(wc.find("status=0 opcode=0 "), std::string::npos) << "the Send's completion: " << wc;
    Bytes data = pattern(64, 0x42);
    Packet w2 = P.write_pkt(fresh.s, 0, fresh.mr.va, fresh.mr.rkey, 64, 0, data);
    w2.bth.flags |= kAckReq;
    P.send_seq(w2, 0);
    ASSERT_TRUE(P.wait_ack(0, 500)) << "the new connection does not answer";
    EXPECT_EQ(hex(mr_bytes(fresh, 0, 64)), hex(data)) << "the spared stream's Write";
    EXPECT_EQ(qp_state(fresh.s), 3) << "the spared QP is not in RTS";
    EXPECT_EQ(P.dut.counter("conn_renewals"), renewals + 1);
  }
};

// [MR-ENC-3], [MR-ENC-4], [MR-ENC-1]: IPv4 packets from the DUT have DF set, are not
// fragments and fit the link MTU; sequenced ones carry ECT(0).  Seen below UDP through a
// packet socket on the tester's veth end.
TEST_F(LastTest, MR_ENC_3_DontFragmentAndEct0) {
  CLAUSES("MR-ENC-3 MR-ENC-4 MR-ENC-1 MR-ENC-2");
  int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_IP));
  ASSERT_GE(fd, 0) << "packet socket: " << strerror(errno);
  const char *dev = getenv("CONF_TESTER_DEV");
  sockaddr_ll ll{};
  ll.sll_family = AF_PACKET;
  ll.sll_protocol = htons(ETH_P_IP);
  ll.sll_ifindex = int(if_nametoindex(dev ? dev : "v1"));
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&ll), sizeof(ll)), 0) << strerror(errno);
  Target t = target("r", 8192, 0x21);
  P.send_seq(P.read_pkt(t.s, 0, t.mr.va, t.mr.rkey, 3 * P.pmtu), 1);
  in_addr dut{};
  inet_pton(AF_INET, P.dut_addr.c_str(), &dut);
  unsigned seen = 0, resp = 0;
  auto end = Clock::now() + std::chrono::milliseconds(500);
  while (Clock::now() < end && resp < 3) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 20) <= 0) continue;
    uint8_t buf[9000];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < ssize_t(sizeof(iphdr) + sizeof(udphdr))) continue;
    iphdr ip;
    memcpy(&ip, buf, sizeof(ip));
    if (ip.saddr != dut.s_addr || ip.protocol != IPPROTO_UDP) continue;
    udphdr udp;
    memcpy(&udp, buf + ip.ihl * 4, sizeof(udp));
    if (ntohs(udp.dest) != kUdpPort) continue;
    seen++;
    const uint16_t frag = ntohs(ip.frag_off);
    EXPECT_TRUE(frag & IP_DF) << "DF not set";
    EXPECT_FALSE(frag & IP_MF) << "a fragment";
    EXPECT_EQ(frag & IP_OFFMASK, 0) << "a fragment";
    EXPECT_LE(ntohs(ip.tot_len), 1500) << "larger than the link MTU";
    EXPECT_GE(ntohs(udp.source), 49152);
    const uint8_t *mr = buf + ip.ihl * 4 + sizeof(udphdr);
    if (mr[1] == kReadResp) {
      resp++;
      EXPECT_EQ(ip.tos & 3, 2) << "a READ_RESP not sent ECT(0)";
    }
  }
  close(fd);
  EXPECT_EQ(resp, 3u) << "READ_RESP packets seen on the wire";
  printf("# %u MetaRoCE packets from the DUT checked below UDP\n", seen);
}


// [MR-CONN-14] after the peer's idle CLOSE, answered with CLOSE_ACK.
TEST_F(LastTest, MR_CONN_14_IdleCloseSparesAStreamThatCarriedNothing) {
  CLAUSES("MR-CONN-14 MR-CONN-9 MR-VERBS-8");
  expect_unused_stream_goes_on([&] {
    Packet c;
    c.bth.opcode = kClose;
    c.bth.conn_id = P.dut_conn_id;
    c.close_reason = 1;  // idle
    P.send_raw(c.encode(), P.my_sport(0));
    auto ack = P.wait([](const Received &r) { return r.pkt.bth.opcode == kCloseAck; }, 500);
    ASSERT_TRUE(ack) << "no CLOSE_ACK for the idle CLOSE";
    EXPECT_EQ(ack->pkt.bth.conn_id, P.my_conn_id);
  });
}

// [MR-CONN-14] when the peer's CLOSE was lost and it connects anew under the same
// incarnation: [MR-CONN-11] and [MR-CONN-7], the old connection challenged and silent.
TEST_F(LastTest, MR_CONN_14_ReplacementSparesAStreamThatCarriedNothing) {
  CLAUSES("MR-CONN-14 MR-CONN-11 MR-CONN-7");
  expect_unused_stream_goes_on([&] {
    P.connected = false;  // nothing answers the challenge on the old connection
    P.connect();          // the first request is challenged, a retry 500 ms later accepted
  });
}

// [MR-CONN-9]: a CLOSE for a connection with live streams moves their QPs to the error
// state; [MR-CONN-14] a CLOSE that is not idle (reason 0 here, as from a device removed)
// spares no stream, this one that carried nothing either.  Last: it ends the shared
// connection.
TEST_F(LastTest, MR_CONN_9_CloseMovesLiveQpsToError) {
  CLAUSES("MR-CONN-9 MR-VERBS-8 MR-CONN-14");
  Peer::Stream s = P.open_stream();
  ASSERT_NE(qp_state(s), 6);
  Packet c;
  c.bth.opcode = kClose;
  c.bth.conn_id = P.dut_conn_id;
  c.close_reason = 0;
  P.send_raw(c.encode(), P.my_sport(0));
  auto ack = P.wait([](const Received &r) { return r.pkt.bth.opcode == kCloseAck; }, 500);
  for (int i = 0; i < 50 && qp_state(s) != 6; i++) P.pump(10);
  EXPECT_EQ(qp_state(s), 6) << "a live QP is not in the error state after CLOSE";
  if (ack) {
    EXPECT_EQ(ack->pkt.bth.conn_id, P.my_conn_id);
  }
  printf("# CLOSE_ACK %s\n", ack ? "received" : "not received (a CLOSE with live streams)");
}

}  // namespace
}  // namespace conf
