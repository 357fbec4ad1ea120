// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The benchmark report: the goals judged on one run, Markdown tables, gnuplot input.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "results.hpp"

namespace mr::bench {

struct Goal {
	std::string what;
	std::string target;	// as the issue states it
	std::optional<double> measured;
	double bound = 0;
	bool at_most = false;	// met when measured <= bound (else >=)
	std::string note;	// how it was measured, or why it was not

	bool met() const { return measured && (at_most ? *measured <= bound : *measured >= bound); }
};

// One incast run (N senders, one repetition) reduced.
struct IncastRun {
	std::optional<double> aggregate_MBps;	// all bytes over the longest flow's time
	std::optional<double> jain;		// over the flows' goodputs
	std::optional<double> p99_fct_ms;	// flow completion time
	std::optional<double> converge_ms;	// Jain >= 0.95 over 500 ms bins, held 3 bins
};
IncastRun incast_run(const Results &results, const std::string &n, int rep);

// Growth per QP between a run with n_few QPs and one with n_many.
std::optional<double> per_qp_slope(std::optional<double> few, std::optional<double> many,
				   const std::string &n_few, const std::string &n_many);

// The median over repetitions of metric (t, p) / base_metric (base_t, base_p), each
// ratio within one repetition: a repetition's runs are minutes apart, so the
// machine's drift between repetitions cancels.  base_metric "" is metric.
std::optional<double> paired_ratio(const Results &r, const std::string &scenario,
				   const std::string &t, const std::string &p,
				   const std::string &base_t, const std::string &base_p,
				   const std::string &metric, const std::string &base_metric = "");

// A goal's measured value as the report prints it: two decimals, or as many more
// as it takes for the printed figure to get the same verdict.
std::string goal_value(const Goal &g);

// rto_ms: the RTO the failure goal counts in (32 ms, from bench.sh).
std::vector<Goal> evaluate_goals(const Results &results, double rto_ms);

struct RunInfo {
	std::string command;
	std::string date;
	std::string machine;
	double rto_ms = 0;
};

std::string markdown(const Results &results, const RunInfo &info);

// Per parameter and transport, the medians of what a run cost (CPU per MB on both
// guests, wire packets per MB, MetaRoCE's counters); "" when nothing was measured.
std::string details_table(const Results &results, const std::string &scenario,
			  const std::string &param_name);

// Writes NAME.dat and NAME.gp for each plot into dir; returns the .gp files.
std::vector<std::filesystem::path> write_plots(const Results &results,
					       const std::filesystem::path &dir);

// The same report as reStructuredText (headings, bullets, tables as csv-table, images
// under image_dir), for Documentation/.
std::string markdown_to_rst(const std::string &md, const std::string &image_dir);

// "1.23", or "-" when there is no value.
std::string fmt(std::optional<double> value, int decimals = 2);

} // namespace mr::bench
