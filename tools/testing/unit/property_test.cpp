// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Property tests: two engines over a seeded lossy, reordering, duplicating multipath fabric.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "sim.hpp"

namespace {

using mrsim::FabricConfig;
using mrsim::Result;
using mrsim::Sim;
using mrsim::Workload;

Workload MixedWorkload(uint64_t seed, uint32_t messages)
{
	std::mt19937_64 rng(seed);
	Workload wl;
	const uint32_t shapes[] = { 0, 1, 4095, 4096, 4097, 65536, 300000, 1 << 20 };

	for (uint32_t i = 0; i < messages; i++)
		wl.sizes.push_back(rng() % 4 ? static_cast<uint32_t>(rng() % 200000)
					     : shapes[rng() % 8]);
	return wl;
}

void ExpectClean(const Result &r, uint64_t seed)
{
	EXPECT_TRUE(r.completed) << "seed " << seed;
	EXPECT_TRUE(r.quiescent) << "seed " << seed << ": state left behind\n" << r.diag;
	for (const auto &e : r.errors)
		ADD_FAILURE() << "seed " << seed << ": " << e;
	EXPECT_EQ(r.spins, 0u) << "seed " << seed << ": a deadline nothing could act on, "
			       << r.spin_diag;
}

// [MR-REL-7] [MR-REL-10] [MR-VERBS-2] [MR-VERBS-3] [MR-SACK-2] [MR-REL-1]
// Every message is delivered exactly once, at the right offsets, completed in MSN order,
// and no state is left, whatever the fabric loses, duplicates or reorders.
TEST(Property, ExactlyOnceInOrderCompletionOverLossyReorderingFabric_MR_REL_7)
{
	for (uint64_t seed = 1; seed <= 50; seed++) {
		FabricConfig fc;
		fc.loss = 0.02;
		fc.dup = 0.01;
		fc.reorder = 0.005;
		Sim sim(fc, MixedWorkload(seed, 40), seed);
		Result r = sim.run();
		ExpectClean(r, seed);
		if (HasFailure())
			break;
	}
}

// [MR-REL-7] heavy loss and duplication still deliver exactly once.
TEST(Property, ExactlyOnceUnderTenPercentLoss_MR_REL_10)
{
	for (uint64_t seed = 100; seed < 110; seed++) {
		FabricConfig fc;
		fc.loss = 0.10;
		fc.dup = 0.05;
		fc.reorder = 0.01;
		Sim sim(fc, MixedWorkload(seed, 24), seed);
		ExpectClean(sim.run(), seed);
		if (HasFailure())
			break;
	}
}

// A fabric like two emulated guests on a busy host: RTTs of milliseconds that jump by
// more than the RTO, so paths time out, turn SUSPECT, windows collapse and pacing gaps
// grow. Everything still arrives exactly once, and the engine never names a deadline
// it cannot act on (the kernel's timer would spin on it).
TEST(Property, SlowJitteryFabricCompletesWithoutTimerSpins_MR_REL_3)
{
	for (uint64_t seed = 200; seed < 210; seed++) {
		FabricConfig fc;
		fc.base_latency_ns = 300'000;
		fc.latency_step_ns = 50'000;
		fc.jitter_ns = 3'000'000;
		fc.loss = 0.01;
		fc.time_limit_ns = 60'000'000'000ULL;
		Sim sim(fc, MixedWorkload(seed, 24), seed);
		ExpectClean(sim.run(), seed);
		if (HasFailure())
			break;
	}
}

Workload BulkWorkload(uint32_t total_mb)
{
	Workload wl;
	for (uint32_t i = 0; i < total_mb * 4; i++)
		wl.sizes.push_back(256 * 1024);
	return wl;
}

// [MR-CC-3] host jitter is not congestion: on a path whose RTT jitters by up to 10 ms
// (FIFO: a stall delays every packet behind it, as a descheduled virtual machine does)
// goodput stays at least 40% of the same fabric's without jitter.  When every sample
// above min_rtt + 50 us counted as a mark, windows sat near 1 packet: 0.020 Gb/s
// against 0.19 (0.11 with the noise-aware round rule).
TEST(Property, HostJitterIsNotReadAsCongestion_MR_CC_3)
{
	for (uint64_t seed = 1; seed <= 2; seed++) {
		FabricConfig c;
		c.line_gbps = 0.2;
		c.base_latency_ns = 1'000'000;
		c.time_limit_ns = 120'000'000'000ULL;
		Result steady = Sim(c, BulkWorkload(2), seed).run();
		ExpectClean(steady, seed);
		c.jitter_ns = 10'000'000;
		Result jittery = Sim(c, BulkWorkload(2), seed).run();
		ExpectClean(jittery, seed);
		double ratio = jittery.goodput_gbps() / steady.goodput_gbps();
		EXPECT_GE(ratio, 0.40) << "seed " << seed << ": " << steady.goodput_gbps()
				       << " Gb/s steady, " << jittery.goodput_gbps() << " jittery";
		RecordProperty("ratio_seed_" + std::to_string(seed), std::to_string(ratio));
	}
}

// [MR-REL-4] stalls longer than the old 32 ms RTO bound: the backoff outlasts them, so
// an RTO does not declare the window lost again and again.  With up to 60 ms of stall-like
// delay a 2 MB transfer took 12,057 retransmissions for 512 packets (0.0002 Gb/s) when
// MR_MAX_RTO was 32 ms; with 1 s, about a dozen.
TEST(Property, StallsLongerThanTheOldRtoBoundCauseNoRetransmissionStorm_MR_REL_4)
{
	for (uint64_t seed = 1; seed <= 2; seed++) {
		FabricConfig c;
		c.line_gbps = 0.2;
		c.base_latency_ns = 1'000'000;
		c.jitter_ns = 60'000'000;
		c.time_limit_ns = 300'000'000'000ULL;
		Result r = Sim(c, BulkWorkload(2), seed).run();
		ExpectClean(r, seed);
		EXPECT_LE(r.retransmits, 100u) << "seed " << seed << ": " << r.packets << " packets";
		EXPECT_GE(r.goodput_gbps(), 0.005) << "seed " << seed;
	}
}

// [MR-SACK-2] [MR-CC-4] at 1% random loss goodput stays >= 90% of the lossless run.
TEST(Property, GoodputAtOnePercentLossIsAtLeastNinetyPercentOfLossless_MR_CC_4)
{
	for (uint64_t seed = 1; seed <= 5; seed++) {
		FabricConfig clean;
		Result base = Sim(clean, BulkWorkload(16), seed).run();
		ExpectClean(base, seed);

		FabricConfig lossy;
		lossy.loss = 0.01;
		Result r = Sim(lossy, BulkWorkload(16), seed).run();
		ExpectClean(r, seed);
		double ratio = r.goodput_gbps() / base.goodput_gbps();
		EXPECT_GE(ratio, 0.90) << "seed " << seed << ": lossless " << base.goodput_gbps()
				       << " Gb/s, 1% loss " << r.goodput_gbps() << " Gb/s";
		RecordProperty("ratio_seed_" + std::to_string(seed), std::to_string(ratio));
	}
}

// [MR-PATH-6] [MR-PATH-2] [MR-REL-5] one of 8 paths black-holed: the transfer completes,
// the path is marked failed and re-rolled onto new entropy.
TEST(Property, BlackHoledPathFailsAndIsRerolledWhileTransferCompletes_MR_PATH_6)
{
	for (uint64_t seed = 1; seed <= 10; seed++) {
		FabricConfig fc;
		fc.line_gbps = 25;
		Sim probe(fc, Workload{}, seed);
		// Black-hole the link that the first path's initial entropy maps to.
		uint16_t e0 = probe.a()->tx_path[0].entropy;
		fc.blackhole_link = static_cast<int>(mrsim::link_of(e0, fc.links));
		Result r = Sim(fc, BulkWorkload(32), seed).run();
		ExpectClean(r, seed);
		EXPECT_GE(r.failures_per_path[0], 1u) << "seed " << seed;
		EXPECT_NE(r.final_entropy[0], r.initial_entropy[0]) << "seed " << seed;
		EXPECT_NE(mrsim::link_of(r.final_entropy[0], fc.links),
			  static_cast<uint32_t>(fc.blackhole_link))
			<< "seed " << seed << ": the path should have left the black hole";
	}
}

// [MR-ACK-8] the link that every ACK took when ACKs left on one control port, black-holed
// both ways: ACKs go back with their path's entropy, so seven of eight paths keep
// their ACKs, the eighth fails, re-rolls and takes its ACKs elsewhere too.  With one
// ACK port the connection saw no ACK at all and timed out ([MR-CONN-10]); between two
// guests that was the bench's "one of 8 links cut" application error.
TEST(Property, ControlPortLinkBlackHoledBothWaysLeavesTheConnectionAlive_MR_ACK_8)
{
	for (uint64_t seed = 1; seed <= 5; seed++) {
		FabricConfig fc;
		fc.line_gbps = 25;
		fc.blackhole_link = static_cast<int>(mrsim::ack_link_of(0, fc.links));
		fc.blackhole_acks = true;
		Result r = Sim(fc, BulkWorkload(32), seed).run();
		ExpectClean(r, seed);
	}
}


// [MR-CC-4] on links that drop on overflow and mark nothing (8 links of 10 Gb/s behind a
// 100 Gb/s sender, drop-tail buffers of 8 and 32 full packets, 26 and 106 us), random
// loss's exemption does not let the sender overrun them: losses stay under 25% with 8
// packets of buffer (below MR_RTT_TARGET: only the heavy-loss rule sees it) and under 5%
// with 32.  Measured (seeds 1, 2): 22.2%, 18.6% and 4.1%, 0.06%; with every lossy round
// cutting (the rule before) 13.6%, 7.3% and 1.4%, 0.02%; with no loss cut at all 49.7%,
// 32.8% and 32.6%, 0.02%.
TEST(Property, OverflowingBuffersThatMarkNothingAreNotOverrun_MR_CC_4)
{
	for (uint32_t buf : { 8u, 32u }) {
		for (uint64_t seed = 1; seed <= 2; seed++) {
			FabricConfig c;
			c.link_gbps = 10;
			c.link_buffer_pkts = buf;
			Result r = Sim(c, BulkWorkload(128), seed).run();
			ExpectClean(r, seed);
			double lost = double(r.overflows) / double(r.packets);
			EXPECT_LE(lost, buf == 8 ? 0.25 : 0.05)
				<< "buffer " << buf << ", seed " << seed << ": " << r.overflows
				<< " of " << r.packets << " packets dropped, " << r.goodput_gbps()
				<< " Gb/s";
			RecordProperty("overflow_buf_" + std::to_string(buf) + "_seed_" +
					       std::to_string(seed),
				       std::to_string(lost));
		}
	}
}

} // namespace

namespace {

Workload RdmaWorkload(uint64_t seed, uint32_t messages)
{
	Workload wl = MixedWorkload(seed, messages);
	wl.rdma = true;
	return wl;
}

// [MR-REL-12] [MR-VERBS-3] [MR-VERBS-4] [MR-WIRE-7] [MR-WIRE-8] Reads and atomics over a lossy,
// duplicating, reordering fabric: every atomic executes exactly once and in MSN order (its
// result proves it), every Read returns the responder's bytes, all complete in order.
TEST(Property, ReadsReturnRightDataAndAtomicsExecuteExactlyOnce_MR_REL_12)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		FabricConfig fc;
		fc.loss = 0.03;
		fc.dup = 0.03;
		fc.reorder = 0.01;
		Sim sim(fc, RdmaWorkload(seed, 40), seed);
		Result r = sim.run();
		ExpectClean(r, seed);
		EXPECT_GT(r.reads, 0u);
		EXPECT_GT(r.atomics, 0u);
		if (HasFailure())
			break;
	}
}

// [MR-CONN-2] [MR-CONN-5] [MR-CONN-8] the handshake runs over the same lossy fabric: lost
// CONNECT_REQs and CONNECT_RESPs are retried, duplicates answered, and the transfer completes.
TEST(Property, HandshakeSurvivesLossAndDuplicationThenDataFlows_MR_CONN_5)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		FabricConfig fc;
		fc.loss = 0.25;		// loses a CONNECT_REQ or RESP in about half the runs
		fc.dup = 0.05;
		Workload wl = RdmaWorkload(seed, 10);
		wl.handshake = true;
		Sim sim(fc, wl, seed);
		Result r = sim.run();
		ExpectClean(r, seed);
		EXPECT_EQ(sim.hs_a().state, MR_HS_ESTABLISHED);
		EXPECT_EQ(sim.hs_b().state, MR_HS_ESTABLISHED);
		EXPECT_EQ(sim.hs_a().peer_conn_id, sim.hs_b().local_conn_id);
		if (HasFailure())
			break;
	}
}

// [MR-CONN-7] [MR-VERBS-8] B still holds a connection from A's previous incarnation: A's new
// CONNECT_REQ tears it down (its WQE fails) and the new connection carries the transfer.
TEST(Property, RestartedPeerReplacesTheStaleConnection_MR_CONN_7)
{
	for (uint64_t seed = 1; seed <= 5; seed++) {
		FabricConfig fc;
		fc.loss = 0.05;
		Workload wl = RdmaWorkload(seed, 10);
		wl.handshake = true;
		wl.stale_peer = true;
		Sim sim(fc, wl, seed);
		Result r = sim.run();
		ExpectClean(r, seed);
		EXPECT_EQ(r.stale_flushed, 1u) << "seed " << seed;
		EXPECT_GE(r.challenges, 1u) << "seed " << seed << ": believed without a challenge";
		EXPECT_NE(sim.hs_b().local_conn_id, 0x4343u) << "a new connection";
		if (HasFailure())
			break;
	}
}

} // namespace

// [MR-PATH-6] [MR-REL-5] [MR-ACK-8] the bench's failure scenario on the simulator's fabric:
// 3 ms into a 32 MB transfer over 8 links, the link of path 0 is black-holed both ways
// for good.  Completions may stop for at most 10 minimum RTOs (1 ms) longer than their
// longest pause without the cut (the bench's goal, "recovery within 10 RTOs"): the cut
// path's window is declared lost at its first RTO and resent on the other paths, and the
// path fails over.  Measured (seeds 1-5): the longest pause grew by 62, 19, 82, 19 and
// 18 us, the transfer ended 87, 26, 47, 26 and 30 us later, with 7, 2, 2, 1 and 4 path
// failures (a re-rolled path can land on the dead link again).  With an RTO floor of
// 2 ms instead of 100 us the pause grows by 1.7-2.0 ms and the test fails.  The bench's
// recovery between two emulated guests takes seconds; the protocol does not.
TEST(Property, LinkCutMidTransferStallsCompletionsForFewRtos_MR_PATH_6)
{
	for (uint64_t seed = 1; seed <= 5; seed++) {
		FabricConfig fc;
		fc.line_gbps = 25;
		Result uncut = Sim(fc, BulkWorkload(32), seed).run();
		ExpectClean(uncut, seed);

		fc.blackhole_acks = true;
		fc.blackhole_from_ns = 3'000'000;
		Sim probe(fc, Workload{}, seed);
		fc.blackhole_link =
			static_cast<int>(mrsim::link_of(probe.a()->tx_path[0].entropy, fc.links));
		Result cut = Sim(fc, BulkWorkload(32), seed).run();
		ExpectClean(cut, seed);
		EXPECT_GE(cut.path_failures, 1u) << "seed " << seed;
		EXPECT_LE(cut.max_completion_gap_ns,
			  uncut.max_completion_gap_ns + 10 * MR_MIN_RTO_NS)
			<< "seed " << seed << ": longest pause " << uncut.max_completion_gap_ns
			<< " ns uncut, " << cut.max_completion_gap_ns << " ns cut";
		RecordProperty("pause_growth_ns_seed_" + std::to_string(seed),
			       std::to_string(cut.max_completion_gap_ns -
					      uncut.max_completion_gap_ns));
	}
}

// [MR-PATH-10] [MR-PATH-2] 8 paths hashed onto 8 bottleneck links (5 Gb/s, drop-tail
// buffers of 32 packets): random entropy puts two or three paths on some links and none
// on others, 5.4 links of 8 on average.  A path that delivers less than 2/3 of the best
// while congested moves, so the sender ends on at least 7 links and near their sum.
// Measured (seeds 1-5): 4, 7, 6, 7, 6 links -> 8, 8, 7, 8, 7, 33-38 Gb/s of 40; with no moves
// 26.3 Gb/s mean over 30 seeds.
TEST(Property, PathsSharingABottleneckSpreadOverFreeLinks_MR_PATH_10)
{
	for (uint64_t seed = 1; seed <= 5; seed++) {
		FabricConfig fc;
		fc.link_gbps = 5;
		fc.link_buffer_pkts = 32;
		Result r = Sim(fc, BulkWorkload(64), seed).run();
		ExpectClean(r, seed);
		std::set<uint32_t> before, after;
		for (auto e : r.initial_entropy)
			before.insert(mrsim::link_of(e, fc.links));
		for (auto e : r.final_entropy)
			after.insert(mrsim::link_of(e, fc.links));
		EXPECT_GE(after.size(), 7u) << "seed " << seed << ": " << before.size()
					    << " links at first, " << r.path_rebalances
					    << " moves";
		EXPECT_GE(r.goodput_gbps(), 0.75 * fc.links * fc.link_gbps)
			<< "seed " << seed << ": links " << before.size() << " -> " << after.size();
		RecordProperty("links_seed_" + std::to_string(seed),
			       std::to_string(before.size()) + " -> " + std::to_string(after.size()) +
				       ", " + std::to_string(r.goodput_gbps()) + " Gb/s");
	}
}

// [MR-PATH-10] 8 paths cannot share 6 links evenly: two links always carry two paths, and
// those paths deliver half what a path alone on a link does.  Moving cannot help, so the
// moves must slow down: every n_paths moves double the epochs a path must stay slow
// before the next one, up to 16.  Measured (seed 1, 128 MB, 41 ms): 26 moves, 47 without
// the back-off, the same goodput.  On one shared link, where the paths share fairly and
// overflow drops are not read as a collision, 5 moves in 55 ms; 24 when a loss counted
// as congestion.
TEST(Property, PathsThatCannotBeBalancedAreNotKeptMoving_MR_PATH_10)
{
	for (uint32_t links : { 6u, 1u }) {
		FabricConfig fc;
		fc.links = links;
		fc.link_gbps = 5;
		fc.link_buffer_pkts = 32;
		Result r = Sim(fc, BulkWorkload(links == 1 ? 32 : 128), 1).run();
		ExpectClean(r, 1);
		std::set<uint32_t> after;
		for (auto e : r.final_entropy)
			after.insert(mrsim::link_of(e, fc.links));
		EXPECT_EQ(after.size(), links) << links << " links";
		EXPECT_LE(r.path_rebalances, links == 1 ? 8u : 36u)
			<< links << " links: " << r.goodput_gbps() << " Gb/s in "
			<< r.finish_ns / 1e6 << " ms";
		EXPECT_GE(r.goodput_gbps(), 0.75 * fc.links * fc.link_gbps) << links << " links";
	}
}
