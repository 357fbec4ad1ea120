// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The report's arithmetic: percentiles, Jain's index, ratios, recovery time.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "stats.hpp"

using namespace mr::bench;

TEST(Percentile, NearestRankOfUnsortedSamples)
{
	std::vector<double> v{5, 1, 4, 2, 3};
	EXPECT_EQ(percentile(v, 50), 3);
	EXPECT_EQ(percentile(v, 0), 1);
	EXPECT_EQ(percentile(v, 100), 5);
	EXPECT_EQ(percentile(v, 20), 1);
	EXPECT_EQ(percentile(v, 21), 2);
}

TEST(Percentile, P99OfAHundredSamplesIsTheNinetyNinthSmallest)
{
	std::vector<double> v;
	for (int i = 100; i >= 1; i--)
		v.push_back(i);
	EXPECT_EQ(percentile(v, 99), 99);
	EXPECT_EQ(percentile(v, 50), 50);
}

TEST(Percentile, NothingToRankGivesNoValue)
{
	EXPECT_FALSE(percentile({}, 50));
	std::vector<double> v{1};
	EXPECT_FALSE(percentile(v, 101));
	EXPECT_FALSE(percentile(v, -1));
}

TEST(Median, MeanOfTheTwoMiddlesOfAnEvenCount)
{
	std::vector<double> v{4, 1, 3, 2};
	EXPECT_EQ(median(v), 2.5);
	std::vector<double> two{10, 20};
	EXPECT_EQ(median(two), 15) << "two repetitions: not the lower one";
}

TEST(Median, MiddleOfAnOddCount)
{
	std::vector<double> v{9, 1, 5, 7, 3};
	EXPECT_EQ(median(v), 5);
	EXPECT_FALSE(median({}));
}

TEST(JainIndex, EqualSharesAreFair)
{
	std::vector<double> v{3, 3, 3, 3};
	EXPECT_DOUBLE_EQ(*jain_index(v), 1.0);
}

TEST(JainIndex, OneTakingEverythingIsOneOverN)
{
	std::vector<double> v{8, 0, 0, 0};
	EXPECT_DOUBLE_EQ(*jain_index(v), 0.25);
}

TEST(JainIndex, KnownMixedValue)
{
	std::vector<double> v{1, 2, 3};	// 36 / (3 * 14)
	EXPECT_NEAR(*jain_index(v), 36.0 / 42.0, 1e-12);
}

TEST(JainIndex, NoSharesOrAllZeroGiveNoValue)
{
	EXPECT_FALSE(jain_index({}));
	std::vector<double> v{0, 0};
	EXPECT_FALSE(jain_index(v));
}

TEST(Ratio, NeedsBothValuesAndAPositiveBaseline)
{
	EXPECT_DOUBLE_EQ(*ratio(9.0, 10.0), 0.9);
	EXPECT_FALSE(ratio(std::nullopt, 1.0));
	EXPECT_FALSE(ratio(1.0, std::nullopt));
	EXPECT_FALSE(ratio(1.0, 0.0));
}

TEST(Recovery, TimeFromTheCutToTheIntervalThatHoldsTheRateAgain)
{
	// 10 MB/s, cut at 3000 ms, 2 MB/s until 3500, back to 9 from the sample at 3750
	// (the interval 3500-3750).
	std::vector<Sample> s;
	for (int t = 250; t <= 6000; t += 250)
		s.push_back({double(t), t <= 3000 ? 10.0 : t <= 3500 ? 2.0 : 9.0});
	auto r = recovery(s, 3000, 0.8, 1000);
	ASSERT_TRUE(r.before);
	EXPECT_DOUBLE_EQ(*r.before, 10.0);
	EXPECT_DOUBLE_EQ(*r.lowest_after_cut, 2.0);
	ASSERT_TRUE(r.recovery_ms);
	EXPECT_DOUBLE_EQ(*r.recovery_ms, 500.0);
}

TEST(Recovery, ABriefSpikeThatDoesNotHoldIsNotRecovery)
{
	std::vector<Sample> s{{1250, 10}, {1500, 10}, {2000, 1}, {2250, 9}, {2500, 1},
			      {2750, 1},  {3000, 9},  {3250, 9}, {3500, 9}, {3750, 9}, {4000, 9}};
	auto r = recovery(s, 1500, 0.8, 1000);
	ASSERT_TRUE(r.recovery_ms);
	EXPECT_DOUBLE_EQ(*r.recovery_ms, 1250.0);	// from the interval starting at 2750
}

TEST(Recovery, NeverBackIsNoRecovery)
{
	std::vector<Sample> s{{1500, 10}, {2000, 10}, {2500, 1}, {3000, 1}};
	auto r = recovery(s, 2000, 0.8, 1000);
	EXPECT_TRUE(r.before);
	EXPECT_FALSE(r.recovery_ms);
}

// A transport notices a black-holed link only when its timers run out: the rate holds
// for a second after the cut, then falls to nothing until the link is back.  That is
// no recovery (it read as 0 ms before the dip was looked for).
TEST(Recovery, ALateDipThatLastsUntilTheRestoreIsNoRecovery)
{
	std::vector<Sample> s;
	for (int t = 250; t <= 8000; t += 250)
		s.push_back({double(t), t <= 3250 ? 10.0 : t <= 6000 ? 0.0 : 10.0});
	auto r = recovery(s, 2000, 0.8, 1000, 6000.0);
	ASSERT_TRUE(r.before);
	EXPECT_FALSE(r.recovery_ms);
	// The rate back after the restore is not recovery either way; without a restore
	// time it counts from the dip at 3500 (interval 3250-3500) to 6250 (6000-6250).
	auto open_ended = recovery(s, 2000, 0.8, 1000);
	ASSERT_TRUE(open_ended.recovery_ms);
	EXPECT_DOUBLE_EQ(*open_ended.recovery_ms, 4000.0);
}

// On a noisy host single samples fall under the bar before a cut as after it: one
// that falls seconds after the cut, the rate holding around it, is not the cut's.
// The same fall in the second after the cut is, and so is a late fall that lasts.
TEST(Recovery, ALateSingleSampleUnderTheBarIsNotTheCut)
{
	std::vector<Sample> s;
	for (int t = 250; t <= 10000; t += 250)
		s.push_back({double(t), t == 2000 || t == 6000 ? 5.0 : 10.0});
	auto r = recovery(s, 3000, 0.8, 1000, 9000.0);
	ASSERT_TRUE(r.recovery_ms);
	EXPECT_DOUBLE_EQ(*r.recovery_ms, 0.0);
	ASSERT_TRUE(r.noise_share && r.during);
	EXPECT_DOUBLE_EQ(*r.noise_share, 1.0 / 8);	// 2000 of 1250..3000
	EXPECT_DOUBLE_EQ(*r.before, (7 * 10.0 + 5.0) / 8);
	EXPECT_DOUBLE_EQ(*r.during, (23 * 10.0 + 5.0) / 24);	// 3250..9000

	// in the second after the cut: it counts, back from the next sample
	s[3500 / 250 - 1].value = 5.0;
	r = recovery(s, 3000, 0.8, 1000, 9000.0);
	ASSERT_TRUE(r.recovery_ms);
	EXPECT_DOUBLE_EQ(*r.recovery_ms, 500.0);	// the interval 3500-3750 holds

	// a late fall that lasts a second (6000..7000) counts from its start
	s[3500 / 250 - 1].value = 10.0;
	for (int t = 6250; t <= 7000; t += 250)
		s[t / 250 - 1].value = 5.0;
	r = recovery(s, 3000, 0.8, 1000, 9000.0);
	ASSERT_TRUE(r.recovery_ms);
	EXPECT_DOUBLE_EQ(*r.recovery_ms, 4000.0);	// back in 7000-7250
}

TEST(Recovery, ACutThatNeverShowsTakesNoTime)
{
	std::vector<Sample> s;
	for (int t = 250; t <= 6000; t += 250)
		s.push_back({double(t), 10.0});
	auto r = recovery(s, 3000, 0.8, 1000, 5000.0);
	ASSERT_TRUE(r.recovery_ms);
	EXPECT_DOUBLE_EQ(*r.recovery_ms, 0.0);
}

TEST(Recovery, NoBaselineBeforeTheCut)
{
	std::vector<Sample> s{{500, 10}, {2000, 10}};
	EXPECT_FALSE(recovery(s, 900, 0.8, 1000).before);
}

TEST(Convergence, EqualSharersConvergeAtOnce)
{
	std::vector<std::vector<Sample>> flows(2);
	for (int t = 100; t <= 3000; t += 100)
		for (auto &f : flows)
			f.push_back({double(t), t * 10.0});
	EXPECT_EQ(convergence_ms(flows, 500, 0.95, 3), 0.0);
}

TEST(Convergence, AHogThatYieldsAfterASecond)
{
	// Flow 0 takes 9 of 10 units per ms for the first second, then both get 5.
	std::vector<std::vector<Sample>> flows(2);
	for (int t = 100; t <= 4000; t += 100) {
		double hog = t <= 1000 ? t * 9.0 : 9000 + (t - 1000) * 5.0;
		double meek = t <= 1000 ? t * 1.0 : 1000 + (t - 1000) * 5.0;
		flows[0].push_back({double(t), hog});
		flows[1].push_back({double(t), meek});
	}
	EXPECT_EQ(convergence_ms(flows, 500, 0.95, 3), 1000.0);
}

TEST(Convergence, NeverFairIsNever)
{
	std::vector<std::vector<Sample>> flows(2);
	for (int t = 100; t <= 3000; t += 100) {
		flows[0].push_back({double(t), t * 9.0});
		flows[1].push_back({double(t), t * 1.0});
	}
	EXPECT_FALSE(convergence_ms(flows, 500, 0.95, 3));
}

TEST(Convergence, FinishedFlowsNoLongerCompete)
{
	// Flow 1 stops at 1000 ms; alone, flow 0 cannot be unfair, and nobody is left
	// to compare with, so only the shared first second counts.
	std::vector<std::vector<Sample>> flows(2);
	for (int t = 100; t <= 3000; t += 100) {
		flows[0].push_back({double(t), t * 5.0});
		flows[1].push_back({double(t), std::min(t, 1000) * 5.0});
	}
	EXPECT_FALSE(convergence_ms(flows, 500, 0.95, 3));
	EXPECT_EQ(convergence_ms(flows, 500, 0.95, 2), 0.0);
}
