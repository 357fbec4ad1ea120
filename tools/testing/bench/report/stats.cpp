// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Percentiles, Jain's index, ratios and recovery time for the benchmark report.
#include "stats.hpp"

#include <algorithm>
#include <cmath>

namespace mr::bench {

std::optional<double> percentile(std::span<const double> samples, double p)
{
	if (samples.empty() || p < 0 || p > 100)
		return std::nullopt;
	std::vector<double> sorted(samples.begin(), samples.end());
	std::ranges::sort(sorted);
	auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
	return sorted[std::max<size_t>(rank, 1) - 1];
}

std::optional<double> median(std::span<const double> samples)
{
	if (samples.empty())
		return std::nullopt;
	std::vector<double> sorted(samples.begin(), samples.end());
	std::ranges::sort(sorted);
	size_t n = sorted.size();
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

std::optional<double> jain_index(std::span<const double> shares)
{
	double sum = 0, squares = 0;
	for (double x : shares) {
		sum += x;
		squares += x * x;
	}
	if (shares.empty() || squares <= 0)
		return std::nullopt;
	return sum * sum / (static_cast<double>(shares.size()) * squares);
}

std::optional<double> ratio(std::optional<double> value, std::optional<double> baseline)
{
	if (!value || !baseline || *baseline <= 0)
		return std::nullopt;
	return *value / *baseline;
}

Recovery recovery(std::span<const Sample> series, double cut_ms, double fraction,
		  double settle_ms, std::optional<double> restore_ms)
{
	Recovery r;
	double sum = 0;
	int n = 0;
	// The first samples hold connection setup and slow start: they are not the baseline.
	for (const auto &s : series) {
		if (s.t_ms > settle_ms && s.t_ms <= cut_ms) {
			sum += s.value;
			n++;
		}
	}
	if (n == 0)
		return r;
	r.before = sum / n;
	const double bar = fraction * *r.before;
	int under = 0, cut_n = 0;
	double cut_sum = 0;
	for (const auto &s : series) {
		if (s.t_ms > settle_ms && s.t_ms <= cut_ms && s.value < bar)
			under++;
		if (s.t_ms <= cut_ms)
			continue;
		r.lowest_after_cut = std::min(r.lowest_after_cut.value_or(s.value), s.value);
		if (!restore_ms || s.t_ms <= *restore_ms) {
			cut_sum += s.value;
			cut_n++;
		}
	}
	r.noise_share = double(under) / n;
	if (cut_n)
		r.during = cut_sum / cut_n;
	// Whether the rate stays under (or at and above) the bar for the second after
	// sample i.
	auto holds = [&](size_t i, bool below) {
		for (size_t j = i + 1; j < series.size() && series[j].t_ms <= series[i].t_ms + 1000;
		     j++)
			if ((series[j].value < bar) != below)
				return false;
		return true;
	};
	// The cut shows (before the link is back): a sample under the bar in the second
	// after it, or one after that from which the rate stays under the bar a second.
	size_t dip = series.size();
	for (size_t i = 0; i < series.size() && dip == series.size(); i++)
		if (series[i].t_ms > cut_ms && (!restore_ms || series[i].t_ms <= *restore_ms) &&
		    series[i].value < bar && (series[i].t_ms <= cut_ms + 1000 || holds(i, true)))
			dip = i;
	if (dip == series.size()) {
		r.recovery_ms = 0;	// it never showed
		return r;
	}
	// Recovered at the first sample after the dip from which the rate holds: a sample
	// at or above the bar that is not followed by one under it for the next second.
	for (size_t i = dip + 1; i < series.size(); i++) {
		if (restore_ms && series[i].t_ms > *restore_ms)
			break;	// back because the link is
		if (series[i].value < bar)
			continue;
		if (holds(i, false)) {
			// The sample covers the interval that ends at its time stamp.
			double start = i > 0 ? series[i - 1].t_ms : cut_ms;
			r.recovery_ms = std::max(0.0, start - cut_ms);
			break;
		}
	}
	return r;
}

namespace {

// Cumulative value at time t, linear between samples, flat after the last.
double cumulative_at(const std::vector<Sample> &s, double t)
{
	double t0 = 0, v0 = 0;
	for (const auto &x : s) {
		if (x.t_ms >= t)
			return x.t_ms > t0 ? v0 + (x.value - v0) * (t - t0) / (x.t_ms - t0) : x.value;
		t0 = x.t_ms;
		v0 = x.value;
	}
	return v0;
}

} // namespace

std::optional<double> convergence_ms(const std::vector<std::vector<Sample>> &flows, double bin_ms,
				     double threshold, int hold)
{
	double end = 0;
	for (const auto &f : flows)
		if (!f.empty())
			end = std::max(end, f.back().t_ms);
	int run = 0;
	for (double t = 0; bin_ms > 0 && t + bin_ms <= end; t += bin_ms) {
		std::vector<double> rates;
		for (const auto &f : flows) {
			if (f.empty())
				continue;
			double before = cumulative_at(f, t);
			if (before >= f.back().value)
				continue;	// finished: no longer competing
			rates.push_back(cumulative_at(f, t + bin_ms) - before);
		}
		if (rates.size() < 2)
			break;
		auto j = jain_index(rates);
		run = j && *j >= threshold ? run + 1 : 0;
		if (run == hold)
			return t - (hold - 1) * bin_ms;
	}
	return std::nullopt;
}

} // namespace mr::bench
