// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Judges the goals on one run and renders the report's tables and plot scripts.
#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace mr::bench {

namespace {

constexpr const char *kGoodput = "goodput_MBps";
constexpr double kSettleMs = 1000;	// failure runs: setup and ramp-up, not the baseline
constexpr double kRecoveredFraction = 0.8;
// The perftest scenario's operations: scenario "pt_OP", perftest's tool "ib_OP_bw".
constexpr const char *kPerftestOps[] = {"write", "send", "read"};

std::string pt_scenario(const std::string &op)
{
	return "pt_" + op;
}

std::string pt_tool(const std::string &op)
{
	return "ib_" + op + "_bw";
}

std::optional<double> one(const Results &r, const std::string &scenario, const std::string &t,
			  const std::string &metric)
{
	auto v = r.values(scenario, t, "-", metric);
	if (v.empty())
		return std::nullopt;
	return v.front();
}

// A failure run's figure of one repetition.
std::optional<double> one_of_rep(const Results &r, const std::string &t, const std::string &metric,
				 int rep)
{
	auto v = r.values_of_rep("failure", t, "-", metric, rep);
	if (v.empty())
		return std::nullopt;
	return v.front();
}

Recovery failure_recovery(const Results &r, const std::string &t, int rep)
{
	auto cut = one_of_rep(r, t, "cut_ms", rep);
	if (!cut)
		return {};
	return recovery(r.series("failure", t, "MBps", rep), *cut, kRecoveredFraction, kSettleMs,
			one_of_rep(r, t, "restore_ms", rep));
}

std::string cell(const Results &r, const std::string &scenario, const std::string &t,
		 const std::string &param, const std::string &metric)
{
	auto v = r.values(scenario, t, param, metric);
	if (v.empty())
		return "-";
	std::string s = fmt(bench::median(v));
	if (v.size() > 1)
		s += " (" + fmt(*std::ranges::min_element(v)) + "-" +
		     fmt(*std::ranges::max_element(v)) + ")";
	return s;
}

std::string errors_cell(const Results &r, const std::string &scenario, const std::string &t,
			const std::string &param, const std::string &metric)
{
	auto v = r.values(scenario, t, param, metric);
	if (v.empty())
		return "";
	double n = r.total(scenario, t, param, metric);
	return n > 0 ? " **" + fmt(n, 0) + " failed**" : "";
}

std::string ratio_cell(std::optional<double> x)
{
	return x ? fmt(x) + "x" : "-";
}

// One row per param, per transport its median (range) and the ratio to the same
// transport at base: "| heading | t | ratio_heading | ...".
std::string ratio_table(const Results &r, const std::string &scenario, const std::string &base,
			const std::string &heading, const std::string &ratio_heading)
{
	auto ts = r.transports(scenario);
	std::ostringstream md;
	md << "| " << heading << " |";
	for (const auto &t : ts)
		md << " " << t << " | " << ratio_heading << " |";
	md << "\n|---|";
	for (size_t i = 0; i < ts.size(); i++)
		md << "---|---|";
	md << "\n";
	for (const auto &p : r.params(scenario)) {
		md << "| " << p << " |";
		for (const auto &t : ts)
			md << " " << cell(r, scenario, t, p, kGoodput)
			   << errors_cell(r, scenario, t, p, "errors") << " | "
			   << ratio_cell(ratio(r.median(scenario, t, p, kGoodput),
					       r.median(scenario, t, base, kGoodput)))
			   << " |";
		md << "\n";
	}
	return md.str();
}

} // namespace

std::string details_table(const Results &r, const std::string &scenario,
			  const std::string &param_name)
{
	struct Column {
		const char *metric;
		const char *heading;
		int decimals;
	};
	static const Column columns[] = {
		{"goodput_MBps", "MB/s", 2},
		{"cpu_ms_per_MB_a", "CPU ms/MB sender", 1},
		{"cpu_ms_per_MB_b", "CPU ms/MB receiver", 1},
		{"wire_pkts_per_MB", "wire packets/MB", 0},
		{"data_pkts_per_ack", "data packets/ACK", 2},
		{"path_inflight_mean", "in flight/path mean", 1},
		{"path_inflight_max", "in flight/path max", 0},
		{"retransmits", "retransmits", 0},
		{"rtos", "RTOs", 0},
		{"spurious_rtos", "spurious RTOs", 0},
		{"tail_probes", "tail probes", 0},
		{"path_failures", "path failures", 0},
		{"path_rebalances", "path moves", 0},
	};
	bool any = false;
	for (const auto &t : r.transports(scenario))
		for (const auto &p : r.params(scenario))
			any |= !r.values(scenario, t, p, "cpu_ms_per_MB_a").empty();
	if (!any)
		return "";
	std::ostringstream md;
	md << "| " << param_name << " | transport |";
	for (const auto &c : columns)
		md << " " << c.heading << " |";
	md << "\n|---|---|";
	for (size_t i = 0; i < std::size(columns); i++)
		md << "---|";
	md << "\n";
	for (const auto &p : r.params(scenario)) {
		for (const auto &t : r.transports(scenario)) {
			if (r.values(scenario, t, p, kGoodput).empty())
				continue;
			md << "| " << p << " | " << t << " |";
			for (const auto &c : columns)
				md << " " << fmt(r.median(scenario, t, p, c.metric), c.decimals) << " |";
			md << "\n";
		}
	}
	return md.str();
}

std::optional<double> per_qp_slope(std::optional<double> few, std::optional<double> many,
				   const std::string &n_few, const std::string &n_many)
{
	double a = std::atof(n_few.c_str()), b = std::atof(n_many.c_str());
	if (!few || !many || b <= a)
		return std::nullopt;
	return (*many - *few) / (b - a);
}

IncastRun incast_run(const Results &r, const std::string &n, int rep)
{
	IncastRun out;
	auto mbps = r.values_of_rep("incast", "metaroce", n, "flow_MBps", rep);
	auto fct = r.values_of_rep("incast", "metaroce", n, "fct_ms", rep);
	if (mbps.empty() || mbps.size() != fct.size())
		return out;
	double bytes = 0;
	for (size_t i = 0; i < mbps.size(); i++)
		bytes += mbps[i] * fct[i] * 1000;	// MB/s is bytes per us
	double longest = *std::ranges::max_element(fct);
	if (longest > 0)
		out.aggregate_MBps = bytes / (longest * 1000);
	out.jain = jain_index(mbps);
	out.p99_fct_ms = percentile(fct, 99);
	std::vector<std::vector<Sample>> flows;
	for (size_t f = 0; f < mbps.size(); f++)
		flows.push_back(r.series("incast" + n, "flow" + std::to_string(f), "bytes", rep));
	out.converge_ms = convergence_ms(flows, 500, 0.95, 3);
	return out;
}

std::string fmt(std::optional<double> value, int decimals)
{
	if (!value)
		return "-";
	char buf[64];
	std::snprintf(buf, sizeof(buf), "%.*f", decimals, *value);
	return buf;
}

// The one value a repetition has for a run's metric, if it has exactly one.
static std::optional<double> one_of_rep(const Results &r, const std::string &scenario,
					const std::string &t, const std::string &p,
					const std::string &metric, int rep)
{
	auto v = r.values_of_rep(scenario, t, p, metric, rep);
	return v.size() == 1 ? std::optional<double>(v.front()) : std::nullopt;
}

// A run's metric over its baseline's within one repetition, if both have one value.
static std::optional<double> rep_ratio(std::optional<double> v, std::optional<double> base)
{
	return v && base && *base > 0 ? std::optional<double>(*v / *base) : std::nullopt;
}

std::optional<double> paired_ratio(const Results &r, const std::string &scenario,
				   const std::string &t, const std::string &p,
				   const std::string &base_t, const std::string &base_p,
				   const std::string &metric, const std::string &base_metric)
{
	std::vector<double> ratios;
	for (int rep : r.reps(scenario)) {
		auto ratio = rep_ratio(one_of_rep(r, scenario, t, p, metric, rep),
				       one_of_rep(r, scenario, base_t, base_p,
						  base_metric.empty() ? metric : base_metric, rep));
		if (ratio)
			ratios.push_back(*ratio);
	}
	return bench::median(ratios);
}

std::string goal_value(const Goal &g)
{
	// Enough decimals that the figure shown and the verdict agree (0.9497 is missed:
	// "0.95" beside "missed" reads as a mistake).
	for (int decimals = 2; g.measured && decimals < 6; decimals++) {
		Goal shown = g;
		shown.measured = std::strtod(fmt(g.measured, decimals).c_str(), nullptr);
		if (shown.met() == g.met())
			return fmt(g.measured, decimals);
	}
	return fmt(g.measured);
}

std::vector<Goal> evaluate_goals(const Results &r, double rto_ms)
{
	std::vector<Goal> goals;
	goals.push_back({"MetaRoCE goodput at 1% loss / lossless", ">= 0.95",
			 paired_ratio(r, "loss", "metaroce", "1", "metaroce", "0", kGoodput), 0.95,
			 false, "loss on every fabric link"});
	goals.push_back({"MetaRoCE goodput at 10% loss / lossless", ">= 0.60",
			 paired_ratio(r, "loss", "metaroce", "10", "metaroce", "0", kGoodput), 0.60,
			 false, "loss on every fabric link"});
	goals.push_back({"MetaRoCE lossless goodput / rxe's", ">= 2.0",
			 paired_ratio(r, "loss", "metaroce", "0", "rxe", "0", kGoodput), 2.0,
			 false,
			 "same fabric, message size and depth; same tool (mr_ktraffic) unless the "
			 "command names rxe in BENCH_PERFTEST"});
	goals.push_back({"MetaRoCE lossless goodput / TCP's (iperf3)", ">= 0.8",
			 paired_ratio(r, "loss", "metaroce", "0", "tcp", "0", kGoodput), 0.8,
			 false,
			 "one iperf3 flow on the same fabric"});
	goals.push_back({"MetaRoCE lossless not beaten by 1% loss: 1% / lossless", "<= 1.0",
			 paired_ratio(r, "loss", "metaroce", "1", "metaroce", "0", kGoodput), 1.0,
			 true, "compare the ranges in section 1 before reading a cause into it"});
	goals.push_back({"MetaRoCE goodput at 1% loss / lossless, in one run", ">= 0.95",
			 paired_ratio(r, "lossmix", "metaroce", "1", "metaroce", "0", kGoodput),
			 0.95, false,
			 "loss switched between 0% and 1% every few seconds on one connection (section 1)"});
	goals.push_back({"64 B Write latency, lossless: MetaRoCE p50 / rxe's", "<= 1.0",
			 paired_ratio(r, "loss", "metaroce", "0", "rxe", "0", "lat_p50_us"),
			 1.0, true, "one Write in flight, mr_ktraffic for both"});
	goals.push_back({"64 B Write latency, lossless: MetaRoCE p99 / its p50", "<= 3.0",
			 paired_ratio(r, "loss", "metaroce", "0", "metaroce", "0", "lat_p99_us",
				      "lat_p50_us"),
			 3.0, true, "the two percentiles of one run"});
	goals.push_back({"CPU time per MB, lossless, sender: MetaRoCE / rxe", "<= 0.5",
			 paired_ratio(r, "loss", "metaroce", "0", "rxe", "0", "cpu_ms_per_MB_a"),
			 0.5, true, "busy share of the guest from /proc/stat, mr_ktraffic for both"});
	goals.push_back({"CPU time per MB, lossless, receiver: MetaRoCE / rxe", "<= 0.5",
			 paired_ratio(r, "loss", "metaroce", "0", "rxe", "0", "cpu_ms_per_MB_b"),
			 0.5, true, "busy share of the guest from /proc/stat, mr_ktraffic for both"});
	goals.push_back({"Data packets per ACK, lossless bulk flow", ">= 8",
			 r.median("loss", "metaroce", "0", "data_pkts_per_ack"), 8, false,
			 "the sender's data packets over the ACKs it received"});
	std::vector<double> retx_share;
	for (int rep : r.reps("loss")) {
		auto retx = r.values_of_rep("loss", "metaroce", "0", "retransmits", rep);
		auto data = r.values_of_rep("loss", "metaroce", "0", "data_packets", rep);
		if (retx.size() == 1 && data.size() == 1 && data.front() > 0)
			retx_share.push_back(retx.front() / data.front() * 100);
	}
	goals.push_back({"Retransmitted packets, lossless: % of data packets", "<= 0.1",
			 bench::median(retx_share), 0.1, true,
			 "MetaRoCE's counters of the bulk run, a fresh device per run"});
	goals.push_back({"perftest, one wire: MetaRoCE ib_write_bw lossless / rxe's", ">= 2.0",
			 paired_ratio(r, pt_scenario("write"), "metaroce", "0", "rxe", "0",
				      kGoodput),
			 2.0, false,
			 "the route on one fabric link; MetaRoCE through its rdma-core provider"});
	for (const char *op : kPerftestOps) {
		std::string tool = pt_tool(op);
		auto of_lossless = [&](const char *loss) {
			return paired_ratio(r, pt_scenario(op), "metaroce", loss, "metaroce", "0",
					    kGoodput);
		};
		goals.push_back({"perftest, one wire: MetaRoCE " + tool + " at 1% loss / lossless",
				 ">= 0.95", of_lossless("1"), 0.95, false, "loss on the one link, both ways"});
		goals.push_back({"perftest, one wire: MetaRoCE " + tool + " at 10% loss / lossless",
				 ">= 0.60", of_lossless("10"), 0.60, false, "loss on the one link, both ways"});
		goals.push_back({"perftest, one wire: MetaRoCE " + tool +
					 " lossless not beaten by 1% loss: 1% / lossless",
				 "<= 1.0", of_lossless("1"), 1.0, true, "compare the ranges in section 6"});
	}
	goals.push_back({"Multipath: MetaRoCE goodput 8 links / 1 link", ">= 6.0",
			 paired_ratio(r, "multipath", "metaroce", "8", "metaroce", "1", kGoodput),
			 6.0, false, "every link rate-limited"});
	// The median recovery over the repetitions; one that never recovered ranks
	// above every one that did (infinity), so a median among those is none.
	std::vector<double> recoveries;
	int never = 0;
	for (int rep : r.reps("failure")) {
		auto rec = failure_recovery(r, "metaroce", rep);
		if (rec.recovery_ms) {
			recoveries.push_back(*rec.recovery_ms);
		} else if (rec.before) {
			recoveries.push_back(std::numeric_limits<double>::infinity());
			never++;
		}
	}
	Goal g{"Failure: time to 80% of the pre-failure goodput, in RTOs", "<= 10", std::nullopt,
	       10, true, ""};
	size_t runs = recoveries.size();
	std::optional<double> median_ms = bench::median(recoveries);
	if (median_ms && std::isinf(*median_ms))
		median_ms.reset();
	if (median_ms && rto_ms > 0)
		g.measured = *median_ms / rto_ms;
	g.note = "RTO = " + fmt(rto_ms, 0) + " ms; ";
	if (!runs)
		g.note += "recovery not measured";
	else if (median_ms)
		g.note += "recovery " + fmt(median_ms, 0) + " ms, the median of " +
			  std::to_string(runs) + " run(s)";
	else
		g.note += "no recovery within the run in " + std::to_string(never) + " of " +
			  std::to_string(runs) + " run(s)";
	if (median_ms && never)
		g.note += ", " + std::to_string(never) + " of them never recovered";
	goals.push_back(g);
	std::vector<double> kept;
	for (int rep : r.reps("failure")) {
		auto rec = failure_recovery(r, "metaroce", rep);
		if (auto k = bench::ratio(rec.during, rec.before))
			kept.push_back(*k);
	}
	goals.push_back({"Failure: goodput while the link is cut / before the cut", ">= 0.8",
			 bench::median(kept), 0.8, false,
			 "the mean of the samples from the cut to the restore; the median of " +
				 std::to_string(kept.size()) + " run(s)"});
	auto err = r.values("failure", "metaroce", "-", "errors");
	double errors = 0;
	for (double e : err)
		errors += e;
	goals.push_back({"Failure: errors surfaced to the application", "= 0",
			 err.empty() ? std::nullopt : std::optional<double>(errors), 0, true,
			 "a failed completion or a failed data check counts, summed over the runs"});
	auto ns = r.params("incast");
	std::vector<double> jains, converge;
	for (int rep : r.reps("incast")) {
		if (ns.empty())
			break;
		auto run = incast_run(r, ns.back(), rep);
		if (run.jain)
			jains.push_back(*run.jain);
		if (run.converge_ms)
			converge.push_back(*run.converge_ms);
	}
	goals.push_back({"Incast: Jain's index over the senders' goodput", ">= 0.95",
			 bench::median(jains), 0.95, false,
			 ns.empty() ? "not measured" :
				      "N = " + ns.back() + " senders, whole-run goodput per sender; "
				      "time to Jain >= 0.95 over 500 ms bins: " +
					      (converge.size() == jains.size() && !jains.empty() ?
						       fmt(bench::median(converge), 0) + " ms" :
						       std::string("not reached in every run"))});
	return goals;
}

std::string markdown(const Results &r, const RunInfo &info)
{
	std::ostringstream md;
	auto meta = [&](const std::string &m) { return fmt(one(r, "meta", "all", m), 0); };
	md << "# MetaRoCE benchmark results\n\n";
	md << "- command: `" << info.command << "`\n";
	md << "- date: " << info.date << "\n";
	md << "- machine: " << info.machine << "\n";
	md << "- fabric: two QEMU guests, " << meta("links")
	   << " links (layer-4 ECMP) between the endpoints; Writes of " << meta("size")
	   << " B, " << meta("depth") << " in flight, " << meta("duration_s")
	   << " s per goodput run, " << meta("reps") << " repetition(s), interleaved\n";
	md << "- values: median over repetitions (range in brackets); ratios are within this "
	      "run, and a goal's ratio is the median of the ratios within each repetition. "
	      "The guests are TCG-emulated on a shared machine: absolute numbers mean "
	      "little, compare ratios only.\n";
	md << "- guests: one vCPU each under QEMU's TCG, CPU model `max` without LA57, "
	      "CX16 and ERMS (vm.sh says why; without ERMS the kernel clears a page 8 "
	      "bytes per emulated step instead of 1), Debian's 6.12 kernel\n\n";

	md << "## Method\n\n"
	      "- Topology (`vm.sh --pair --links K`): each guest keeps its endpoint "
	      "(198.18.1.1, 198.18.2.1) in its initial namespace on a veth to a router "
	      "namespace that owns the fabric NICs; the routers forward with a layer-4 "
	      "multipath hash over the links, each link its own subnet and its own wire "
	      "(a Unix stream socket between the two QEMUs: lossless, no Nagle), and "
	      "merge what they forward (GRO; for UDP, "
	      "rx-udp-gro-forwarding, which merges only packets with a UDP checksum: "
	      "MetaRoCE's, not rxe's). The endpoints' veth cuts every GSO burst into "
	      "frames (TCP's TSO and MetaRoCE's UDP GSO alike), so every transport's "
	      "frames cross the routers one by one. Loss, rate and delay are netem/tbf on "
	      "every link's egress on both sides, per frame, before any merging. "
	      "MetaRoCE, rxe and TCP all run between the same two endpoints.\n"
	      "- RDMA traffic: `mr_ktraffic` in two-host mode (kernel Verbs, RC QPs, RDMA "
	      "Writes) for MetaRoCE and rxe alike; QPN, GID, rkey and buffer addresses go "
	      "over a kernel TCP socket on the control wire (198.18.0.0/24). Every message "
	      "carries a pattern unique to the run and message; the receiver checks the last "
	      "message in each of its 64 ring slots after the run (Sends: every message). "
	      "A completion in error or a wrong byte is an application error. Latency is "
	      "the post-to-completion time of 64 B Writes with one in flight. TCP is one "
	      "iperf3 flow.\n"
	      "- Order: a repetition runs every loss level and every transport in turn; "
	      "every second repetition runs the loss levels and the transports in reverse, "
	      "so that the host's load, which drifts over minutes, does not favour the "
	      "level or transport that always ran first (loss sweep and perftest). "
	      "perftest runs one operation's loss levels back to back (a run of each "
	      "transport at each level, about a minute in all), so that its ratios "
	      "between levels compare runs seconds apart, not minutes.\n"
	      "- 1% against lossless in one run (lossmix): the sweep's ratio compares runs "
	      "a minute or more apart, and the guests are CPU-bound: goodput follows the "
	      "host's time per guest instruction, which drifts here by 20% and more within "
	      "minutes (`make profile PROFILE_TCG=1` prints it, tcg_host_ns_per_insn), far "
	      "more than 1% loss adds to the work per MB. So one MetaRoCE connection also "
	      "runs "
	   << meta("mix_slices") << " slices of " << meta("mix_slice_s")
	   << " s after a lossless first one, the loss on every link switched between 0% "
	      "and 1% at each slice's start (lossy in the odd slices, in the even ones every "
	      "second repetition); goodput per level from the progress mr_ktraffic prints "
	      "every 100 ms within the slices, the first "
	   << meta("mix_skip_ms")
	   << " ms of each left out. Drift slower than a pair of slices cancels out.\n"
	      "- Multipath: the route uses links 1..K, every link limited by tbf. Unequal: "
	      "four links, one at a quarter of the rate, one with 5% loss.\n"
	      "- Failure: once the flow runs, the link that carries most of the sender's "
	      "packets is black-holed both ways (netem 100% loss on egress, an ingress drop "
	      "filter; the carrier stays up, so routing does not react) and restored after "
	      "some seconds; goodput is sampled every 250 ms; recovery is the time from the "
	      "cut until goodput, once it fell under 80% of its pre-cut mean (before the "
	      "link was restored), is back at 80% and holds for a second; 0 if it never "
	      "fell, never if it was not back before the restore. It fell if a sample in the "
	      "second after the cut is under 80%, or a later one begins a second under it: "
	      "the guests' host makes single samples fall under 80% before a cut as often as "
	      "after it (the table's share before the cut). While cut / before: the mean "
	      "goodput from the cut to the restore over the pre-cut mean. The cut starts no process: "
	      "a tc on each guest, started with the flow, reads it from a FIFO (a process "
	      "started on these CPU-bound guests cost the transport under test 100 ms or "
	      "more). Up to 3 repetitions; the goal takes their median.\n"
	      "- Incast: N namespaces in one guest, each with its own MetaRoCE device and "
	      "address, Write a fixed amount each to one receiver whose router egress is the "
	      "shared bottleneck (tbf). rxe works in the initial namespace only and iperf3's "
	      "server takes one test at a time, so this scenario is MetaRoCE only.\n"
	      "- Many QPs: Q QPs between the same two devices, each its own kernel thread.\n"
	      "- perftest: ib_write_bw, ib_send_bw and ib_read_bw as a user runs them, "
	      "through the Verbs providers (MetaRoCE's own, rdma-core's rxe), with the route "
	      "on one fabric link: the one-wire case, where multipath cannot help.\n\n";

	md << "## Goals\n\n| goal | target | measured | verdict | note |\n|---|---|---|---|---|\n";
	for (const auto &g : evaluate_goals(r, info.rto_ms))
		md << "| " << g.what << " | " << g.target << " | " << goal_value(g) << " | "
		   << (g.measured ? (g.met() ? "met" : "**missed**") : "**not measured**")
		   << " | " << g.note << " |\n";

	auto losses = r.params("loss");
	auto lt = r.transports("loss");
	if (!losses.empty()) {
		md << "\n## 1. Loss sweep: goodput (MB/s) and its ratio to the same transport "
		      "lossless\n\n"
		   << ratio_table(r, "loss", "0", "loss %", "x 0%");
		md << "\n### Small-message latency (64 B Write, one in flight): p50 / p99 in us\n\n"
		      "| loss % |";
		std::vector<std::string> lat_t;
		for (const auto &t : lt)
			if (!r.values("loss", t, losses.front(), "lat_errors").empty())
				lat_t.push_back(t);
		for (const auto &t : lat_t)
			md << " " << t << " p50 | " << t << " p99 |";
		md << "\n|---|";
		for (size_t i = 0; i < lat_t.size(); i++)
			md << "---|---|";
		md << "\n";
		for (const auto &p : losses) {
			md << "| " << p << " |";
			for (const auto &t : lat_t)
				md << " " << fmt(r.median("loss", t, p, "lat_p50_us"), 0)
				   << errors_cell(r, "loss", t, p, "lat_errors") << " | "
				   << fmt(r.median("loss", t, p, "lat_p99_us"), 0) << " |";
			md << "\n";
		}
		if (auto t = details_table(r, "loss", "loss %"); !t.empty())
			md << "\n### What each run cost (medians over repetitions)\n\n"
			      "CPU ms per MB: the guest's busy share of the run's wall time (from "
			      "/proc/stat) times that time, per MB moved; under TCG the guests' own "
			      "clocks are biased, so compare transports, not runs. Wire packets: both "
			      "directions, every fabric link. The rest are MetaRoCE's counters of the "
			      "run (its device is made anew for each run): data packets sent per ACK "
			      "received, packets outstanding on the ACK's path as each ACK came, "
			      "retransmitted packets, retransmission timeouts, the spurious ones, "
			      "tail-loss probes.\n\n"
			   << t;
	}
	if (auto reps = r.reps("lossmix"); !reps.empty()) {
		md << "\n### 1% against lossless in one run (lossmix)\n\n"
		      "Goodput in MB/s over the slices of each level, their ratio, and the "
		      "slices' range at each level.\n\n"
		      "| repetition | lossless | 1% | 1% / lossless | lossless slices | 1% slices |"
		      "\n|---|---|---|---|---|---|\n";
		auto range = [&](const std::string &p, int rep) {
			auto v = r.values_of_rep("lossmix", "metaroce", p, "slice_MBps", rep);
			if (v.empty())
				return std::string("-");
			auto [lo, hi] = std::ranges::minmax(v);
			return fmt(lo) + "-" + fmt(hi);
		};
		for (int rep : reps) {
			auto lossless = one_of_rep(r, "lossmix", "metaroce", "0", kGoodput, rep);
			auto lossy = one_of_rep(r, "lossmix", "metaroce", "1", kGoodput, rep);
			md << "| " << rep << " | " << fmt(lossless) << " | " << fmt(lossy) << " | "
			   << fmt(rep_ratio(lossy, lossless)) << " | " << range("0", rep) << " | "
			   << range("1", rep) << " |\n";
		}
	}

	auto ks = r.params("multipath");
	auto mt = r.transports("multipath");
	if (!ks.empty()) {
		md << "\n## 2. Multipath: K links, each rate-limited to " << meta("mp_rate_mbit")
		   << " Mbit/s; goodput (MB/s) and its ratio to one link\n\n"
		   << ratio_table(r, "multipath", "1", "links", "x 1 link");
		if (!r.params("unequal").empty()) {
			md << "| 4 unequal (one 4x slower, one 5% loss), x 4 equal |";
			for (const auto &t : mt)
				md << " " << cell(r, "unequal", t, "4", kGoodput)
				   << errors_cell(r, "unequal", t, "4", "errors") << " | "
				   << ratio_cell(ratio(r.median("unequal", t, "4", kGoodput),
						       r.median("multipath", t, "4", kGoodput)))
				   << " |";
			md << "\n";
		}
		if (auto t = details_table(r, "multipath", "links"); !t.empty())
			md << "\n### What each run cost (medians over repetitions)\n\n" << t;
	}

	auto ft = r.transports("failure");
	if (!ft.empty()) {
		md << "\n## 3. Failure: the busiest of the links black-holed mid-transfer, then "
		      "restored\n\n| transport | repetition | link cut | cut at ms | restored at ms | "
		      "before MB/s | samples under 80% before the cut | lowest after cut MB/s | "
		      "while cut MB/s | while cut / before | recovery to 80% ms | errors |\n"
		      "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
		for (const auto &t : ft) {
			for (int rep : r.reps("failure")) {
				if (!one_of_rep(r, t, "cut_ms", rep))
					continue;
				auto rec = failure_recovery(r, t, rep);
				md << "| " << t << " | " << rep << " | "
				   << fmt(one_of_rep(r, t, "cut_link", rep), 0) << " | "
				   << fmt(one_of_rep(r, t, "cut_ms", rep), 0) << " | "
				   << fmt(one_of_rep(r, t, "restore_ms", rep), 0) << " | "
				   << fmt(rec.before) << " | "
				   << (rec.noise_share ? fmt(*rec.noise_share * 100, 0) + "%"
						       : std::string("-"))
				   << " | " << fmt(rec.lowest_after_cut) << " | " << fmt(rec.during)
				   << " | " << fmt(bench::ratio(rec.during, rec.before)) << " | "
				   << (rec.recovery_ms ? fmt(rec.recovery_ms, 0) : std::string("never"))
				   << " | " << fmt(one_of_rep(r, t, "errors", rep), 0) << " |\n";
			}
		}
	}
	auto incast_ns = r.params("incast");
	if (!incast_ns.empty()) {
		md << "\n## 4. Incast: N MetaRoCE senders, one receiver behind a shared "
		      "bottleneck\n\n| senders | aggregate MB/s | Jain's index | p99 flow "
		      "completion ms | time to Jain >= 0.95 ms | errors |\n|---|---|---|---|---|---|\n";
		for (const auto &n : incast_ns) {
			std::vector<double> agg, jain, fct, conv;
			for (int rep : r.reps("incast")) {
				auto run = incast_run(r, n, rep);
				if (run.aggregate_MBps)
					agg.push_back(*run.aggregate_MBps);
				if (run.jain)
					jain.push_back(*run.jain);
				if (run.p99_fct_ms)
					fct.push_back(*run.p99_fct_ms);
				if (run.converge_ms)
					conv.push_back(*run.converge_ms);
			}
			md << "| " << n << " | " << fmt(bench::median(agg)) << " | "
			   << fmt(bench::median(jain), 3) << " | " << fmt(bench::median(fct), 0)
			   << " | "
			   << (conv.empty() ? std::string("never") : fmt(bench::median(conv), 0))
			   << " | " << fmt(r.total("incast", "metaroce", n, "errors"), 0) << " |\n";
		}
	}
	auto qs = r.params("manyqp");
	if (!qs.empty()) {
		md << "\n## 5. Many QPs between one host pair: each QP Writes 4 KiB messages, 4 in "
		      "flight\n\n| transport | QPs | aggregate MB/s | Jain's index over QPs | "
		      "Slab growth at the client, KiB | errors |\n"
		      "|---|---|---|---|---|---|\n";
		for (const auto &t : r.transports("manyqp")) {
			for (const auto &q : qs) {
				std::vector<double> agg, jain;
				for (int rep : r.reps("manyqp")) {
					auto v = r.values_of_rep("manyqp", t, q, "flow_MBps", rep);
					double sum = 0;
					for (double x : v)
						sum += x;
					if (!v.empty())
						agg.push_back(sum);
					if (auto j = jain_index(v))
						jain.push_back(*j);
				}
				md << "| " << t << " | " << q << " | " << fmt(bench::median(agg)) << " | "
				   << fmt(bench::median(jain), 3) << " | "
				   << fmt(r.median("manyqp", t, q, "slab_growth_kb"), 0) << " | "
				   << fmt(r.total("manyqp", t, q, "errors"), 0) << " |\n";
			}
		}
		md << "\nKernel memory per QP, the slope of the Slab growth from " << qs.front()
		   << " to " << qs.back() << " QPs (it includes each QP's 4 x 4 KiB test "
		   << "buffers and CQ, the same for both transports):\n\n";
		for (const auto &t : r.transports("manyqp"))
			md << "- " << t << ": "
			   << fmt(per_qp_slope(r.median("manyqp", t, qs.front(), "slab_growth_kb"),
					       r.median("manyqp", t, qs.back(), "slab_growth_kb"),
					       qs.front(), qs.back()),
				  1)
			   << " KiB per QP\n";
	}
	bool any_pt = false;
	for (const char *op : kPerftestOps)
		any_pt |= !r.params(pt_scenario(op)).empty();
	if (any_pt) {
		md << "\n## 6. perftest on one wire: ib_write_bw, ib_send_bw, ib_read_bw\n\n"
		      "Messages of " << meta("size") << " B, as a user runs perftest (`-s SIZE "
		      "-D SECONDS -f MARGIN -F`, its default depth): ";
		if (one(r, "meta", "all", "pt_duration_s"))
			md << "runs of " << meta("pt_duration_s") << " s with a margin of "
			   << meta("pt_margin_s") << " s at each end, ";
		else
			md << "runs of " << meta("duration_s") << " s with perftest's default "
			      "margin of a quarter at each end, ";
		md << "between the two endpoints with the route on one fabric link and the "
		      "loss on that link; MetaRoCE through its rdma-core provider, rxe through "
		      "rdma-core's. Goodput (MB/s, 10^6 bytes) is the messages perftest counted "
		      "in its sample window over that window (the run less its margin at each "
		      "end, timed by perftest's alarms), not its \"BW average\", which divides "
		      "the same count by a time from a TSC rate fitted to gettimeofday(): on a "
		      "noisy host that fit can fail (perftest then prints 0.00) or be off; its "
		      "figure is kept in raw.tsv as perftest_MBps. Each "
		      "goodput's ratio to the same transport lossless; the last table compares "
		      "the transports.\n";
		for (const char *op : kPerftestOps) {
			if (r.params(pt_scenario(op)).empty())
				continue;
			md << "\n### " << pt_tool(op) << "\n\n"
			   << ratio_table(r, pt_scenario(op), "0", "loss %", "x 0%");
		}
		md << "\n### MetaRoCE / rxe\n\n| loss % |";
		for (const char *op : kPerftestOps)
			md << " " << pt_tool(op) << " |";
		md << "\n|---|";
		for (size_t i = 0; i < std::size(kPerftestOps); i++)
			md << "---|";
		md << "\n";
		for (const auto &p : r.params(pt_scenario(kPerftestOps[0]))) {
			md << "| " << p << " |";
			for (const char *op : kPerftestOps)
				md << " "
				   << ratio_cell(ratio(r.median(pt_scenario(op), "metaroce", p, kGoodput),
						       r.median(pt_scenario(op), "rxe", p, kGoodput)))
				   << " |";
			md << "\n";
		}
		for (const char *op : kPerftestOps)
			if (auto t = details_table(r, pt_scenario(op), "loss %"); !t.empty())
				md << "\n### What each " << pt_tool(op) << " run cost (medians; "
				   << "MetaRoCE's counters are the client's)\n\n" << t;
	}
	return md.str();
}

namespace {

std::vector<std::string> table_cells(const std::string &row)
{
	std::vector<std::string> cells;
	std::string cell;
	std::istringstream in(row.substr(1));
	while (std::getline(in, cell, '|')) {
		auto b = cell.find_first_not_of(' ');
		auto e = cell.find_last_not_of(' ');
		cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
	}
	return cells;
}

// Markdown inline code `x` is ``x`` in reStructuredText; a cell's quotes are doubled.
std::string rst_inline(std::string text, bool csv)
{
	std::string out;
	for (char c : text) {
		if (c == '`')
			out += "``";
		else if (c == '"' && csv)
			out += "\"\"";
		else
			out += c;
	}
	return out;
}

std::string csv_row(const std::vector<std::string> &cells)
{
	std::string out;
	for (size_t i = 0; i < cells.size(); i++)
		out += (i ? ", \"" : "\"") + rst_inline(cells[i], true) + "\"";
	return out;
}

} // namespace

std::string markdown_to_rst(const std::string &md, const std::string &image_dir)
{
	std::istringstream in(md);
	std::ostringstream rst;
	std::string line;
	std::vector<std::string> table;
	auto flush_table = [&] {
		if (table.size() < 2) {
			table.clear();
			return;
		}
		rst << ".. csv-table::\n   :header: " << csv_row(table_cells(table[0]))
		    << "\n\n";
		for (size_t i = 2; i < table.size(); i++)
			rst << "   " << csv_row(table_cells(table[i])) << "\n";
		rst << "\n";
		table.clear();
	};
	const char underline[] = {'=', '-', '~'};
	while (std::getline(in, line)) {
		if (line.starts_with("|")) {
			table.push_back(line);
			continue;
		}
		flush_table();
		size_t level = line.find_first_not_of('#');
		if (level > 0 && level <= 3 && level != std::string::npos && line[level] == ' ') {
			auto title = rst_inline(line.substr(level + 1), false);
			rst << title << "\n" << std::string(title.size(), underline[level - 1]) << "\n";
		} else if (line.starts_with("![")) {
			auto open = line.find("](");
			auto target = line.substr(open + 2, line.size() - open - 3);
			rst << ".. image:: " << image_dir << target << "\n   :alt: "
			    << line.substr(2, open - 2) << "\n\n";
		} else {
			rst << rst_inline(line, false) << "\n";
		}
	}
	flush_table();
	return rst.str();
}

namespace {

void plot_header(std::ofstream &gp, const std::string &png, const std::string &title,
		 const std::string &xlabel, const std::string &ylabel)
{
	gp << "set terminal pngcairo size 900,540 noenhanced\n"
	   << "set output '" << png << "'\n"
	   << "set title '" << title << "'\nset xlabel '" << xlabel << "'\nset ylabel '"
	   << ylabel << "'\nset grid\nset key outside right\nset datafile missing '-'\n";
}

// One row per param, one column per transport; x is the row's index (params as labels).
std::filesystem::path table_plot(const Results &r, const std::filesystem::path &dir,
				 const std::string &name, const std::string &scenario,
				 const std::string &metric, bool normalise, const std::string &base,
				 const std::string &title, const std::string &xlabel,
				 const std::string &ylabel)
{
	auto params = r.params(scenario);
	auto ts = r.transports(scenario);
	std::vector<std::string> used;
	for (const auto &t : ts)
		if (!r.values(scenario, t, params.front(), metric).empty())
			used.push_back(t);
	std::ofstream dat(dir / (name + ".dat"));
	dat << "# " << scenario << " " << metric << (normalise ? " / " + base : "") << "\nparam";
	for (const auto &t : used)
		dat << " " << t;
	dat << "\n";
	for (const auto &p : params) {
		dat << p;
		for (const auto &t : used) {
			auto v = r.median(scenario, t, p, metric);
			if (normalise)
				v = ratio(v, r.median(scenario, t, base, metric));
			dat << " " << fmt(v, 4);
		}
		dat << "\n";
	}
	auto gp_path = dir / (name + ".gp");
	std::ofstream gp(gp_path);
	plot_header(gp, name + ".png", title, xlabel, ylabel);
	gp << "set yrange [0:*]\nplot ";
	for (size_t i = 0; i < used.size(); i++)
		gp << (i ? ", " : "") << "'" << name << ".dat' using 0:" << i + 2
		   << ":xticlabels(1) with linespoints lw 2 title '" << used[i] << "'";
	gp << "\n";
	return gp_path;
}

} // namespace

std::vector<std::filesystem::path> write_plots(const Results &r, const std::filesystem::path &dir)
{
	std::vector<std::filesystem::path> out;
	if (!r.params("loss").empty()) {
		out.push_back(table_plot(r, dir, "loss_goodput", "loss", kGoodput, false, "",
					 "Goodput vs random loss on every link", "loss %", "MB/s"));
		out.push_back(table_plot(r, dir, "loss_ratio", "loss", kGoodput, true, "0",
					 "Goodput relative to the same transport lossless",
					 "loss %", "x lossless"));
		out.push_back(table_plot(r, dir, "loss_latency_p99", "loss", "lat_p99_us", false, "",
					 "64 B Write completion time, p99", "loss %", "us"));
	}
	if (!r.params("multipath").empty())
		out.push_back(table_plot(r, dir, "multipath", "multipath", kGoodput, true, "1",
					 "Goodput over K rate-limited links, relative to K = 1",
					 "links", "x one link"));
	for (const char *op : kPerftestOps) {
		std::string sc = pt_scenario(op), tool = pt_tool(op);
		if (r.params(sc).empty())
			continue;
		out.push_back(table_plot(r, dir, sc + "_goodput", sc, kGoodput, false, "",
					 tool + " on one wire: goodput vs loss", "loss %", "MB/s"));
		out.push_back(table_plot(r, dir, sc + "_ratio", sc, kGoodput, true, "0",
					 tool + " on one wire: goodput relative to lossless",
					 "loss %", "x lossless"));
	}
	// The plot shows the first repetition (the table has them all).
	auto ft = r.transports("failure");
	auto fail_reps = r.reps("failure");
	int rep1 = fail_reps.empty() ? 0 : fail_reps.front();
	std::vector<std::string> with_series;
	for (const auto &t : ft)
		if (!r.series("failure", t, "MBps", rep1).empty())
			with_series.push_back(t);
	if (!with_series.empty()) {
		auto gp_path = dir / "failure.gp";
		std::ofstream gp(gp_path);
		plot_header(gp, "failure.png",
			    "Goodput over time, one link cut and restored, repetition 1 "
			    "(dashed: MetaRoCE cut, dotted: restore)",
			    "ms since start", "MB/s");
		for (const auto &t : with_series) {
			std::ofstream dat(dir / ("failure_" + t + ".dat"));
			for (const auto &s : r.series("failure", t, "MBps", rep1))
				dat << s.t_ms << " " << s.value << "\n";
		}
		if (auto cut = one_of_rep(r, "metaroce", "cut_ms", rep1))
			gp << "set arrow from " << *cut << ", graph 0 to " << *cut
			   << ", graph 1 nohead dt 2\n";
		if (auto back = one_of_rep(r, "metaroce", "restore_ms", rep1))
			gp << "set arrow from " << *back << ", graph 0 to " << *back
			   << ", graph 1 nohead dt 3\n";
		gp << "plot ";
		for (size_t i = 0; i < with_series.size(); i++)
			gp << (i ? ", " : "") << "'failure_" << with_series[i]
			   << ".dat' using 1:2 with lines lw 2 title '" << with_series[i] << "'";
		gp << "\n";
		out.push_back(gp_path);
	}
	return out;
}

} // namespace mr::bench
