// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The raw results of make bench: one measurement per line, grouped and reduced here.
#pragma once

#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "stats.hpp"

namespace mr::bench {

// "BENCH<TAB>scenario<TAB>transport<TAB>param<TAB>rep<TAB>metric<TAB>value"
struct Row {
	std::string scenario;	// loss, multipath, unequal, failure, meta
	std::string transport;	// metaroce, rxe, tcp, ...
	std::string param;	// loss %, link count, time in ms, or "-"
	int rep = 0;
	std::string metric;	// goodput_MBps, lat_p50_us, errors, MBps, cut_ms, ...
	double value = 0;
};

class Results {
public:
	// Lines that do not start with "BENCH\t" are ignored; malformed BENCH lines are
	// reported in errors and skipped.
	static Results parse(std::istream &in, std::vector<std::string> &errors);

	void add(Row row) { rows_.push_back(std::move(row)); }
	std::vector<double> values(const std::string &scenario, const std::string &transport,
				   const std::string &param, const std::string &metric) const;
	// The median over repetitions.
	std::optional<double> median(const std::string &scenario, const std::string &transport,
				     const std::string &param, const std::string &metric) const;
	// The values of one repetition.
	std::vector<double> values_of_rep(const std::string &scenario, const std::string &transport,
					  const std::string &param, const std::string &metric,
					  int rep) const;
	std::vector<int> reps(const std::string &scenario) const;
	// Sum over repetitions (e.g. error counts).
	double total(const std::string &scenario, const std::string &transport,
		     const std::string &param, const std::string &metric) const;
	// Distinct params of a scenario: by value if all are numbers, else in the order
	// first seen; transports in the order first seen.
	std::vector<std::string> params(const std::string &scenario) const;
	std::vector<std::string> transports(const std::string &scenario) const;
	// A time series: param is the time in ms (rep 0: every repetition).
	std::vector<Sample> series(const std::string &scenario, const std::string &transport,
				   const std::string &metric, int rep = 0) const;
	bool empty() const { return rows_.empty(); }

private:
	std::vector<Row> rows_;
};

} // namespace mr::bench
