// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// bench-report RAW OUTDIR: results.md and gnuplot PNGs from make bench's raw result lines.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "report.hpp"

namespace {

int usage()
{
	std::cerr << "usage: bench-report --in RAW --out DIR [--rto-ms MS] [--command CMD]\n"
		     "                    [--date DATE] [--machine TEXT] [--no-plots]\n";
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	std::vector<std::string> args(argv + 1, argv + argc);
	std::filesystem::path in, out;
	mr::bench::RunInfo info;
	bool plots = true;
	for (size_t i = 0; i < args.size(); i++) {
		auto next = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : ""; };
		if (args[i] == "--in")
			in = next();
		else if (args[i] == "--out")
			out = next();
		else if (args[i] == "--rto-ms")
			info.rto_ms = std::atof(next().c_str());
		else if (args[i] == "--command")
			info.command = next();
		else if (args[i] == "--date")
			info.date = next();
		else if (args[i] == "--machine")
			info.machine = next();
		else if (args[i] == "--no-plots")
			plots = false;
		else
			return usage();
	}
	if (in.empty() || out.empty())
		return usage();

	std::ifstream raw(in);
	if (!raw) {
		std::cerr << "bench-report: cannot read " << in << "\n";
		return 1;
	}
	std::vector<std::string> errors;
	auto results = mr::bench::Results::parse(raw, errors);
	for (const auto &e : errors)
		std::cerr << "bench-report: " << in.string() << ": " << e << "\n";
	if (results.empty()) {
		std::cerr << "bench-report: no results in " << in << "\n";
		return 1;
	}
	std::filesystem::create_directories(out);
	auto md = mr::bench::markdown(results, info);
	if (plots) {
		md += "\n## Plots\n\n";
		for (const auto &gp : mr::bench::write_plots(results, out)) {
			auto cmd = "cd '" + out.string() + "' && gnuplot '" +
				   gp.filename().string() + "'";
			auto png = gp.stem().string() + ".png";
			if (std::system(cmd.c_str()) == 0)
				md += "![" + gp.stem().string() + "](" + png + ")\n";
			else
				md += "- " + png + ": gnuplot failed\n";
		}
	}
	std::ofstream(out / "results.md") << md;
	std::ofstream(out / "results.rst")
		<< ".. SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause\n\n"
		<< mr::bench::markdown_to_rst(md, "results/");
	std::cout << md;
	return errors.empty() ? 0 : 1;
}
