// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The statistics the benchmark report rests on: percentiles, fairness, ratios, recovery.
#pragma once

#include <optional>
#include <span>
#include <vector>

namespace mr::bench {

// Nearest-rank percentile (p in [0, 100]) of unsorted samples; nullopt if there are none.
std::optional<double> percentile(std::span<const double> samples, double p);

// The median: the middle sample, or the mean of the two middle ones of an even count.
std::optional<double> median(std::span<const double> samples);

// Jain's fairness index (sum x)^2 / (n * sum x^2): 1 when all are equal, 1/n when one
// takes everything; nullopt for no samples or all zero.
std::optional<double> jain_index(std::span<const double> shares);

// value / baseline; nullopt when either is missing or the baseline is not positive.
std::optional<double> ratio(std::optional<double> value, std::optional<double> baseline);

struct Sample {
	double t_ms;
	double value;
};

// Throughput around a link failure: the mean before it, and how long after the cut the
// rate was back at fraction of that mean for good (nullopt: it never was).  Recovery
// counts from the sample at which the cut shows, before restore_ms, to the first one
// after it from which the rate holds at the bar for a second; with no such dip it is 0.
// The cut shows at the first sample under the bar in the second after it, or later
// (a transport notices a silent link only when its timers run out) at the first one
// from which the rate stays under the bar for a second: on a noisy host a single
// sample under the bar seconds after the cut is the host's, as common before the cut
// (noise_share) as after it.
struct Recovery {
	std::optional<double> before;
	std::optional<double> recovery_ms;
	std::optional<double> lowest_after_cut;
	std::optional<double> during;		// the mean rate from the cut to the restore
	std::optional<double> noise_share;	// share of the baseline's samples under the bar
};
Recovery recovery(std::span<const Sample> series, double cut_ms, double fraction,
		  double settle_ms, std::optional<double> restore_ms = std::nullopt);

// Incast convergence: each flow's cumulative bytes over time (samples in time order,
// implicitly 0 at time 0).  In bins of bin_ms, the flows still sending share the
// bottleneck; returns the start of the first of hold consecutive bins in which
// Jain's index over their rates is at least threshold (nullopt: never).
std::optional<double> convergence_ms(const std::vector<std::vector<Sample>> &flows, double bin_ms,
				     double threshold, int hold);

} // namespace mr::bench
