// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Raw result lines in, grouped values and the goals out.
#include <gtest/gtest.h>

#include <initializer_list>
#include <map>
#include <sstream>

#include "report.hpp"
#include "results.hpp"

using namespace mr::bench;

namespace {

Results parse(const std::string &text, std::vector<std::string> &errors)
{
	std::istringstream in(text);
	return Results::parse(in, errors);
}

std::string line(const std::string &s, const std::string &t, const std::string &p, int rep,
		 const std::string &m, const std::string &v)
{
	return "BENCH\t" + s + "\t" + t + "\t" + p + "\t" + std::to_string(rep) + "\t" + m + "\t" +
	       v + "\n";
}

// The goals of a run by their names; a name the report lacks fails the test.
class GoalsByName {
public:
	explicit GoalsByName(const Results &r)
	{
		for (const auto &g : evaluate_goals(r, 32))
			by_[g.what] = g;
	}
	Goal operator()(const std::string &what) const
	{
		auto it = by_.find(what);
		EXPECT_TRUE(it != by_.end()) << what;
		return it == by_.end() ? Goal{} : it->second;
	}

private:
	std::map<std::string, Goal> by_;
};

} // namespace

TEST(Results, OnlyBenchLinesCountAndBadOnesAreReported)
{
	std::vector<std::string> errors;
	auto r = parse("[bench-a] boot noise\n" + line("loss", "tcp", "0", 1, "goodput_MBps", "5") +
			       "BENCH\tloss\ttcp\t0\t1\tgoodput_MBps\tfast\n"
			       "BENCH\tshort\tline\n"
			       "BENCH\tloss\ttcp\t0\t1\tgoodput_MBps\t-nan\n" +
			       line("loss", "tcp", "0", 2, "goodput_MBps", "7.5"),
		       errors);
	EXPECT_EQ(errors.size(), 3u);
	EXPECT_EQ(r.values("loss", "tcp", "0", "goodput_MBps"), (std::vector<double>{5, 7.5}));
}

TEST(Results, MedianOverRepetitionsAndFirstSeenOrder)
{
	std::vector<std::string> errors;
	auto r = parse(line("loss", "rxe", "0", 1, "goodput_MBps", "3") +
			       line("loss", "rxe", "1", 1, "goodput_MBps", "1") +
			       line("loss", "rxe", "0", 2, "goodput_MBps", "5") +
			       line("loss", "rxe", "0", 3, "goodput_MBps", "4") +
			       line("loss", "metaroce", "0", 1, "goodput_MBps", "9"),
		       errors);
	EXPECT_TRUE(errors.empty());
	EXPECT_EQ(r.median("loss", "rxe", "0", "goodput_MBps"), 4);
	EXPECT_EQ(r.params("loss"), (std::vector<std::string>{"0", "1"}));
	EXPECT_EQ(r.transports("loss"), (std::vector<std::string>{"rxe", "metaroce"}));
	EXPECT_FALSE(r.median("loss", "tcp", "0", "goodput_MBps"));
}

// make bench runs every second repetition's loss levels in reverse (host drift must not
// favour one level): the tables still list them by value, and text params as first seen.
TEST(Results, NumericParamsAreOrderedByValue)
{
	// One goodput line per param, in the order given.
	auto rows = [](const std::string &scenario, std::initializer_list<const char *> params) {
		std::string out;
		for (const char *p : params)
			out += line(scenario, "metaroce", p, 2, "goodput_MBps", "1");
		return out;
	};
	std::vector<std::string> errors;
	auto r = parse(rows("pt_write", {"10", "1", "0.5", "0"}) + rows("other", {"b", "a", "2"}),
		       errors);
	EXPECT_TRUE(errors.empty());
	EXPECT_EQ(r.params("pt_write"), (std::vector<std::string>{"0", "0.5", "1", "10"}));
	EXPECT_EQ(r.params("other"), (std::vector<std::string>{"b", "a", "2"}));
}

TEST(Results, TimeSeriesAreSortedByTime)
{
	std::vector<std::string> errors;
	auto r = parse(line("failure", "tcp", "500", 1, "MBps", "2") +
			       line("failure", "tcp", "250", 1, "MBps", "1"),
		       errors);
	auto s = r.series("failure", "tcp", "MBps");
	ASSERT_EQ(s.size(), 2u);
	EXPECT_EQ(s[0].t_ms, 250);
	EXPECT_EQ(s[1].value, 2);
}

TEST(Goals, LossGoalsAreRatiosToTheSameTransportLossless)
{
	std::vector<std::string> errors;
	auto r = parse(line("loss", "metaroce", "0", 1, "goodput_MBps", "10") +
			       line("loss", "metaroce", "1", 1, "goodput_MBps", "9.5") +
			       line("loss", "metaroce", "10", 1, "goodput_MBps", "4") +
			       line("loss", "rxe", "0", 1, "goodput_MBps", "4") +
			       line("loss", "tcp", "0", 1, "goodput_MBps", "13"),
		       errors);
	auto goals = evaluate_goals(r, 32);
	ASSERT_GE(goals.size(), 4u);
	EXPECT_DOUBLE_EQ(*goals[0].measured, 0.95);
	EXPECT_TRUE(goals[0].met());
	EXPECT_DOUBLE_EQ(*goals[1].measured, 0.4);
	EXPECT_FALSE(goals[1].met());
	EXPECT_DOUBLE_EQ(*goals[2].measured, 2.5);
	EXPECT_TRUE(goals[2].met());
	EXPECT_NEAR(*goals[3].measured, 10.0 / 13.0, 1e-12);
	EXPECT_FALSE(goals[3].met());	// >= 0.8 of one TCP flow
}

TEST(Goals, LatencyCpuAckAndRetransmitGoalsOfTheLosslessRun)
{
	std::vector<std::string> errors;
	std::string text;
	// Two repetitions; medians of two are their mean.
	for (int rep = 1; rep <= 2; rep++) {
		text += line("loss", "metaroce", "0", rep, "goodput_MBps", "10");
		text += line("loss", "metaroce", "1", rep, "goodput_MBps", rep == 1 ? "10" : "11");
		text += line("loss", "metaroce", "0", rep, "lat_p50_us", rep == 1 ? "500" : "600");
		text += line("loss", "metaroce", "0", rep, "lat_p99_us", "2000");
		text += line("loss", "rxe", "0", rep, "lat_p50_us", "500");
		text += line("loss", "metaroce", "0", rep, "cpu_ms_per_MB_a", "20");
		text += line("loss", "metaroce", "0", rep, "cpu_ms_per_MB_b", "30");
		text += line("loss", "rxe", "0", rep, "cpu_ms_per_MB_a", "40");
		text += line("loss", "rxe", "0", rep, "cpu_ms_per_MB_b", "40");
		text += line("loss", "metaroce", "0", rep, "data_pkts_per_ack", rep == 1 ? "7" : "10");
		// 0.05% and 0.2% of the data packets: the median share is 0.125%.
		text += line("loss", "metaroce", "0", rep, "retransmits", rep == 1 ? "5" : "20");
		text += line("loss", "metaroce", "0", rep, "data_packets", "10000");
	}
	auto r = parse(text, errors);
	ASSERT_TRUE(errors.empty());
	GoalsByName get(r);
	auto beaten = get("MetaRoCE lossless not beaten by 1% loss: 1% / lossless");
	EXPECT_DOUBLE_EQ(*beaten.measured, 1.05);
	EXPECT_FALSE(beaten.met());
	auto p50 = get("64 B Write latency, lossless: MetaRoCE p50 / rxe's");
	EXPECT_DOUBLE_EQ(*p50.measured, 1.1);
	EXPECT_FALSE(p50.met());
	auto tail = get("64 B Write latency, lossless: MetaRoCE p99 / its p50");
	// Per repetition: 4.0 and 3.33, so 3.67 (the ratio of the medians would be 3.64).
	EXPECT_NEAR(*tail.measured, (2000.0 / 500 + 2000.0 / 600) / 2, 1e-12);
	EXPECT_FALSE(tail.met());
	auto cpu_a = get("CPU time per MB, lossless, sender: MetaRoCE / rxe");
	EXPECT_DOUBLE_EQ(*cpu_a.measured, 0.5);
	EXPECT_TRUE(cpu_a.met());
	EXPECT_FALSE(get("CPU time per MB, lossless, receiver: MetaRoCE / rxe").met());
	auto acks = get("Data packets per ACK, lossless bulk flow");
	EXPECT_DOUBLE_EQ(*acks.measured, 8.5);
	EXPECT_TRUE(acks.met());
	auto retx = get("Retransmitted packets, lossless: % of data packets");
	EXPECT_DOUBLE_EQ(*retx.measured, 0.125);
	EXPECT_FALSE(retx.met());
}

TEST(Goals, RatiosArePairedWithinEachRepetition)
{
	std::vector<std::string> errors;
	std::string text;
	// The machine slows down between repetitions; MetaRoCE is 1.5x rxe in each.
	const char *mr[] = {"30", "15", "21"}, *rxe[] = {"20", "10", "14"};
	for (int rep = 1; rep <= 3; rep++) {
		text += line("loss", "metaroce", "0", rep, "goodput_MBps", mr[rep - 1]);
		text += line("loss", "rxe", "0", rep, "goodput_MBps", rxe[rep - 1]);
	}
	text += line("loss", "rxe", "0", 4, "goodput_MBps", "1");	// no MetaRoCE run to pair
	auto r = parse(text, errors);
	ASSERT_TRUE(errors.empty());
	EXPECT_DOUBLE_EQ(*paired_ratio(r, "loss", "metaroce", "0", "rxe", "0", "goodput_MBps"), 1.5);
	EXPECT_FALSE(paired_ratio(r, "loss", "tcp", "0", "rxe", "0", "goodput_MBps"));
}

TEST(Goals, ShownFiguresAgreeWithTheVerdict)
{
	Goal g{"x", ">= 0.95", 0.9497, 0.95, false, ""};
	EXPECT_FALSE(g.met());
	EXPECT_EQ(goal_value(g), "0.9497");
	g.measured = 0.951;
	EXPECT_EQ(goal_value(g), "0.95");
	g.measured = 1.004;
	g.at_most = true;
	g.bound = 1.0;
	EXPECT_EQ(goal_value(g), "1.004");
	g.measured.reset();
	EXPECT_EQ(goal_value(g), "-");
}

TEST(Goals, PerftestGoalsPerOperationOnOneWire)
{
	std::vector<std::string> errors;
	auto r = parse(line("pt_write", "metaroce", "0", 1, "goodput_MBps", "10") +
			       line("pt_write", "metaroce", "1", 1, "goodput_MBps", "9.6") +
			       line("pt_write", "metaroce", "10", 1, "goodput_MBps", "5") +
			       line("pt_write", "rxe", "0", 1, "goodput_MBps", "4") +
			       line("pt_send", "metaroce", "0", 1, "goodput_MBps", "8") +
			       line("pt_send", "metaroce", "1", 1, "goodput_MBps", "6") +
			       line("pt_read", "metaroce", "0", 1, "goodput_MBps", "6") +
			       line("pt_read", "metaroce", "10", 1, "goodput_MBps", "4.2"),
		       errors);
	ASSERT_TRUE(errors.empty());
	GoalsByName get(r);
	auto w = get("perftest, one wire: MetaRoCE ib_write_bw lossless / rxe's");
	EXPECT_DOUBLE_EQ(*w.measured, 2.5);
	EXPECT_TRUE(w.met());
	EXPECT_TRUE(get("perftest, one wire: MetaRoCE ib_write_bw at 1% loss / lossless").met());
	EXPECT_FALSE(get("perftest, one wire: MetaRoCE ib_write_bw at 10% loss / lossless").met());
	auto s = get("perftest, one wire: MetaRoCE ib_send_bw at 1% loss / lossless");
	EXPECT_DOUBLE_EQ(*s.measured, 0.75);
	EXPECT_FALSE(s.met());
	EXPECT_FALSE(get("perftest, one wire: MetaRoCE ib_send_bw at 10% loss / lossless").measured);
	EXPECT_FALSE(get("perftest, one wire: MetaRoCE ib_read_bw at 1% loss / lossless").measured);
	EXPECT_NEAR(*get("perftest, one wire: MetaRoCE ib_read_bw at 10% loss / lossless").measured,
		    0.7, 1e-12);

	auto md = markdown(r, {"make bench", "today", "test", 32});
	EXPECT_NE(md.find("## 6. perftest on one wire"), std::string::npos);
	EXPECT_NE(md.find("### ib_send_bw\n\n| loss % | metaroce | x 0% |\n|---|---|---|\n"
			  "| 0 | 8.00 | 1.00x |\n| 1 | 6.00 | 0.75x |\n"),
		  std::string::npos)
		<< md;
	// MetaRoCE / rxe per operation: only Writes have an rxe figure here.
	EXPECT_NE(md.find("| 0 | 2.50x | - | - |"), std::string::npos) << md;
}

TEST(Report, PerftestMethodNamesItsRunsAndMargin)
{
	std::vector<std::string> errors;
	const std::string run = line("pt_write", "metaroce", "0", 1, "goodput_MBps", "10");
	auto r = parse(run + "BENCH\tmeta\tall\t-\t-\tpt_duration_s\t8\n"
			     "BENCH\tmeta\tall\t-\t-\tpt_margin_s\t1\n",
		       errors);
	ASSERT_TRUE(errors.empty());
	auto md = markdown(r, {"make bench", "today", "test", 32});
	EXPECT_NE(md.find("runs of 8 s with a margin of 1 s at each end"), std::string::npos) << md;
	// A raw.tsv from before pt_duration_s: perftest's default margin, a quarter.
	r = parse(run + "BENCH\tmeta\tall\t-\t-\tduration_s\t6\n", errors);
	ASSERT_TRUE(errors.empty());
	md = markdown(r, {"make bench", "today", "test", 32});
	EXPECT_NE(md.find("runs of 6 s with perftest's default margin of a quarter"),
		  std::string::npos) << md;
}

TEST(Goals, UnmeasuredGoalsAreNeverMet)
{
	std::vector<std::string> errors;
	auto r = parse(line("loss", "tcp", "0", 1, "goodput_MBps", "1"), errors);
	for (const auto &g : evaluate_goals(r, 32)) {
		EXPECT_FALSE(g.measured) << g.what;
		EXPECT_FALSE(g.met()) << g.what;
	}
}

TEST(Goals, FailureRecoveryCountsInRtosAndErrorsMustBeZero)
{
	std::string text = line("failure", "metaroce", "-", 1, "cut_ms", "2000") +
			   line("failure", "metaroce", "-", 1, "errors", "0");
	for (int t = 1250; t <= 4000; t += 250)
		text += line("failure", "metaroce", std::to_string(t), 1, "MBps",
			     t <= 2000 ? "10" : t <= 2250 ? "0" : "10");
	std::vector<std::string> errors;
	auto goals = evaluate_goals(parse(text, errors), 32);
	const Goal *recovery = nullptr, *app_errors = nullptr;
	for (const auto &g : goals) {
		if (g.what.starts_with("Failure: time"))
			recovery = &g;
		if (g.what.starts_with("Failure: errors"))
			app_errors = &g;
	}
	ASSERT_TRUE(recovery && app_errors);
	// Back in the interval 2250-2500: 250 ms after the cut, 7.8 RTOs of 32 ms.
	EXPECT_NEAR(*recovery->measured, 250.0 / 32.0, 1e-12);
	EXPECT_TRUE(recovery->met());
	EXPECT_TRUE(app_errors->met());
}

TEST(Goals, FailureRecoveryIsTheMedianOverRepetitions)
{
	// Three repetitions: back 250 ms after the cut, 750 ms after it, and never
	// (the first sample at the bar ends the interval the recovery counts to).
	std::string text;
	const int back_ms[] = {2500, 3000, 0};
	for (int rep = 1; rep <= 3; rep++) {
		text += line("failure", "metaroce", "-", rep, "cut_ms", "2000");
		text += line("failure", "metaroce", "-", rep, "errors", rep == 2 ? "1" : "0");
		for (int t = 1250; t <= 4000; t += 250) {
			bool down = t > 2000 && (!back_ms[rep - 1] || t < back_ms[rep - 1]);
			text += line("failure", "metaroce", std::to_string(t), rep, "MBps",
				     down ? "1" : "10");
		}
	}
	std::vector<std::string> errors;
	auto r = parse(text, errors);
	ASSERT_TRUE(errors.empty());
	GoalsByName get(r);
	Goal rec = get("Failure: time to 80% of the pre-failure goodput, in RTOs");
	ASSERT_TRUE(rec.measured);
	EXPECT_NEAR(*rec.measured, 750.0 / 32.0, 1e-12) << rec.note;
	EXPECT_NE(rec.note.find("1 of them never recovered"), std::string::npos) << rec.note;
	Goal app = get("Failure: errors surfaced to the application");
	EXPECT_DOUBLE_EQ(*app.measured, 1);	// summed over the repetitions
	EXPECT_FALSE(app.met());

	// Two of three never back: the median is "never", so nothing is measured.
	std::string text2;
	for (int rep = 1; rep <= 3; rep++) {
		text2 += line("failure", "metaroce", "-", rep, "cut_ms", "2000");
		for (int t = 1250; t <= 4000; t += 250)
			text2 += line("failure", "metaroce", std::to_string(t), rep, "MBps",
				      t > 2000 && rep > 1 ? "1" : "10");
	}
	for (const auto &g : evaluate_goals(parse(text2, errors), 32)) {
		if (!g.what.starts_with("Failure: time"))
			continue;
		EXPECT_FALSE(g.measured);
		EXPECT_NE(g.note.find("no recovery within the run in 2 of 3"), std::string::npos)
			<< g.note;
	}
	auto md = markdown(r, {"make bench", "today", "test", 32});
	EXPECT_NE(md.find("| metaroce | 3 | - | 2000 | - | 10.00 | 0% | 1.00 | 1.00 | 0.10 | "
			  "never | 0 |"),
		  std::string::npos)
		<< md;
	// while cut / before, over the 8 samples 2250..4000: 0.8875 (1 MB/s in one),
	// 0.6625 (in three) and 0.10; the median misses 0.8
	Goal kept = get("Failure: goodput while the link is cut / before the cut");
	ASSERT_TRUE(kept.measured);
	EXPECT_NEAR(*kept.measured, (3 * 1.0 + 5 * 10.0) / 8 / 10, 1e-12) << kept.note;
	EXPECT_FALSE(kept.met());
}

// The one-run comparison (lossmix): the goal pairs each repetition's two levels, and
// the section lists each repetition's goodput, ratio and slice range per level.
TEST(Goals, LossmixComparesTheLevelsOfOneRun)
{
	std::vector<std::string> errors;
	std::string text;
	const char *lossless[] = {"40", "30", "20"}, *lossy[] = {"38", "29.1", "21"};
	for (int rep = 1; rep <= 3; rep++) {
		text += line("lossmix", "metaroce", "0", rep, "goodput_MBps", lossless[rep - 1]);
		text += line("lossmix", "metaroce", "1", rep, "goodput_MBps", lossy[rep - 1]);
		text += line("lossmix", "metaroce", "0", rep, "slice_MBps", "19.5");
		text += line("lossmix", "metaroce", "0", rep, "slice_MBps", "41");
		text += line("lossmix", "metaroce", "1", rep, "slice_MBps", "37");
	}
	// the sweep's own runs do not enter it
	text += line("loss", "metaroce", "0", 1, "goodput_MBps", "50");
	text += line("loss", "metaroce", "1", 1, "goodput_MBps", "25");
	auto r = parse(text, errors);
	ASSERT_TRUE(errors.empty());
	GoalsByName get(r);
	Goal g = get("MetaRoCE goodput at 1% loss / lossless, in one run");
	ASSERT_TRUE(g.measured);
	EXPECT_DOUBLE_EQ(*g.measured, 29.1 / 30);	// median of 0.95, 0.97, 1.05
	EXPECT_TRUE(g.met());
	EXPECT_DOUBLE_EQ(*get("MetaRoCE goodput at 1% loss / lossless").measured, 0.5);
	auto md = markdown(r, {"make bench", "today", "test", 32});
	EXPECT_NE(md.find("| 1 | 40.00 | 38.00 | 0.95 | 19.50-41.00 | 37.00-37.00 |"),
		  std::string::npos)
		<< md;
	EXPECT_NE(md.find("| 3 | 20.00 | 21.00 | 1.05 |"), std::string::npos) << md;
	// Without the scenario, no section and the goal is not measured.
	auto bare = parse(line("loss", "metaroce", "0", 1, "goodput_MBps", "10"), errors);
	EXPECT_EQ(markdown(bare, {"make bench", "today", "test", 32}).find("(lossmix)\n\nGoodput"),
		  std::string::npos);
	EXPECT_FALSE(GoalsByName(bare)("MetaRoCE goodput at 1% loss / lossless, in one run").measured);
}

TEST(Report, MarkdownNamesEveryGoalVerdict)
{
	std::vector<std::string> errors;
	auto r = parse(line("loss", "metaroce", "0", 1, "goodput_MBps", "10") +
			       line("loss", "metaroce", "1", 1, "goodput_MBps", "9.5"),
		       errors);
	auto md = markdown(r, {"make bench", "today", "test", 32});
	EXPECT_NE(md.find("| MetaRoCE goodput at 1% loss / lossless | >= 0.95 | 0.95 | met |"),
		  std::string::npos);
	EXPECT_NE(md.find("**not measured**"), std::string::npos);
	EXPECT_NE(md.find("| 1 | 9.50 | 0.95x |"), std::string::npos);
}

TEST(Report, RunCostsAreMediansPerTransportAndMissingOnesAreDashes)
{
	std::vector<std::string> errors;
	std::string text;
	const char *mr[] = {"10", "12", "11"};
	for (int rep = 1; rep <= 3; rep++) {
		text += line("loss", "metaroce", "0", rep, "goodput_MBps", mr[rep - 1]);
		text += line("loss", "metaroce", "0", rep, "cpu_ms_per_MB_a", std::to_string(40 + rep));
		text += line("loss", "metaroce", "0", rep, "rtos", std::to_string(rep * 2));
		text += line("loss", "tcp", "0", rep, "goodput_MBps", "20");
		text += line("loss", "tcp", "0", rep, "cpu_ms_per_MB_a", "30");
	}
	auto r = parse(text, errors);
	ASSERT_TRUE(errors.empty());
	auto t = details_table(r, "loss", "loss %");
	EXPECT_EQ(t.find("| loss % | transport | MB/s | CPU ms/MB sender |"), 0u) << t;
	// Medians: goodput 11, CPU 42.0, RTOs 4; TCP has no engine counters.
	EXPECT_NE(t.find("| 0 | metaroce | 11.00 | 42.0 | - | - | - | - | - | - | 4 | - | - | - | - |"),
		  std::string::npos)
		<< t;
	EXPECT_NE(t.find("| 0 | tcp | 20.00 | 30.0 | - |"), std::string::npos) << t;
	EXPECT_NE(markdown(r, {"make bench", "today", "test", 32}).find("What each run cost"),
		  std::string::npos);
	// Without cost lines there is no table.
	auto bare = parse(line("loss", "metaroce", "0", 1, "goodput_MBps", "10"), errors);
	EXPECT_EQ(details_table(bare, "loss", "loss %"), "");
}

TEST(Incast, AggregateJainAndTailFromPerFlowLines)
{
	// Two senders: 2 MB/s for 1000 ms (2 MB) and 1 MB/s for 2000 ms (2 MB).
	std::vector<std::string> errors;
	auto r = parse(line("incast", "metaroce", "2", 1, "flow_MBps", "2") +
			       line("incast", "metaroce", "2", 1, "fct_ms", "1000") +
			       line("incast", "metaroce", "2", 1, "flow_MBps", "1") +
			       line("incast", "metaroce", "2", 1, "fct_ms", "2000"),
		       errors);
	auto run = incast_run(r, "2", 1);
	EXPECT_DOUBLE_EQ(*run.aggregate_MBps, 2.0);	// 4 MB in 2 s
	EXPECT_DOUBLE_EQ(*run.jain, 9.0 / 10.0);
	EXPECT_EQ(run.p99_fct_ms, 2000);
	EXPECT_FALSE(run.converge_ms);	// no progress series
	auto goals = evaluate_goals(r, 32);
	EXPECT_DOUBLE_EQ(*goals.back().measured, 0.9);
	EXPECT_FALSE(goals.back().met());
}

TEST(Rst, HeadingsTablesImagesAndCode)
{
	auto rst = markdown_to_rst("# Title\n\n- command: `make bench`\n\n| a | b \"x\" |\n|---|---|\n"
				   "| 1 | **2** |\n\n![plot](p.png)\n",
				   "results/");
	EXPECT_EQ(rst, "Title\n=====\n\n- command: ``make bench``\n\n.. csv-table::\n"
		       "   :header: \"a\", \"b \"\"x\"\"\"\n\n   \"1\", \"**2**\"\n\n\n"
		       ".. image:: results/p.png\n   :alt: plot\n\n");
}

TEST(ManyQps, MemoryPerQpIsTheSlopeBetweenFewAndMany)
{
	EXPECT_DOUBLE_EQ(*per_qp_slope(1000.0, 2500.0, "1", "16"), 100.0);
	EXPECT_FALSE(per_qp_slope(1000.0, std::nullopt, "1", "16"));
	EXPECT_FALSE(per_qp_slope(1000.0, 900.0, "4", "4"));
}
