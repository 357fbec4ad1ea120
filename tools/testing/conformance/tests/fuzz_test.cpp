// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// A stateful fuzzer of the DUT's receive path: a real handshake and real streams, then
// seeded mutations of every field that reaches placement, while streams and MRs come and go.
//
// CONF_FUZZ_ITERS packets (default 3000: the short run of make check; make fuzz-guest runs
// more), CONF_FUZZ_SEED (default 1) picks them.  Oracles: canary MRs the fuzzer may name
// but not write (an MR without remote rights, an MR whose rkey it never learns) and the
// DUT QPs' own buffers outside what was posted keep their bytes; the DUT's kernel log stays
// clean (vm.sh); another connection of the DUT still carries data; the counters show what
// was refused.
#include <cstdlib>
#include <random>

#include "suite.hpp"

namespace conf {
namespace {

using FuzzTest = Conformance;

// An MR's bytes, in pieces small enough for one answer of mr_dut.
Bytes mr_contents(Peer &q, int idx, uint32_t len) {
  Bytes all;
  for (uint32_t off = 0; off < len; off += 2048) {
    Bytes part = q.dut_bytes("m", idx, off, std::min<uint32_t>(2048, len - off));
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

uint64_t env_u64(const char *name, uint64_t dflt) {
  const char *v = getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : dflt;
}

struct Fuzzer {
  Peer &q;
  std::mt19937_64 rng;
  struct Lane {
    Peer::Stream s;
    Peer::Mr target;  // remote w/r/a: its bytes may change
  };
  std::vector<Lane> lanes;
  Peer::Mr local_only, untold;  // canaries
  int canary_qp = -1;
  unsigned events = 0;
  bool closing = false;  // the last packets: a CLOSE may name the connection

  Fuzzer(Peer &peer, uint64_t seed) : q(peer), rng(seed) {}

  uint64_t r(uint64_t n) { return n ? rng() % n : 0; }
  bool one_in(uint64_t n) { return r(n) == 0; }

  Lane new_lane() {
    Lane l;
    l.s = q.open_stream();
    l.target = q.dut_mr(l.s, 16384, "wra");
    for (int i = 0; i < 4; i++)
      q.dut.cmd("recv " + std::to_string(l.s.qp) + " " + std::to_string(i * 4096) + " 4096");
    return l;
  }

  // A field as the fuzzer sends it: mostly right, sometimes near, sometimes anything.
  uint32_t mutate32(uint32_t good) {
    switch (r(8)) {
      case 0: return uint32_t(rng());
      case 1: return good + uint32_t(r(5)) - 2;
      case 2: return good ^ (1u << r(32));
      case 3: return good + 0x80000000u;
      default: return good;
    }
  }
  uint64_t mutate_va(uint64_t good, uint32_t len) {
    switch (r(8)) {
      case 0: return rng();
      case 1: return good + len - 1 + r(64);
      case 2: return good - 1 - r(64);
      case 3: return ~0ull - r(4096);
      default: return good + r(len);
    }
  }
  uint32_t mutate_rkey(uint32_t good) {
    switch (r(6)) {
      case 0: return uint32_t(rng());
      case 1: return (good & ~0xffu) | uint32_t(r(256));  // the key byte, never the index
      case 2: return local_only.rkey;
      default: return good;
    }
  }

  Packet data_packet() {
    Lane &l = lanes[r(lanes.size())];
    Packet p;
    const uint32_t len = 1 + uint32_t(r(3 * 1024));
    const uint32_t off = one_in(4) ? uint32_t(r(len)) : 0;
    Bytes payload(std::min<uint32_t>(len - off, 1024));
    for (auto &b : payload) b = uint8_t(rng());
    switch (r(5)) {
      case 0:
      case 1:
        p = q.write_pkt(l.s, mutate32(l.s.next_msn), mutate_va(l.target.va, len),
                        mutate_rkey(l.target.rkey), len, off, payload);
        break;
      case 2:
        p = q.send_pkt(l.s, mutate32(l.s.next_msn), mutate32(l.s.next_rsn), len, off, payload);
        break;
      case 3:
        p = q.read_pkt(l.s, mutate32(l.s.next_msn), mutate_va(l.target.va, len),
                       mutate_rkey(l.target.rkey), mutate32(len));
        break;
      default:
        p = q.atomic_pkt(l.s, mutate32(l.s.next_msn), one_in(2) ? kAtomicCas : kAtomicFadd,
                         mutate_va(l.target.va, 8), mutate_rkey(l.target.rkey), rng(), rng());
        break;
    }
    if (one_in(8)) p.bth.stream = mutate32(p.bth.stream);
    if (one_in(16)) p.bth.payload_len = uint16_t(mutate32(p.bth.payload_len));
    if (one_in(16)) p.bth.flags = uint16_t(rng());
    if (!one_in(3)) l.s.next_msn++;  // sometimes leave a gap, sometimes repeat
    if (p.bth.opcode == kSend && !one_in(3)) l.s.next_rsn++;
    return p;
  }

  Packet control_packet() {
    Packet p;
    switch (r(6)) {
      case 0:
        p.bth.opcode = kAck;
        p.ack.cum_psn = uint32_t(rng());
        for (auto &b : p.ack.sack) b = uint8_t(rng());
        if (one_in(2)) p.ack.msg_acks.push_back({lanes[r(lanes.size())].s.my_qpn,
                                                 uint32_t(r(64))});
        break;
      case 1:
        p.bth.opcode = kNak;
        p.bth.stream = lanes[r(lanes.size())].s.my_qpn;
        p.bth.msn = uint32_t(r(64));
        p.nak.code = uint8_t(r(8));
        p.nak.info = uint32_t(rng());
        break;
      case 2:
        p.bth.opcode = kProbe;
        p.bth.flags = kAckReq;
        break;
      case 3:
        p.bth.opcode = kClose;
        p.close_reason = uint32_t(r(4));
        break;
      case 4:
        p = q.connect_req(1, 1, uint32_t(rng()) | 1);
        if (one_in(2)) p.conn.incarnation = rng();
        p.conn.max_paths = uint8_t(r(20));
        p.conn.pmtu = uint16_t(rng());
        break;
      default:
        p.bth.opcode = uint8_t(rng());
        break;
    }
    return p;
  }

  // Something of the DUT's side changes under the traffic.
  void lifecycle() {
    events++;
    const size_t i = r(lanes.size());
    switch (r(3)) {
      case 0:
        q.dut.cmd("destroy " + std::to_string(lanes[i].s.qp), true);
        lanes[i] = new_lane();
        break;
      case 1:
        // The MR goes while packets name it; a new one needs a QP that is not in Error
        // (REG_MR on a flushed QP fails), so the lane starts over.
        q.dut.cmd("dereg " + std::to_string(lanes[i].target.idx), true);
        q.dut.cmd("destroy " + std::to_string(lanes[i].s.qp), true);
        lanes[i] = new_lane();
        break;
      default:
        q.dut.cmd("error " + std::to_string(lanes[i].s.qp), true);  // flushed under traffic
        break;
    }
  }

  void step() {
    Packet p = one_in(4) ? control_packet() : data_packet();
    p.bth.conn_id = one_in(32) ? uint32_t(rng()) : q.dut_conn_id;
    // A CLOSE with the right id ends the connection: everything after it would only be
    // dropped as unknown.  It is sent so only in the last packets.
    if (p.bth.opcode == kClose && !closing) p.bth.conn_id ^= 1 + uint32_t(r(0xffff));
    const unsigned path = unsigned(r(q.npaths ? q.npaths : 1));
    if (one_in(64)) {
      Bytes junk(r(200));
      for (auto &b : junk) b = uint8_t(rng());
      q.send_raw(junk, q.my_sport(path));
    } else if (is_sequenced(p.bth.opcode) && !one_in(8)) {
      q.send_seq(p, path);
    } else if (is_sequenced(p.bth.opcode)) {
      q.send_at(p, path, one_in(2) ? uint32_t(rng()) : q.next_psn[path] + uint32_t(r(1 << 20)));
    } else {
      q.send_raw(p.encode(), q.my_sport(path));
    }
  }
};

// [MR-SEC-1] [MR-SEC-2] [MR-SEC-3] [MR-SEC-6] [MR-SEC-7] [MR-SEC-8]: whatever the packets,
// nothing is written that the fuzzer had no right to write, and the DUT stays healthy.
TEST_F(FuzzTest, MR_SEC_6_ReceivePathSurvivesMutatedTraffic) {
  CLAUSES("MR-SEC-1 MR-SEC-2 MR-SEC-3 MR-SEC-6 MR-SEC-7 MR-SEC-8");
  const uint64_t iters = env_u64("CONF_FUZZ_ITERS", 3000);
  const uint64_t seed = env_u64("CONF_FUZZ_SEED", 1);
  Peer q("198.18.1.24", 8);
  Fuzzer f(q, seed);
  for (int i = 0; i < 4; i++) f.lanes.push_back(f.new_lane());
  Peer::Stream cs = q.open_stream();
  f.canary_qp = cs.qp;
  f.local_only = q.dut_mr(cs, 8192, "l");  // local write only
  f.untold = q.dut_mr(cs, 8192, "wra");
  q.dut.cmd("fill m " + std::to_string(f.local_only.idx) + " 0 8192 195");
  q.dut.cmd("fill m " + std::to_string(f.untold.idx) + " 0 8192 60");
  const Bytes lo_before = mr_contents(q, f.local_only.idx, 8192);
  const Bytes un_before = mr_contents(q, f.untold.idx, 8192);
  ASSERT_EQ(lo_before.size(), 8192u);
  const uint64_t drops0 = q.dut.counter("rx_drop_malformed") + q.dut.counter("rx_engine_drops");
  const uint64_t naks0 = q.dut.counter("naks_sent");

  for (uint64_t i = 0; i < iters; i++) {
    f.closing = i + 100 >= iters;
    f.step();
    if (i % 64 == 63) q.pump(2);
    if (i % 500 == 499) f.lifecycle();
  }
  q.pump(200);

  EXPECT_EQ(hex(mr_contents(q, f.local_only.idx, 8192)), hex(lo_before))
      << "an MR without remote access was written";
  EXPECT_EQ(hex(mr_contents(q, f.untold.idx, 8192)), hex(un_before))
      << "an MR whose rkey was never sent was written";
  const uint64_t drops = q.dut.counter("rx_drop_malformed") + q.dut.counter("rx_engine_drops") -
                         drops0;
  printf("# seed %llu, %llu packets, %u lifecycle events: %llu dropped, %llu NAKs, "
         "%llu bad rsns, %llu wrong-address drops, %llu restart challenges\n",
         (unsigned long long)seed, (unsigned long long)iters, f.events,
         (unsigned long long)drops, (unsigned long long)(q.dut.counter("naks_sent") - naks0),
         (unsigned long long)q.dut.counter("rx_bad_rsns"),
         (unsigned long long)q.dut.counter("rx_drop_wrong_addr"),
         (unsigned long long)q.dut.counter("restart_challenges"));
  EXPECT_GT(drops, 0u) << "the fuzzer reached nothing";
  for (auto &l : f.lanes) q.dut.cmd("destroy " + std::to_string(l.s.qp), true);
  q.dut.cmd("destroy " + std::to_string(cs.qp), true);
  // Another connection of the DUT never noticed.
  expect_connection_works(0x73);
}

}  // namespace
}  // namespace conf
