// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// What every conformance test shares: the peer, clause tags, small waits.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "peer.hpp"

// Names the clauses a test checks (the coverage table's source).
#define CLAUSES(ids) RecordProperty("clauses", ids)
// A known gap of the implementation: the test fails honestly but does not fail the run.
#define KNOWN_GAP(why) RecordProperty("todo", why)

namespace conf {

class Conformance : public testing::Test {
 protected:
  void SetUp() override {
    Peer &p = peer();
    p.lose = nullptr;
    p.echo_ce = false;
    p.rate_hint = 0;
    p.auto_ack = true;
    p.send_msgack = true;
    p.pump(2);
    p.inbox.clear();
    p.seen_data.clear();
  }
  void TearDown() override {
    for (int qp : P.opened) P.dut.cmd("destroy " + std::to_string(qp));
    P.opened.clear();
  }
  Peer &P = peer();

  // A stream with one MR on the DUT; the MR buffer filled with bytes seed + i.
  struct Target {
    Peer::Stream s;
    Peer::Mr mr;
  };
  Target target(const std::string &access, uint32_t len = 16384, uint8_t seed = 0xa0) {
    Target t;
    t.s = P.open_stream();
    t.mr = P.dut_mr(t.s, len, access);
    P.dut.cmd("fill m " + std::to_string(t.mr.idx) + " 0 " + std::to_string(len) + " " +
              std::to_string(seed));
    return t;
  }
  Bytes mr_bytes(const Target &t, uint64_t off, uint64_t len) {
    return P.dut_bytes("m", t.mr.idx, off, len);
  }
  // Expects an ACK on path whose cum_psn and SACK equal the reference receiver's.
  void expect_ack_matches_model(unsigned path, int ms = 200, const char *what = "") {
    auto a = P.wait_ack(path, ms);
    ASSERT_TRUE(a) << "no ACK for path " << path << " " << what;
    EXPECT_EQ(a->pkt.ack.cum_psn, P.model[path].cum) << what;
    const auto want = P.model[path].sack();
    EXPECT_EQ(hex(Bytes(a->pkt.ack.sack.begin(), a->pkt.ack.sack.end())),
              hex(Bytes(want.begin(), want.end())))
        << "SACK bitvector " << what;
  }
  // No packet for which pred holds arrives within ms.
  void expect_none(const std::function<bool(const Received &)> &pred, int ms, const char *what) {
    auto r = P.wait(pred, ms);
    EXPECT_FALSE(r) << what << ": got " << r->pkt.describe();
  }
  std::string poll_dut(const Peer::Stream &s, int ms) {
    return P.dut.cmd("poll " + std::to_string(s.qp) + " " + std::to_string(ms));
  }
  // The shared connection still carries data: a Write on a new stream is placed and
  // acknowledged.
  void expect_connection_works(uint8_t seed) {
    Peer::Stream s = P.open_stream();
    Peer::Mr mr = P.dut_mr(s, 4096, "w");
    Bytes data = pattern(64, seed);
    Packet w = P.write_pkt(s, 0, mr.va, mr.rkey, 64, 0, data);
    w.bth.flags |= kAckReq;
    P.send_seq(w, 0);
    ASSERT_TRUE(P.wait_ack(0, 500)) << "the connection stopped answering";
    EXPECT_EQ(hex(P.dut_bytes("m", mr.idx, 0, 64)), hex(data));
  }
  int qp_state(const Peer::Stream &s) {
    return int(Dut::field(P.dut.cmd("state " + std::to_string(s.qp)), "state"));
  }
};

}  // namespace conf
