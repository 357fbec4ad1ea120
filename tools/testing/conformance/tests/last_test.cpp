// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Runs last (linked last): what the DUT puts on the wire below UDP, then the peer's CLOSE,
// which ends the connection the other tests share.
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

#include "suite.hpp"

namespace conf {
namespace {

using LastTest = Conformance;

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

// [MR-CONN-9]: a CLOSE for a connection with live streams moves their QPs to the error
// state.  Last: it ends the shared connection.
TEST_F(LastTest, MR_CONN_9_CloseMovesLiveQpsToError) {
  CLAUSES("MR-CONN-9 MR-VERBS-8");
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
