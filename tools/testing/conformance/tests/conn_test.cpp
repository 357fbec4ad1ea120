// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// connection.rst: the handshake as the DUT answers it.  Runs first: it makes the connection.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "suite.hpp"

namespace conf {
namespace {

using ConnTest = Conformance;

// [MR-CONN-4]: a request whose versions are all above the responder's is refused.
TEST_F(ConnTest, MR_CONN_4_RejectsUnsupportedVersion) {
  CLAUSES("MR-CONN-4 MR-CONN-12");
  ASSERT_FALSE(P.connected) << "must run before the connection exists";
  // A QP towards us moves to RTR: the DUT (higher address) waits for our request.
  P.dut.cmd("qp " + P.my_addr + " 255");
  Packet req = P.connect_req(2, 2, 0x5eed0001);
  P.send_raw(req.encode(), P.my_sport(0));
  auto r = P.wait([](const Received &x) { return x.pkt.bth.opcode == kClose ||
                                                 x.pkt.bth.opcode == kConnectResp; }, 500);
  ASSERT_TRUE(r) << "no answer to a CONNECT_REQ with version 2..2";
  EXPECT_EQ(r->pkt.bth.opcode, kClose) << "answered with " << r->pkt.describe();
  EXPECT_EQ(r->pkt.close_reason, 2u);
  EXPECT_EQ(r->pkt.bth.conn_id, 0x5eed0001u) << "CLOSE carries the requester's conn id";
  P.dut.cmd("reset");
}

// [MR-CONN-4]: version, paths and PMTU are the minimum of both; [MR-CONN-3] ids.
TEST_F(ConnTest, MR_CONN_4_NegotiatesVersionPathsPmtu) {
  CLAUSES("MR-CONN-4 MR-CONN-3 MR-CONN-6 MR-CONN-7 MR-CONN-2 MR-CONN-12 MR-WIRE-3 MR-ENC-1 "
          "MR-ENC-2");
  P.open_stream();  // QP to RTR, then our CONNECT_REQ (ver 1..3, 16 paths, pmtu 4096)
  auto r = P.wait([](const Received &x) { return x.pkt.bth.opcode == kConnectResp; }, 10);
  ASSERT_TRUE(r);
  const Connh &c = r->pkt.conn;
  EXPECT_EQ(c.ver_min, 1);
  EXPECT_EQ(c.ver_max, 1);
  EXPECT_GE(c.max_paths, 1);
  EXPECT_LE(c.max_paths, 16);
  EXPECT_GE(c.pmtu, 256);
  EXPECT_LE(c.pmtu, 4096);
  EXPECT_EQ(c.pmtu % 64, 0) << "[MR-CONN-6] the agreed pmtu is a multiple of 64";
  EXPECT_NE(c.src_conn_id, 0u);
  EXPECT_NE(c.incarnation, 0u);
  EXPECT_EQ(c.peer_incarnation, P.incarnation);
  EXPECT_EQ(r->pkt.bth.psn, 0u) << "CONNECT_RESP is not sequenced";
  EXPECT_EQ(r->pkt.bth.flags, 0u);
  EXPECT_EQ(r->pkt.bth.conn_id, P.my_conn_id);
  EXPECT_EQ(r->dport, kUdpPort);
  EXPECT_GE(r->sport, 49152);
}

// [MR-CONN-5]: a duplicate CONNECT_REQ gets the same CONNECT_RESP and no second connection.
TEST_F(ConnTest, MR_CONN_5_DuplicateRequestGetsSameResponse) {
  CLAUSES("MR-CONN-5 MR-CONN-1");
  Packet req;
  req.bth.opcode = kConnectReq;
  req.conn = P.req;
  P.send_raw(req.encode(), P.my_sport(0));
  auto r = P.wait([](const Received &x) { return x.pkt.bth.opcode == kConnectResp; }, 500);
  ASSERT_TRUE(r) << "no CONNECT_RESP to a duplicate request";
  const Connh &a = r->pkt.conn, &b = P.resp;
  EXPECT_EQ(a.src_conn_id, b.src_conn_id);
  EXPECT_EQ(a.incarnation, b.incarnation);
  EXPECT_EQ(a.initial_psn, b.initial_psn);
  EXPECT_EQ(a.pmtu, b.pmtu);
  EXPECT_EQ(a.max_paths, b.max_paths);
  // The old connection still carries data.
  expect_connection_works(7);
}

}  // namespace
}  // namespace conf

namespace conf {
namespace {

// The DUT as requester: towards a higher address it asks ([MR-CONN-12]), retries with a
// doubling timeout ([MR-CONN-5]), ignores a CONNECT_RESP for another incarnation
// ([MR-CONN-7]) and fails its QPs' work when the connection stays silent ([MR-CONN-10]).
class DutRequesterTest : public Conformance {
 protected:
  const std::string addr_ = "198.18.1.3";  // above the DUT's 198.18.1.2
  std::optional<Packet> next_req(int fd, int ms, double *at_ms, Clock::time_point t0) {
    auto end = Clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
      int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
      pollfd pfd{fd, POLLIN, 0};
      if (left <= 0 || poll(&pfd, 1, left) <= 0) return std::nullopt;
      // The kernel's receive time: the tester may be scheduled late in the emulated guest.
      uint8_t buf[2048];
      char ctl[128];
      iovec iov{buf, sizeof(buf)};
      msghdr mh{};
      mh.msg_iov = &iov;
      mh.msg_iovlen = 1;
      mh.msg_control = ctl;
      mh.msg_controllen = sizeof(ctl);
      ssize_t n = recvmsg(fd, &mh, 0);
      if (n <= 0) continue;
      double kts = -1;
      for (cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
          timespec ts;
          memcpy(&ts, CMSG_DATA(c), sizeof(ts));
          kts = double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
        }
      auto p = parse(buf, size_t(n));
      if (!p) {
        ADD_FAILURE() << "the DUT sent an invalid packet";
        continue;
      }
      if (p->bth.opcode != kConnectReq) continue;
      if (at_ms) *at_ms = kts >= 0 ? kts : std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      return p;
    }
  }
  void answer(int fd, const Packet &req, uint64_t peer_incarnation) {
    Packet r;
    r.bth.opcode = kConnectResp;
    r.bth.conn_id = req.conn.src_conn_id;
    r.conn.max_paths = std::min<uint8_t>(req.conn.max_paths, 8);
    r.conn.src_conn_id = 0xc0ffee01;
    r.conn.incarnation = 0x1234567890abcdefull;
    r.conn.pmtu = std::min<uint16_t>(req.conn.pmtu, 1024);
    r.conn.link_mbps = 10000;
    r.conn.peer_incarnation = peer_incarnation;
    r.conn.initial_psn = 0x01000000;
    Bytes b = r.encode();
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(kUdpPort);
    inet_pton(AF_INET, P.dut_addr.c_str(), &to.sin_addr);
    sendto(fd, b.data(), b.size(), 0, reinterpret_cast<sockaddr *>(&to), sizeof(to));
  }
  // Every valid packet on fd for ms, with its arrival in ms after t0.
  std::vector<std::pair<double, Packet>> collect(int fd, int ms, Clock::time_point t0) {
    std::vector<std::pair<double, Packet>> v;
    auto end = Clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
      int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
      pollfd pfd{fd, POLLIN, 0};
      if (left <= 0 || poll(&pfd, 1, left) <= 0) return v;
      uint8_t buf[2048];
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      auto p = n > 0 ? parse(buf, size_t(n)) : std::nullopt;
      if (p)
        v.emplace_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), *p);
    }
  }
  void send_to_dut(int fd, const Packet &p) {
    Bytes b = p.encode();
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(kUdpPort);
    inet_pton(AF_INET, P.dut_addr.c_str(), &to.sin_addr);
    sendto(fd, b.data(), b.size(), 0, reinterpret_cast<sockaddr *>(&to), sizeof(to));
  }
  // A QP towards addr (above the DUT's address, with no connection yet): the DUT's first
  // CONNECT_REQ.
  std::optional<Packet> dut_asks(int fd, const std::string &addr, uint32_t peer_qpn) {
    std::string a = P.dut.cmd("qp " + addr + " " + std::to_string(peer_qpn));
    P.opened.push_back(int(Dut::field(a, "qp")));
    return next_req(fd, 2000, nullptr, Clock::now());
  }
};

TEST_F(DutRequesterTest, MR_CONN_12_LowerAddressAsksAndRetries) {
  CLAUSES("MR-CONN-12 MR-CONN-5 MR-CONN-7 MR-CONN-3 MR-CONN-10 MR-CONN-8 MR-VERBS-8");
  int fd = open_udp(addr_, kUdpPort);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
  auto t0 = Clock::now();
  std::string a = P.dut.cmd("qp " + addr_ + " 77");
  const int qp = int(Dut::field(a, "qp"));
  P.opened.push_back(qp);
  std::vector<double> at;
  std::vector<Packet> reqs;
  double t;
  // The first request (after the DUT resolved our MAC), then its retries for 70 ms.
  while (auto r = next_req(fd, reqs.empty() ? 2000 : 70, &t, t0)) {
    reqs.push_back(*r);
    at.push_back(t);
    if (t - at[0] > 60) break;
  }
  ASSERT_GE(reqs.size(), 3u) << "the DUT did not ask (or did not retry) within 70 ms";
  const Packet &q = reqs[0];
  EXPECT_EQ(q.bth.conn_id, 0u);
  EXPECT_EQ(q.bth.psn, 0u);
  EXPECT_LE(q.conn.ver_min, 1);
  EXPECT_GE(q.conn.ver_max, 1);
  EXPECT_GE(q.conn.max_paths, 1);
  EXPECT_LE(q.conn.max_paths, 16);
  EXPECT_NE(q.conn.src_conn_id, 0u);
  EXPECT_NE(q.conn.incarnation, 0u);
  EXPECT_EQ(q.conn.peer_incarnation, 0u);
  std::string times = "# CONNECT_REQ at (ms after the first):";
  for (size_t i = 0; i < reqs.size(); i++) {
    times += " " + std::to_string(at[i] - at[0]).substr(0, 5);
    EXPECT_EQ(reqs[i].conn.src_conn_id, q.conn.src_conn_id) << "a retry is the same request";
    EXPECT_EQ(reqs[i].conn.incarnation, q.conn.incarnation);
    EXPECT_EQ(reqs[i].conn.initial_psn, q.conn.initial_psn);
  }
  printf("%s\n", times.c_str());
  // Retry k is due 1 + 2 + ... + 2^(k-1) = 2^k - 1 ms after the first request: never
  // earlier (the emulated guest may fire a timer late, and then the next one seems quick;
  // the spec does not say whether the doubling counts from the deadline or the send).
  for (size_t k = 1; k < at.size(); k++)
    EXPECT_GE(at[k] - at[0], double((1u << k) - 1) - 0.2) << "retry " << k << " came early";

  // [MR-CONN-7]: a CONNECT_RESP for another incarnation is dropped: the DUT asks again.
  answer(fd, reqs.back(), q.conn.incarnation ^ 0xff);
  EXPECT_TRUE(next_req(fd, 300, nullptr, t0)) << "a wrong-incarnation CONNECT_RESP was accepted";
  // The right one: the DUT stops asking.
  answer(fd, reqs.back(), q.conn.incarnation);
  auto t1 = Clock::now();
  std::optional<Packet> late;
  while ((late = next_req(fd, 300, nullptr, t0)))
    if (Clock::now() - t1 > std::chrono::milliseconds(20)) break;
  EXPECT_FALSE(late) << "the DUT still asks after a valid CONNECT_RESP";

  // [MR-CONN-8], [MR-CONN-10]: it sends data, and with every packet unanswered the
  // connection fails after MR_CONN_TIMEOUT (2 s): the WQE completes with RETRY_EXC_ERR.
  P.dut.cmd("write " + std::to_string(qp) + " 0 100 0x1000 0x1");
  auto sent = Clock::now();
  bool data = false;
  std::string wc = "none\n";
  while (Clock::now() - sent < std::chrono::seconds(6) && wc == "none\n") {
    uint8_t buf[2048];
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 50) > 0) {
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      auto p = n > 0 ? parse(buf, size_t(n)) : std::nullopt;
      if (p && p->bth.opcode == kWrite && p->bth.conn_id == 0xc0ffee01) data = true;
    }
    wc = P.dut.cmd("poll " + std::to_string(qp) + " 0");
  }
  double secs = std::chrono::duration<double>(Clock::now() - sent).count();
  EXPECT_TRUE(data) << "no data after the handshake";
  EXPECT_NE(wc.find("status=12 "), std::string::npos) << "expected RETRY_EXC_ERR: " << wc;
  EXPECT_GE(secs, 1.9) << "the connection failed before MR_CONN_TIMEOUT";
  printf("# connection failed after %.2f s of silence\n", secs);
  close(fd);
}

// [MR-CONN-11]: requests cross, ours with the higher (incarnation, src_conn_id): the DUT
// answers ours as a responder, keeping its own src_conn_id and initial_psn, and stops
// retransmitting its own request.  A fresh tester address: no connection exists yet.
TEST_F(DutRequesterTest, MR_CONN_11_DutAnswersTheHigherCrossingRequest) {
  CLAUSES("MR-CONN-11 MR-CONN-12");
  const std::string addr = "198.18.1.4";
  int fd = open_udp(addr, kUdpPort);
  auto d = dut_asks(fd, addr, 78);
  ASSERT_TRUE(d) << "the DUT did not ask";
  ASSERT_NE(d->conn.incarnation, ~0ull);
  Packet x = P.connect_req(1, 1, 0x7e570001);
  x.conn.incarnation = d->conn.incarnation + 1;
  x.conn.initial_psn = 0x02000000;
  const auto t0 = Clock::now();
  send_to_dut(fd, x);
  auto got = collect(fd, 400, t0);
  close(fd);
  const Packet *resp = nullptr;
  double resp_at = 0;
  for (const auto &[t, p] : got)
    if (p.bth.opcode == kConnectResp && !resp) {
      resp = &p;
      resp_at = t;
    }
  ASSERT_TRUE(resp) << "no CONNECT_RESP to the surviving (higher) request";
  EXPECT_EQ(resp->bth.conn_id, x.conn.src_conn_id);
  EXPECT_EQ(resp->conn.src_conn_id, d->conn.src_conn_id) << "the DUT kept its src_conn_id";
  EXPECT_EQ(resp->conn.initial_psn, d->conn.initial_psn) << "the DUT kept its initial_psn";
  EXPECT_EQ(resp->conn.incarnation, d->conn.incarnation);
  EXPECT_EQ(resp->conn.peer_incarnation, x.conn.incarnation);
  std::string late;
  for (const auto &[t, p] : got)
    if (p.bth.opcode == kConnectReq && t > resp_at + 20) late += " " + std::to_string(t);
  EXPECT_TRUE(late.empty()) << "the DUT still retransmits its losing request at (ms):" << late;
  printf("# CONNECT_RESP %.1f ms after our request; %zu packets in 400 ms\n", resp_at,
         got.size());
}

// [MR-CONN-11]: requests cross, ours with the lower (incarnation, src_conn_id): the DUT
// ignores ours (no CONNECT_RESP) and keeps asking; our answer to its request completes the
// handshake.
TEST_F(DutRequesterTest, MR_CONN_11_DutIgnoresTheLowerCrossingRequest) {
  CLAUSES("MR-CONN-11 MR-CONN-12 MR-CONN-7");
  const std::string addr = "198.18.1.5";
  int fd = open_udp(addr, kUdpPort);
  auto d = dut_asks(fd, addr, 79);
  ASSERT_TRUE(d) << "the DUT did not ask";
  ASSERT_GT(d->conn.incarnation, 1u);
  Packet x = P.connect_req(1, 1, 0x7e570002);
  x.conn.incarnation = d->conn.incarnation - 1;
  const auto t0 = Clock::now();
  send_to_dut(fd, x);
  auto got = collect(fd, 150, t0);
  unsigned asks = 0, resps = 0;
  for (const auto &[t, p] : got) {
    if (p.bth.opcode == kConnectResp) resps++;
    if (p.bth.opcode == kConnectReq && p.conn.src_conn_id == d->conn.src_conn_id) asks++;
  }
  EXPECT_EQ(resps, 0u) << "the DUT answered the losing request";
  EXPECT_GE(asks, 1u) << "the DUT stopped asking after a losing request crossed its own";
  // We answer the surviving request as the responder, keeping our src_conn_id.
  Packet r;
  r.bth.opcode = kConnectResp;
  r.bth.conn_id = d->conn.src_conn_id;
  r.conn = x.conn;
  r.conn.max_paths = std::min<uint8_t>(d->conn.max_paths, 8);
  r.conn.pmtu = std::min<uint16_t>(d->conn.pmtu, 1024);
  r.conn.peer_incarnation = d->conn.incarnation;
  const auto t1 = Clock::now();
  send_to_dut(fd, r);
  auto after = collect(fd, 300, t1);
  close(fd);
  std::string late;
  for (const auto &[t, p] : after) {
    EXPECT_NE(p.bth.opcode, kConnectResp) << "a CONNECT_RESP to the losing request";
    if (p.bth.opcode == kConnectReq && t > 20) late += " " + std::to_string(t);
  }
  EXPECT_TRUE(late.empty()) << "the DUT still asks after our CONNECT_RESP, at (ms):" << late;
}

// [MR-SEC-4]: once the DUT holds its bound of connections, a CONNECT_REQ that needs a new
// one is dropped unanswered ([MR-SEC-5]) and counted, and the live connection still
// works; with the bound raised the same requests are answered, so the bound was the cause.
// The reference DUT's bound is the writable module parameter max_conns (security.rst).
TEST_F(DutRequesterTest, MR_SEC_4_RequestsBeyondTheConnectionBoundAreDropped) {
  CLAUSES("MR-SEC-4 MR-SEC-5 MR-CONN-9");
  const std::string knob = "/sys/module/metaroce/parameters/max_conns";
  auto set_bound = [&](const std::string &v) {
    FILE *f = fopen(knob.c_str(), "w");
    if (!f) return false;
    bool ok = fputs(v.c_str(), f) >= 0;
    return fclose(f) == 0 && ok;
  };
  std::string saved;
  if (FILE *f = fopen(knob.c_str(), "r")) {
    char line[32] = "";
    if (fgets(line, sizeof(line), f)) saved = line;
    fclose(f);
  }
  if (saved.empty()) GTEST_SKIP() << "no " << knob << ": the DUT's bound cannot be lowered";
  ASSERT_TRUE(P.connected);
  ASSERT_TRUE(set_bound("0"));
  // Eight fresh tester addresses (guest.sh), each above the DUT's: no connection, and the
  // DUT has no QP towards them, so each request needs a new connection.
  std::vector<int> fds;
  for (int i = 10; i < 18; i++) fds.push_back(open_udp("198.18.1." + std::to_string(i), kUdpPort));
  const uint64_t drops0 = P.dut.counter("conn_limit_drops");
  auto ask_all = [&](uint32_t id_base) {
    for (size_t i = 0; i < fds.size(); i++)
      send_to_dut(fds[i], P.connect_req(1, 1, id_base + uint32_t(i)));
  };
  ask_all(0x5ec40000);
  unsigned answered = 0;
  for (int fd : fds)
    for (const auto &[t, p] : collect(fd, 60, Clock::now())) {
      (void)t;
      answered++;
      ADD_FAILURE() << "the DUT answered a request beyond its bound: " << p.describe();
    }
  const uint64_t drops = P.dut.counter("conn_limit_drops") - drops0;
  ASSERT_TRUE(set_bound(saved));
  EXPECT_EQ(answered, 0u);
  EXPECT_EQ(drops, fds.size()) << "conn_limit_drops";
  // The bound raised again: the same kind of request is answered.
  ask_all(0x5ec50000);
  unsigned resps = 0;
  for (size_t i = 0; i < fds.size(); i++) {
    for (const auto &[t, p] : collect(fds[i], 300, Clock::now())) {
      (void)t;
      if (p.bth.opcode != kConnectResp) continue;
      resps++;
      EXPECT_EQ(p.bth.conn_id, 0x5ec50000u + uint32_t(i));
      // [MR-CONN-9] free it at once: CLOSE, answered with CLOSE_ACK.
      Packet c;
      c.bth.opcode = kClose;
      c.bth.conn_id = p.conn.src_conn_id;
      send_to_dut(fds[i], c);
    }
  }
  EXPECT_EQ(resps, fds.size()) << "requests within the bound were not answered";
  for (int fd : fds) close(fd);
  // The live connection was never affected.
  expect_connection_works(11);
  printf("# %zu requests dropped at bound 0 (conn_limit_drops +%llu), %u answered at bound %s",
         fds.size(), (unsigned long long)drops, resps, saved.c_str());
}

}  // namespace
}  // namespace conf
