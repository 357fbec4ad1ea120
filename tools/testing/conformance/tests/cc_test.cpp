// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// congestion.rst: the DUT's sender window, seen through a connection of one path.
#include <algorithm>
#include <cstdio>
#include <functional>

#include "suite.hpp"

namespace conf {
namespace {

using CcTest = Conformance;

unsigned median(std::vector<unsigned> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Keeps four Writes of len bytes from the DUT's stream s to q posted, posting another as
// each completes, while more() holds; every Write must succeed.  *done: Writes completed.
void keep_writing(Peer &q, const Peer::Stream &s, uint32_t len,
                  const std::function<bool()> &more, unsigned *done) {
  const std::string qs = std::to_string(s.qp);
  auto post = [&] { q.dut.cmd("write " + qs + " 0 " + std::to_string(len) + " 0x100000 0x1"); };
  for (int i = 0; i < 4; i++) post();
  while (more()) {
    q.pump(5);
    peer().pump(0);  // the shared connection must not go silent meanwhile ([MR-CONN-10])
    std::string wc = q.dut.cmd("poll " + qs + " 0");
    for (size_t pos = 0; (pos = wc.find("status=", pos)) != std::string::npos; pos++) {
      ASSERT_EQ(wc.compare(pos, 9, "status=0 "), 0) << "a Write failed: " << wc;
      ++*done;
      post();
    }
  }
}

// [MR-CC-4]: SACK-detected losses cut the path's window by 1/8, once per round, and only
// in a round that also shows a queue or loses over 1/8 of its packets.
//
// A connection of its own, from another tester address, with one path: every packet the
// DUT sends is then limited by that path's window ([MR-CC-1], [MR-CC-6]).  We take the
// DUT's packets in (record and acknowledge them) 40 ms after they arrive, as over a long
// link with no queue (the RTT is flat: no delay signal, no CE), so that a window of W
// packets needs W / 40 packets per ms: within reach of the emulated guest up to about 30.
// The packets we hold are then the DUT's window (less the ACKs on their way, the packets
// we dropped, and whatever its pacing, [MR-CC-7], holds back after a stall has raised its
// SRTT): the largest count per 40 ms bucket is the measurement.  The DUT keeps 512 KiB
// Writes posted.
//  - Once per round: six times, 300 ms apart, we drop every other packet of 16 new ones.
//    The eight holes show in eight ACKs within less than a round, so at most two rounds:
//    a sender that cuts at most once per round keeps at least (7/8)^2 = 0.77 of its
//    window, one that cuts for each of those ACKs keeps (7/8)^8 = 0.34.  Compared: the largest window
//    in the round that follows the one in which the holes show (the DUT has sent a new
//    window by then, and grown it by about one packet) with the largest in the two rounds
//    before the first drop.  A stall only lowers what we see, so the second best ratio
//    counts, and it must be at least 0.65.  Only windows of 12 or more before the burst
//    count (in a smaller one a packet is more than the cut).  Measured: 0.86 to 0.90
//    (windows 20 to 24); a DUT cutting per ACK, 0.43 and then windows below 12.
//  - Random loss is not congestion: then we drop one new packet in 16 for 2 s.  A DUT
//    that cut 1/8 in every round with a loss (the rule before) settles where W / 8 = 1 or
//    W / 8 = 16 / W, between 8 and 13; one that does not cut keeps growing.  The median of
//    the last 1.5 s must be at least 16.
//  - Heavy loss is: then we drop every other new packet for 2 s.  With the resends (on
//    the one path) a round of W PSNs holds 2W/3 new ones, and loses W/3 of the W/3 + W
//    that count, over 1/8, so it cuts by W/8 while its deliveries add one packet: the
//    window settles near 8, of which we hold about 5.  A DUT that never cuts for a loss
//    keeps growing from the 16 or more it had.  The median of the last 1.5 s must be at
//    most 12.
TEST_F(CcTest, MR_CC_4_LossCutsOncePerRoundAndOnlyWhenCongested) {
  CLAUSES("MR-CC-4 MR-SACK-2 MR-CONN-4 MR-CONN-12");
  constexpr int kDelayMs = 40;
  Peer q("198.18.1.20", 1);  // above the DUT's address: the DUT asks ([MR-CONN-12])
  q.data_delay = std::chrono::milliseconds(kDelayMs);
  Peer::Stream s = q.open_stream();
  ASSERT_EQ(q.npaths, 1u) << "we offered one path";
  const std::string qs = std::to_string(s.qp);
  const uint32_t len = 512 * 1024;
  q.dut.cmd("fill l " + qs + " 0 " + std::to_string(len) + " 1");

  const std::vector<double> bursts = {1600, 1900, 2200, 2500, 2800, 3100};  // ms
  const double random_from = 3400, random_settled = 3900, heavy_from = 5400,
               heavy_settled = 5900, end = 7400;
  const auto t0 = Clock::now();
  auto ms = [&](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(t - t0).count();
  };
  std::map<int, unsigned> most, dropped;  // per bucket of kDelayMs
  std::vector<int> burst_bucket;          // the bucket of each burst's first drop
  unsigned news = 0, burst_left = 0;
  q.lose = [&](const Received &r) {
    const double t = ms(r.when);
    const int b = int(t / kDelayMs);
    if (!(r.pkt.bth.flags & kRetx) && r.pkt.bth.opcode == kWrite) {
      news++;
      if (burst_bucket.size() < bursts.size() && t >= bursts[burst_bucket.size()]) {
        burst_bucket.push_back(b + 1);  // the next new packet is the first dropped
        burst_left = 16;
      }
      bool drop = false;
      if (burst_left) drop = burst_left-- % 2 == 0;
      if (t >= random_from && t < heavy_from && news % 16 == 0) drop = true;
      if (t >= heavy_from && news % 2 == 0) drop = true;
      if (drop) {
        dropped[b]++;
        return true;
      }
    }
    most[b] = std::max<unsigned>(most[b], unsigned(q.held() + 1));
    return false;
  };
  const uint64_t sack0 = q.dut.counter("sack_losses"), rtos0 = q.dut.counter("rtos");
  unsigned done = 0;
  ASSERT_NO_FATAL_FAILURE(
      keep_writing(q, s, len, [&] { return ms(Clock::now()) < end; }, &done));
  q.lose = nullptr;
  const uint64_t sacks = q.dut.counter("sack_losses") - sack0, rtos = q.dut.counter("rtos") - rtos0;
  q.dut.cmd("destroy " + qs);
  q.close_connection();

  std::string line;
  for (auto &[b, n] : most) {
    if (b % 10 == 0) line += " |" + std::to_string(b * kDelayMs);
    line += " " + std::to_string(n) + (dropped[b] ? "x" + std::to_string(dropped[b]) : "");
  }
  printf("# largest window per %d ms (xN: N packets dropped):%s\n", kDelayMs, line.c_str());
  printf("# %u new packets, %u Writes done, %llu SACK losses, %llu RTOs\n", news, done,
         (unsigned long long)sacks, (unsigned long long)rtos);
  auto most_in = [&](int from, int to) {  // buckets [from, to)
    unsigned m = 0;
    for (int b = from; b < to; b++) m = std::max(m, most.count(b) ? most[b] : 0u);
    return m;
  };
  ASSERT_EQ(burst_bucket.size(), bursts.size()) << "the DUT stopped sending";
  std::vector<double> ratio;
  std::string each;
  for (int b : burst_bucket) {
    const unsigned w0 = most_in(b - 2, b), w1 = most_in(b + 1, b + 2);
    if (w0 >= 12) ratio.push_back(double(w1) / w0);  // smaller: a packet is too coarse
    each += " " + std::to_string(w1) + "/" + std::to_string(w0);
  }
  const unsigned w_first = most_in(burst_bucket[0] - 2, burst_bucket[0]);
  std::sort(ratio.begin(), ratio.end());
  const double r = ratio.size() >= 2 ? ratio[ratio.size() - 2] : 0;  // the second best
  auto settled = [&](double from, double to) {
    std::vector<unsigned> w;
    for (int b = int(from / kDelayMs); b < int(to / kDelayMs); b++)
      if (most.count(b)) w.push_back(most[b]);
    return median(w);
  };
  const unsigned w_random = settled(random_settled, heavy_from);
  const unsigned w_heavy = settled(heavy_settled, end);
  printf("# after/before eight losses in a round:%s; the second best of %zu with a window of "
         "12 or more before: %.2f\n", each.c_str(), ratio.size(), r);
  printf("# lossless window %u, with one loss in 16: %u, with one in 2: %u\n", w_first,
         w_random, w_heavy);
  ASSERT_GE(w_first, 16u) << "the DUT never had many packets in flight: too slow here to show "
                             "its window";
  EXPECT_GE(r, 0.65) << "eight losses in one round cut the window more than once, or by more "
                        "than 1/8, or left it below 12 packets for good";
  EXPECT_GE(w_random, 16u) << "random loss without a queue (one in 16, flat RTT) shrank the "
                              "window";
  EXPECT_LE(w_heavy, 12u) << "losing every other packet did not shrink the window to where "
                             "1/8 per round and the round's growth meet";
  EXPECT_GE(sacks, 20u) << "the DUT found too few losses by SACK";
}

// [MR-PATH-10] [MR-PATH-2]: a path that shares a congested bottleneck moves to new
// entropy, and only once what it sent is acknowledged.  A connection of its own
// (198.18.1.26) with 4 paths; we take the DUT's packets in 10 ms after they arrive, as
// over a link with no queue, and report every packet of path 1 CE-marked, as if path 1
// alone crossed a marking link.  The DUT's ECN response ([MR-CC-3]) shrinks path 1's
// window, so it delivers a fraction of what the others do while congested: within 3 s of
// Writes it must move (a new UDP source port on path 1), counted in path_rebalances.
// Each move drains first: our ACK for a packet leaves 10 ms after the packet arrived, so
// when a path's first packet on its new port arrives, each Write packet that came on its
// old port less than 10 ms before was still unacknowledged when the DUT moved.  Only an
// RTO ([MR-REL-5]) ends such a packet, and then the DUT sends its bytes again (RETX): each
// must be.  A DUT that moved with packets in flight sends on the new port at once, with
// no RTO.  Every change of port must be a counted move or failure ([MR-PATH-6]).
TEST_F(CcTest, MR_PATH_10_CongestedSlowPathMovesOnceDrained) {
  CLAUSES("MR-PATH-10 MR-PATH-2 MR-CC-3");
  constexpr int kDelayMs = 10;
  Peer q("198.18.1.26", 4);  // above the DUT's address: the DUT asks ([MR-CONN-12])
  q.data_delay = std::chrono::milliseconds(kDelayMs);
  q.ce_paths = 1u << 1;
  Peer::Stream s = q.open_stream();
  ASSERT_EQ(q.npaths, 4u) << "we offered four paths";
  const std::string qs = std::to_string(s.qp);
  const uint32_t len = 256 * 1024;
  q.dut.cmd("fill l " + qs + " 0 " + std::to_string(len) + " 1");
  const uint64_t moves0 = q.dut.counter("path_rebalances"),
                 fails0 = q.dut.counter("path_failures"), rtos0 = q.dut.counter("rtos");
  ASSERT_NE(moves0, ~0ull) << "no path_rebalances counter";
  unsigned done = 0;
  const auto end = Clock::now() + std::chrono::seconds(3);
  ASSERT_NO_FATAL_FAILURE(keep_writing(q, s, len, [&] { return Clock::now() < end; }, &done));
  q.ce_paths = 0;
  const uint64_t moves = q.dut.counter("path_rebalances") - moves0,
                 fails = q.dut.counter("path_failures") - fails0,
                 rtos = q.dut.counter("rtos") - rtos0;
  q.dut.cmd("destroy " + qs);
  q.close_connection();

  // Per path: its ports in the order they came, and each change's gap.
  const std::vector<Received> &seen = q.seen_data;
  auto resent_later = [&](size_t j) {
    for (size_t k = j + 1; k < seen.size(); k++)
      if ((seen[k].pkt.bth.flags & kRetx) && seen[k].pkt.bth.opcode == kWrite &&
          seen[k].pkt.bth.stream == seen[j].pkt.bth.stream &&
          seen[k].pkt.bth.msn == seen[j].pkt.bth.msn &&
          seen[k].pkt.bth.offset == seen[j].pkt.bth.offset)
        return true;
    return false;
  };
  std::map<unsigned, std::vector<size_t>> on_port;  // path -> its packets on the current port
  std::map<unsigned, unsigned> changes, packets;
  unsigned undrained = 0, expired = 0;
  std::string gaps;
  for (size_t i = 0; i < seen.size(); i++) {
    const unsigned path = seen[i].pkt.bth.path_id;
    std::vector<size_t> &old = on_port[path];
    packets[path]++;
    if (!old.empty() && seen[old.back()].sport != seen[i].sport) {
      const double gap = std::chrono::duration<double, std::milli>(
                             seen[i].when - seen[old.back()].when).count();
      changes[path]++;
      char buf[32];
      snprintf(buf, sizeof(buf), " %u:%.1f", path, gap);
      gaps += buf;
      for (size_t j : old) {
        if (seen[j].pkt.bth.opcode != kWrite ||
            seen[j].when + std::chrono::milliseconds(kDelayMs) <= seen[i].when)
          continue;  // acknowledged before the move, or no data
        if (resent_later(j))
          expired++;
        else
          undrained++;
      }
      old.clear();
    }
    old.push_back(i);
  }
  unsigned total = 0;
  std::string per_path;
  for (unsigned p = 0; p < q.npaths; p++) {
    total += changes[p];
    per_path += " " + std::to_string(p) + ":" + std::to_string(packets[p]) + "/" +
                std::to_string(changes[p]);
  }
  printf("# %u Writes done; packets/port changes per path:%s; %llu moves, %llu failures, "
         "%llu RTOs counted\n", done, per_path.c_str(), (unsigned long long)moves,
         (unsigned long long)fails, (unsigned long long)rtos);
  printf("# ms from a path's last packet on its old port to its first on the new (path:ms):%s\n",
         gaps.c_str());
  printf("# old-port Write packets unacknowledged at a move: %u sent again after an RTO, "
         "%u not\n", expired, undrained);
  EXPECT_GE(done, 4u) << "too little traffic to judge";
  EXPECT_GE(changes[1], 1u) << "the CE-marked path never moved";
  EXPECT_GE(moves, 1u) << "no move counted in path_rebalances";
  EXPECT_LE(total, moves + fails) << "port changes that no counted move or failure explains";
  EXPECT_EQ(undrained, 0u) << "paths moved with Write packets in flight that no RTO ended";
}

}  // namespace
}  // namespace conf
