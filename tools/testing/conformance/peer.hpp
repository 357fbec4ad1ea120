// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The tester's side of a MetaRoCE connection: sockets, the DUT control file, the peer's state.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "wire.hpp"

namespace conf {

using Clock = std::chrono::steady_clock;

struct Received {
  Packet pkt;
  uint16_t sport = 0;  // the DUT's UDP source port: its path entropy
  uint16_t dport = 0;
  uint8_t tos = 0;
  Clock::time_point when;
  size_t size = 0;        // the datagram's length (the UDP payload)
  double kernel_ms = -1;  // the kernel's receive time (CLOCK_REALTIME, ms), if reported
};

// The device under test, driven through mr_dut.ko's debugfs file and `rdma statistic`.
class Dut {
 public:
  // The answer of one command; an "error:" answer fails the calling test.
  std::string cmd(const std::string &line, bool may_fail = false);
  // A key=value field of an answer, as a number.
  static uint64_t field(const std::string &answer, const std::string &key);
  uint64_t counter(const std::string &name);
  std::string name = "mr0";
};

// What the DUT's receiver must hold for one of our paths, from [MR-ACK-1..3], [MR-SACK-4]
// and [MR-SACK-5]: the reference the ACKs are compared with.
struct PathModel {
  uint32_t cum = 0;
  std::set<uint32_t> got;  // received PSNs after cum
  enum class Verdict { kNew, kDuplicate, kTooFar };
  Verdict arrive(uint32_t psn);
  std::array<uint8_t, 32> sack() const;
};

// Our receive state for one of the DUT's paths (we play its receiver).
struct DutPath {
  uint32_t cum = 0;
  std::set<uint32_t> got;
  uint16_t pkts = 0, ces = 0;
  uint16_t sport = 0;
};

// Bytes of the DUT's messages to us, per (stream, msn).
struct InMessage {
  uint64_t len = 0;
  std::map<uint32_t, Bytes> parts;  // offset -> payload
  bool complete() const;
};

class Peer {
 public:
  // The suite's peer: CONF_MY_ADDR; it receives every datagram to kUdpPort that no other
  // peer's address takes.
  Peer();
  // A peer of its own at addr (one of the tester's addresses) whose connection offers
  // max_paths paths.
  Peer(const std::string &addr, uint8_t max_paths);
  ~Peer();
  Peer(const Peer &) = delete;
  Peer &operator=(const Peer &) = delete;

  // ---- addresses and sockets ----
  std::string my_addr = "198.18.1.1";
  std::string dut_addr = "198.18.1.2";
  void send_raw(const Bytes &b, uint16_t sport, uint8_t tos = 2);
  // Receives into the inbox for up to ms; answers the DUT's sequenced packets.
  void pump(int ms);
  // The first inbox packet that pred accepts (removed), waiting up to ms for it.
  std::optional<Received> wait(const std::function<bool(const Received &)> &pred, int ms);
  std::deque<Received> inbox;

  // ---- the connection ----
  Dut dut;
  Connh req, resp;  // the handshake's CONNECT_REQ and CONNECT_RESP (ours or the DUT's)
  uint32_t my_conn_id = 0, dut_conn_id = 0;
  uint32_t pmtu = 0;
  unsigned npaths = 0;
  bool connected = false;
  uint8_t max_paths = 16;  // what our handshake offers
  // The handshake, once: the lower address asks ([MR-CONN-12]), so we send CONNECT_REQ
  // when ours is lower and otherwise answer the DUT's.
  void connect();
  Packet connect_req(uint8_t ver_min, uint8_t ver_max, uint32_t src_conn_id);
  void close_connection();  // CLOSE, and a short wait for its CLOSE_ACK

  // ---- sequenced packets to the DUT ----
  std::array<uint32_t, kMaxPaths> next_psn{};
  std::array<PathModel, kMaxPaths> model;
  // Stamps conn_id, path and the path's next PSN, records it in the model, sends.
  uint32_t send_seq(Packet p, unsigned path, uint8_t tos = 2);
  // Sends with an explicit PSN (gaps, duplicates); the model learns it too.
  void send_at(Packet p, unsigned path, uint32_t psn, uint8_t tos = 2);
  // The next ACK for our path, or nullopt.
  std::optional<Received> wait_ack(unsigned path, int ms);
  std::optional<Received> wait_nak(uint32_t stream, int ms);

  // ---- the DUT's packets to us ----
  std::array<DutPath, kMaxPaths> dpath;
  std::map<std::pair<uint32_t, uint32_t>, InMessage> in_msgs;
  std::map<uint32_t, uint32_t> in_msn_cum;  // per our stream: DUT messages complete
  bool auto_ack = true;
  bool send_msgack = true;  // our ACKs carry MSGACKs for the DUT's messages
  bool echo_ce = false;  // report every packet as CE-marked
  uint32_t ce_paths = 0;  // and every packet of these paths (bit per path id)
  uint16_t rate_hint = 0;  // our ACKs' rate_hint ([MR-CC-10] encoding; 0: no hint)
  // Packets for which this returns true are treated as lost: not recorded, not acked.
  std::function<bool(const Received &)> lose;
  // A one-way delay for the DUT's sequenced packets: each is taken in (recorded,
  // acknowledged) this long after it arrived, as if the link were that long.  `lose`
  // judges it on arrival.
  std::chrono::microseconds data_delay{0};
  size_t held() const { return delayed_.size(); }  // arrived, not yet taken in
  // A stalled receiver: while on, the DUT's sequenced packets are held (after `lose`
  // and data_delay judged them); off takes them all in at once, in order.
  void stall(bool on);
  std::vector<Received> seen_data;  // every sequenced packet from the DUT, in order
  void ack_dut_path(unsigned path, const Packet *trigger);

  // ---- streams ----
  struct Stream {
    int qp = -1;            // mr_dut's QP index
    uint32_t dut_qpn = 0;   // its QPN: the stream id of our requests
    uint32_t my_qpn = 0;    // ours: the stream id of its requests and responses
    uint32_t next_msn = 0;  // of our requests
    uint32_t next_rsn = 0;
  };
  // rd_atomic: the DUT QP's max_rd_atomic, if not mr_dut's default
  Stream open_stream(int rd_atomic = -1);
  std::vector<int> opened;  // DUT QPs the running test opened (destroyed after it)
  int anchor_qp = -1;       // kept for the whole run, so the connection never idles out
  struct Mr {
    int idx = -1;
    uint32_t rkey = 0;
    uint64_t va = 0;
  };
  Mr dut_mr(const Stream &s, uint32_t len, const std::string &access);
  Bytes dut_bytes(const std::string &kind, int idx, uint64_t off, uint64_t len);

  // Packet builders: one request packet of a message (offset, payload) of stream s.
  Packet write_pkt(const Stream &s, uint32_t msn, uint64_t va, uint32_t rkey, uint32_t len,
                   uint32_t offset, const Bytes &payload);
  Packet send_pkt(const Stream &s, uint32_t msn, uint32_t rsn, uint32_t len, uint32_t offset,
                  const Bytes &payload);
  Packet atomic_pkt(const Stream &s, uint32_t msn, uint8_t op, uint64_t va, uint32_t rkey,
                    uint64_t swap_add, uint64_t compare);
  Packet read_pkt(const Stream &s, uint32_t msn, uint64_t va, uint32_t rkey, uint32_t len);

  uint16_t my_sport(unsigned path) const { return uint16_t(50000 + path); }
  uint64_t incarnation = 0;

 private:
  int rx_fd_ = -1;
  std::map<uint16_t, int> tx_fds_;
  uint32_t next_qpn_ = 0x100;
  // Arrived, not yet taken in (data_delay), with the time each is due.
  std::deque<std::pair<Clock::time_point, Received>> delayed_;
  bool stalled_ = false;
  void handle(Received &r);
  Bytes resp_bytes_;  // our CONNECT_RESP, when we answered the DUT's request
  void init_dut();
  void init_rx();
  void take_in(Received &r);
  void answer_connect_req();
  void set_up_paths(uint32_t my_initial_psn, uint32_t dut_initial_psn);
};

Peer &peer();
// A UDP socket bound to addr:port (SO_REUSEADDR, TOS and PKTINFO reported).
int open_udp(const std::string &addr, uint16_t port);
// One UDP datagram from the tester's address through a raw socket, so the test chooses the
// UDP checksum (0: none).
void send_udp_with_checksum(const std::string &from, const std::string &to, uint16_t sport,
                            const Bytes &payload, uint16_t checksum);
Bytes pattern(size_t len, uint8_t seed);
std::string hex(const Bytes &b);

}  // namespace conf
