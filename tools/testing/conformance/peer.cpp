// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The tester's peer: UDP sockets in its namespace, the handshake, ACKs for the DUT's paths.
#include "peer.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

namespace conf {
namespace {

// `ip netns exec` mounts a fresh /sys, so the guest script mounts debugfs where we see it.
const char *ctl_path() {
  const char *p = getenv("CONF_DUT_CTL");
  return p ? p : "/sys/kernel/debug/mr_dut/ctl";
}

std::mt19937_64 &rng() {
  static std::mt19937_64 r{std::random_device{}()};
  return r;
}

uint32_t now_us() {
  return uint32_t(std::chrono::duration_cast<std::chrono::microseconds>(
                      Clock::now().time_since_epoch())
                      .count());
}

}  // namespace

int open_udp(const std::string &addr, uint16_t port) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
  setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) < 0)
    throw std::runtime_error("bind " + addr + ":" + std::to_string(port) + ": " +
                             strerror(errno));
  return fd;
}

void send_udp_with_checksum(const std::string &from, const std::string &to, uint16_t sport,
                            const Bytes &payload, uint16_t checksum) {
  int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_UDP);
  if (fd < 0) {
    ADD_FAILURE() << "raw socket: " << strerror(errno);
    return;
  }
  sockaddr_in src{}, dst{};
  src.sin_family = dst.sin_family = AF_INET;
  inet_pton(AF_INET, from.c_str(), &src.sin_addr);
  inet_pton(AF_INET, to.c_str(), &dst.sin_addr);
  bind(fd, reinterpret_cast<sockaddr *>(&src), sizeof(src));
  Bytes d;
  const size_t len = 8 + payload.size();
  for (uint16_t v : {sport, kUdpPort, uint16_t(len), checksum}) {
    d.push_back(uint8_t(v >> 8));
    d.push_back(uint8_t(v));
  }
  d.insert(d.end(), payload.begin(), payload.end());
  if (sendto(fd, d.data(), d.size(), 0, reinterpret_cast<sockaddr *>(&dst), sizeof(dst)) < 0)
    ADD_FAILURE() << "raw sendto: " << strerror(errno);
  close(fd);
}

Bytes pattern(size_t len, uint8_t seed) {
  Bytes b(len);
  for (size_t i = 0; i < len; i++) b[i] = uint8_t(seed + i);
  return b;
}

std::string hex(const Bytes &b) {
  std::string s;
  char t[3];
  for (uint8_t c : b) {
    snprintf(t, sizeof(t), "%02x", c);
    s += t;
  }
  return s;
}

// ---- Dut ----

std::string Dut::cmd(const std::string &line, bool may_fail) {
  int fd = open(ctl_path(), O_RDWR);
  if (fd < 0) throw std::runtime_error(std::string("open ") + ctl_path() + ": " + strerror(errno));
  ssize_t w = write(fd, line.data(), line.size());
  int werr = errno;
  std::string out;
  char buf[4096];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, size_t(n));
  close(fd);
  if (w < 0 && !may_fail)
    ADD_FAILURE() << "DUT command '" << line << "' failed: " << strerror(werr) << ": " << out;
  return out;
}

uint64_t Dut::field(const std::string &answer, const std::string &key) {
  auto pos = answer.find(key + "=");
  if (pos == std::string::npos) throw std::runtime_error("no " + key + " in '" + answer + "'");
  return std::stoull(answer.substr(pos + key.size() + 1), nullptr, 0);
}

uint64_t Dut::counter(const std::string &cname) {
  const char *root = getenv("CONF_DUT_SYSFS");
  std::ifstream sys(std::string(root ? root : "/sys") + "/class/infiniband/" + name +
                    "/ports/1/hw_counters/" + cname);
  uint64_t v;
  if (sys >> v) return v;
  std::string cmdline = "rdma statistic show link " + name + "/1";
  FILE *f = popen(cmdline.c_str(), "r");
  if (!f) return ~0ull;
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof(buf), f)) out += buf;
  pclose(f);
  auto pos = out.find(" " + cname + " ");
  if (pos == std::string::npos) return ~0ull;
  return std::stoull(out.substr(pos + cname.size() + 2));
}

// ---- the reference receiver ----

PathModel::Verdict PathModel::arrive(uint32_t psn) {
  if (psn_before(psn, cum) || got.count(psn)) return Verdict::kDuplicate;
  uint32_t d = psn - cum;
  if (d >= kPsnJumpMax) return Verdict::kTooFar;
  if (d > kSackBits) {  // [MR-SACK-5]: every PSN before psn - 256 is abandoned
    cum = psn - kSackBits;
    while (!got.empty() && psn_before(*got.begin(), cum)) got.erase(got.begin());
  }
  got.insert(psn);
  while (got.count(cum)) got.erase(cum++);
  return Verdict::kNew;
}

std::array<uint8_t, 32> PathModel::sack() const {
  Ackh a;
  for (uint32_t p : got) {
    uint32_t d = p - cum;
    if (d >= 1 && d <= kSackBits) a.set_sack_bit(d - 1);
  }
  return a.sack;
}

bool InMessage::complete() const {
  uint64_t have = 0;
  for (const auto &[off, b] : parts) have += b.size();
  return len == 0 ? !parts.empty() : have >= len;
}

// ---- Peer ----

Peer &peer() {
  static Peer p;
  return p;
}

// The shared peer, once made: a host answers its connection whatever else it does.
static Peer *shared_peer;

Peer::Peer() {
  const char *a = getenv("CONF_MY_ADDR");
  if (a) my_addr = a;
  init_dut();
  rx_fd_ = open_udp("0.0.0.0", kUdpPort);
  init_rx();
  shared_peer = this;
}

// The kernel hands a datagram to the socket bound to its destination address before one
// bound to 0.0.0.0: this peer sees its own connection only.
Peer::Peer(const std::string &addr, uint8_t paths) : max_paths(paths) {
  my_addr = addr;
  init_dut();
  rx_fd_ = open_udp(addr, kUdpPort);
  init_rx();
}

void Peer::init_dut() {
  const char *a = getenv("CONF_DUT_ADDR");
  if (a) dut_addr = a;
  a = getenv("CONF_DUT_DEV");
  if (a) dut.name = a;
}

void Peer::init_rx() {
  int one = 1;
  setsockopt(rx_fd_, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
  incarnation = rng()() | 1;
}

Peer::~Peer() {
  if (shared_peer == this) shared_peer = nullptr;
  if (rx_fd_ >= 0) close(rx_fd_);
  for (auto &[port, fd] : tx_fds_) close(fd);
}

void Peer::send_raw(const Bytes &b, uint16_t sport, uint8_t tos) {
  auto it = tx_fds_.find(sport);
  if (it == tx_fds_.end()) it = tx_fds_.emplace(sport, open_udp(my_addr, sport)).first;
  int t = tos;
  setsockopt(it->second, IPPROTO_IP, IP_TOS, &t, sizeof(t));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(kUdpPort);
  inet_pton(AF_INET, dut_addr.c_str(), &sa.sin_addr);
  if (sendto(it->second, b.data(), b.size(), 0, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) !=
      ssize_t(b.size()))
    ADD_FAILURE() << "sendto: " << strerror(errno);
}

void Peer::pump(int ms) {
  auto end = Clock::now() + std::chrono::milliseconds(ms);
  // Packets still arriving well after `end`: a DUT that never stops sending would keep
  // this loop (and the test) busy for ever. Say what it sends and give up.
  std::map<unsigned, unsigned> flood;
  std::string last;
  for (;;) {
    // While a test talks through a peer of its own, the shared connection must not
    // go silent: its host would answer, and the DUT fails a connection whose peer
    // stays silent for MR_CONN_TIMEOUT ([MR-CONN-10]).
    const bool serve_shared = shared_peer && shared_peer != this && shared_peer->connected;
    if (serve_shared) shared_peer->pump(0);
    auto now = Clock::now();
    while (!delayed_.empty() && now >= delayed_.front().first) {
      Received d = std::move(delayed_.front().second);
      delayed_.pop_front();
      take_in(d);
    }
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(end - now).count());
    if (now > end + std::chrono::seconds(3)) {
      std::string by;
      for (auto [op, n] : flood) by += " opcode " + std::to_string(op) + ": " + std::to_string(n);
      ADD_FAILURE() << "the DUT kept sending for 3 s after the wait ended:" << by
                    << "; the last: " << last;
      return;
    }
    int wait_ms = std::max(left, 0);
    if (serve_shared) wait_ms = std::min(wait_ms, 5);
    if (!delayed_.empty() && delayed_.front().first != Clock::time_point::max()) {
      auto due = delayed_.front().first - now;
      wait_ms = std::min<int>(
          wait_ms, int(std::chrono::ceil<std::chrono::milliseconds>(due).count()));
    }
    pollfd pfd{rx_fd_, POLLIN, 0};
    if (poll(&pfd, 1, wait_ms) <= 0) {
      if (left <= 0) return;
      continue;  // a delayed packet is due, or the wait goes on
    }
    uint8_t buf[65536];
    char ctl[256];
    sockaddr_in from{};
    iovec iov{buf, sizeof(buf)};
    msghdr mh{};
    mh.msg_name = &from;
    mh.msg_namelen = sizeof(from);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof(ctl);
    ssize_t n = recvmsg(rx_fd_, &mh, MSG_DONTWAIT);
    if (n < 0) continue;
    Received r;
    r.when = Clock::now();
    r.size = size_t(n);
    r.sport = ntohs(from.sin_port);
    r.dport = kUdpPort;
    for (cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
        r.tos = *CMSG_DATA(c);
      } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts;
        memcpy(&ts, CMSG_DATA(c), sizeof(ts));
        r.kernel_ms = double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
      }
    std::string why;
    auto p = parse(buf, size_t(n), &why);
    if (!p) {
      ADD_FAILURE() << "the DUT sent a packet that is not valid MetaRoCE (" << why << ")";
      continue;
    }
    if (p->reserved_nonzero)
      ADD_FAILURE() << "[MR-GEN-4] the DUT sent a nonzero reserved field: " << p->describe();
    if (Clock::now() > end + std::chrono::milliseconds(500)) {
      flood[p->bth.opcode]++;
      last = p->describe();
    }
    r.pkt = std::move(*p);
    handle(r);
  }
}

void Peer::stall(bool on) {
  stalled_ = on;
  if (on) return;
  const auto now = Clock::now();
  for (auto &[due, r] : delayed_)
    if (due == Clock::time_point::max()) due = now;
}

void Peer::handle(Received &r) {
  const Packet &p = r.pkt;
  if (connected && is_sequenced(p.bth.opcode) && p.bth.path_id < kMaxPaths &&
      p.bth.conn_id == my_conn_id) {
    if (lose && lose(r)) return;
    if (stalled_) {
      delayed_.emplace_back(Clock::time_point::max(), std::move(r));
      return;
    }
    if (data_delay.count() > 0) {
      auto due = r.when + data_delay;
      if (!delayed_.empty()) due = std::max(due, delayed_.back().first);
      delayed_.emplace_back(due, std::move(r));
      return;
    }
    take_in(r);
    return;
  }
  // [MR-CONN-5]: as the responder, a repeated request gets the same answer.
  if (connected && !resp_bytes_.empty() && p.bth.opcode == kConnectReq &&
      p.conn.src_conn_id == dut_conn_id && p.conn.incarnation == req.incarnation)
    send_raw(resp_bytes_, my_sport(0));
  inbox.push_back(std::move(r));
}

// A sequenced packet of our connection as our receiver takes it: recorded, placed and
// (auto_ack) acknowledged.
void Peer::take_in(Received &r) {
  const Packet &p = r.pkt;
  seen_data.push_back(r);
  DutPath &dp = dpath[p.bth.path_id];
  dp.sport = r.sport;
  PathModel m{dp.cum, dp.got};
  if (m.arrive(p.bth.psn) == PathModel::Verdict::kNew) {
    dp.cum = m.cum;
    dp.got = m.got;
    if (dp.pkts < 0xffff) dp.pkts++;
    if ((echo_ce || (ce_paths >> p.bth.path_id & 1) || (r.tos & 3) == 3) && dp.ces < 0xffff)
      dp.ces++;
    if (p.bth.opcode == kWrite || p.bth.opcode == kSend) {
      InMessage &m2 = in_msgs[{p.bth.stream, p.bth.msn}];
      m2.len = p.bth.opcode == kWrite ? p.reth.length : p.msgh.msg_len;
      m2.parts[p.bth.offset] = p.payload;
      uint32_t &cum = in_msn_cum[p.bth.stream];
      for (auto it = in_msgs.find({p.bth.stream, cum});
           it != in_msgs.end() && it->second.complete();
           it = in_msgs.find({p.bth.stream, cum}))
        cum++;
    }
  }
  if (auto_ack) ack_dut_path(p.bth.path_id, &p);
  inbox.push_back(std::move(r));
}

void Peer::ack_dut_path(unsigned path, const Packet *trigger) {
  DutPath &dp = dpath[path];
  Packet a;
  a.bth.opcode = kAck;
  a.bth.conn_id = dut_conn_id;
  a.bth.path_id = uint16_t(path);
  a.bth.timestamp = now_us();
  a.ack.cum_psn = dp.cum;
  a.ack.ts_echo = trigger ? trigger->bth.timestamp : 0;
  a.ack.pkt_count = dp.pkts;
  a.ack.ce_count = echo_ce || (ce_paths >> path & 1) ? dp.pkts : dp.ces;
  a.ack.rate_hint = rate_hint;
  PathModel m{dp.cum, dp.got};
  a.ack.sack = m.sack();
  if (send_msgack && trigger && (trigger->bth.opcode == kWrite || trigger->bth.opcode == kSend))
    a.ack.msg_acks.push_back({trigger->bth.stream, in_msn_cum[trigger->bth.stream]});
  dp.pkts = dp.ces = 0;
  send_raw(a.encode(), my_sport(path));
}

std::optional<Received> Peer::wait(const std::function<bool(const Received &)> &pred, int ms) {
  auto end = Clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    for (auto it = inbox.begin(); it != inbox.end(); ++it)
      if (pred(*it)) {
        Received r = std::move(*it);
        inbox.erase(it);
        return r;
      }
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
    if (left <= 0) return std::nullopt;
    pump(std::min(left, 5));
  }
}

Packet Peer::connect_req(uint8_t ver_min, uint8_t ver_max, uint32_t src_conn_id) {
  Packet p;
  p.bth.opcode = kConnectReq;
  p.bth.timestamp = now_us();
  p.conn.ver_min = ver_min;
  p.conn.ver_max = ver_max;
  p.conn.max_paths = max_paths;
  p.conn.src_conn_id = src_conn_id;
  p.conn.incarnation = incarnation;
  p.conn.pmtu = 4096;
  p.conn.link_mbps = 10000;
  // Path 0 starts 200 PSNs before 2^32: the DUT must use serial arithmetic ([MR-GEN-3]).
  p.conn.initial_psn = 0u - 200u;
  return p;
}

void Peer::connect() {
  if (connected) return;
  my_conn_id = uint32_t(rng()()) | 1;
  in_addr mine{}, its{};
  inet_pton(AF_INET, my_addr.c_str(), &mine);
  inet_pton(AF_INET, dut_addr.c_str(), &its);
  if (ntohl(mine.s_addr) > ntohl(its.s_addr)) {
    answer_connect_req();
    return;
  }
  Packet p = connect_req(1, 3, my_conn_id);
  req = p.conn;
  // A test that connects again must not take the CONNECT_RESP of its first connection,
  // which is put back below.
  std::erase_if(inbox, [](const Received &x) { return x.pkt.bth.opcode == kConnectResp; });
  for (int attempt = 0; attempt < 5 && !connected; attempt++) {
    send_raw(p.encode(), my_sport(0));
    auto r = wait([&](const Received &x) { return x.pkt.bth.opcode == kConnectResp; }, 500);
    if (!r) continue;
    resp = r->pkt.conn;
    EXPECT_EQ(r->pkt.bth.conn_id, my_conn_id) << "CONNECT_RESP addressed to our src_conn_id";
    dut_conn_id = resp.src_conn_id;
    set_up_paths(req.initial_psn, resp.initial_psn);
    inbox.push_back(std::move(*r));  // the handshake tests look at it
  }
  if (!connected) throw std::runtime_error("no CONNECT_RESP from the DUT");
}

// [MR-CONN-4]: the responder's choices are the minimum of both sides'.
void Peer::answer_connect_req() {
  auto q = wait([](const Received &x) { return x.pkt.bth.opcode == kConnectReq; }, 2000);
  if (!q) throw std::runtime_error("no CONNECT_REQ from the DUT");
  req = q->pkt.conn;
  Packet r = connect_req(kVersion, kVersion, my_conn_id);
  r.bth.opcode = kConnectResp;
  r.bth.conn_id = req.src_conn_id;
  r.conn.ver_min = r.conn.ver_max = std::min<uint8_t>(req.ver_max, kVersion);
  r.conn.max_paths = std::min(req.max_paths, max_paths);
  r.conn.pmtu = std::min<uint16_t>(req.pmtu, r.conn.pmtu);
  r.conn.peer_incarnation = req.incarnation;
  resp = r.conn;
  resp_bytes_ = r.encode();
  send_raw(resp_bytes_, my_sport(0));
  dut_conn_id = req.src_conn_id;
  set_up_paths(resp.initial_psn, req.initial_psn);
}

void Peer::set_up_paths(uint32_t my_initial_psn, uint32_t dut_initial_psn) {
  pmtu = std::max<uint32_t>(256, resp.pmtu / 64 * 64);  // [MR-CONN-6]
  npaths = resp.max_paths;
  for (unsigned i = 0; i < kMaxPaths; i++) {
    next_psn[i] = my_initial_psn + (i << 24);
    model[i].cum = next_psn[i];
    dpath[i].cum = dut_initial_psn + (i << 24);
  }
  connected = true;
}

void Peer::close_connection() {
  Packet c;
  c.bth.opcode = kClose;
  c.bth.conn_id = dut_conn_id;
  send_raw(c.encode(), my_sport(0));
  wait([](const Received &r) { return r.pkt.bth.opcode == kCloseAck; }, 200);
}

uint32_t Peer::send_seq(Packet p, unsigned path, uint8_t tos) {
  uint32_t psn = next_psn[path]++;
  send_at(std::move(p), path, psn, tos);
  return psn;
}

void Peer::send_at(Packet p, unsigned path, uint32_t psn, uint8_t tos) {
  p.bth.conn_id = dut_conn_id;
  p.bth.path_id = uint16_t(path);
  p.bth.psn = psn;
  p.bth.timestamp = now_us();
  model[path].arrive(psn);
  if (psn_before(next_psn[path], psn + 1)) next_psn[path] = psn + 1;
  send_raw(p.encode(), my_sport(path), tos);
}

std::optional<Received> Peer::wait_ack(unsigned path, int ms) {
  return wait(
      [&](const Received &r) { return r.pkt.bth.opcode == kAck && r.pkt.bth.path_id == path; },
      ms);
}

std::optional<Received> Peer::wait_nak(uint32_t stream, int ms) {
  return wait(
      [&](const Received &r) { return r.pkt.bth.opcode == kNak && r.pkt.bth.stream == stream; },
      ms);
}

Peer::Stream Peer::open_stream(int rd_atomic) {
  Stream s;
  s.my_qpn = next_qpn_++;
  std::string a = dut.cmd("qp " + my_addr + " " + std::to_string(s.my_qpn) +
                          (rd_atomic < 0 ? "" : " " + std::to_string(rd_atomic)));
  s.qp = int(Dut::field(a, "qp"));
  s.dut_qpn = uint32_t(Dut::field(a, "qpn"));
  connect();
  if (anchor_qp < 0)
    anchor_qp = s.qp;
  else
    opened.push_back(s.qp);
  return s;
}

Peer::Mr Peer::dut_mr(const Stream &s, uint32_t len, const std::string &access) {
  std::string a = dut.cmd("mr " + std::to_string(s.qp) + " " + std::to_string(len) + " " + access);
  Mr m;
  m.idx = int(Dut::field(a, "mr"));
  m.rkey = uint32_t(Dut::field(a, "rkey"));
  m.va = Dut::field(a, "va");
  return m;
}

Bytes Peer::dut_bytes(const std::string &kind, int idx, uint64_t off, uint64_t len) {
  // mr_dut answers in hex, at most 4095 bytes a command (MR_DUT_OUT_LEN): ask in pieces.
  constexpr uint64_t kPiece = 4000;
  Bytes b;
  for (uint64_t at = 0; at < len; at += kPiece) {
    const uint64_t n = std::min(kPiece, len - at);
    std::string a = dut.cmd("dump " + kind + " " + std::to_string(idx) + " " +
                            std::to_string(off + at) + " " + std::to_string(n));
    size_t got = 0;
    for (size_t i = 0; i + 1 < a.size() && isxdigit(a[i]) && isxdigit(a[i + 1]); i += 2, got++)
      b.push_back(uint8_t(std::stoul(a.substr(i, 2), nullptr, 16)));
    if (got != n) break;  // refused (out of range): the caller sees fewer bytes
  }
  return b;
}

Packet Peer::write_pkt(const Stream &s, uint32_t msn, uint64_t va, uint32_t rkey, uint32_t len,
                       uint32_t offset, const Bytes &payload) {
  Packet p;
  p.bth.opcode = kWrite;
  p.bth.stream = s.dut_qpn;
  p.bth.msn = msn;
  p.bth.offset = offset;
  p.bth.payload_len = uint16_t(payload.size());
  if (offset + payload.size() == len) p.bth.flags |= kLast;
  p.reth = {va, rkey, len};
  p.payload = payload;
  return p;
}

Packet Peer::send_pkt(const Stream &s, uint32_t msn, uint32_t rsn, uint32_t len, uint32_t offset,
                      const Bytes &payload) {
  Packet p;
  p.bth.opcode = kSend;
  p.bth.stream = s.dut_qpn;
  p.bth.msn = msn;
  p.bth.offset = offset;
  p.bth.payload_len = uint16_t(payload.size());
  if (offset + payload.size() == len) p.bth.flags |= kLast;
  p.msgh = {len, rsn};
  p.payload = payload;
  return p;
}

Packet Peer::atomic_pkt(const Stream &s, uint32_t msn, uint8_t op, uint64_t va, uint32_t rkey,
                        uint64_t swap_add, uint64_t compare) {
  Packet p;
  p.bth.opcode = op;
  p.bth.flags = kLast;
  p.bth.stream = s.dut_qpn;
  p.bth.msn = msn;
  p.aeth = {va, rkey, swap_add, compare};
  return p;
}

Packet Peer::read_pkt(const Stream &s, uint32_t msn, uint64_t va, uint32_t rkey, uint32_t len) {
  Packet p;
  p.bth.opcode = kReadReq;
  p.bth.flags = kLast;
  p.bth.stream = s.dut_qpn;
  p.bth.msn = msn;
  p.reth = {va, rkey, len};
  return p;
}

}  // namespace conf
