// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tcgprof-report: a guest's instructions between two tcgprof snapshots, by
 * kernel function.
 *
 *   tcgprof-report --start A.tsv --end B.tsv --guest-syms kallsyms --bytes N \
 *       --label "metaroce a" [--top 25]
 *
 * Prints "TCG <label> <metric> <value>" lines (instructions, and per MB of
 * --bytes) and the top kernel functions as "# <label> | tcg <share>% <insns> <function>".
 */
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include "tcgprof.hpp"

static int usage()
{
	std::cerr << "usage: tcgprof-report --start F --end F --guest-syms F --bytes N --label L "
		     "[--top N]\n";
	return 2;
}

int main(int argc, char **argv)
{
	std::map<std::string, std::string> opt;

	for (int i = 1; i + 1 < argc; i += 2)
		opt[argv[i]] = argv[i + 1];
	for (const char *k : {"--start", "--end", "--guest-syms", "--bytes", "--label"})
		if (!opt.count(k))
			return usage();
	std::ifstream fs(opt["--start"]), fe(opt["--end"]), fg(opt["--guest-syms"]);
	if (!fs || !fe || !fg) {
		std::cerr << "tcgprof-report: cannot read an input file\n";
		return 1;
	}
	tcgprof::SymbolTable syms;
	std::string err;
	if (!tcgprof::load_guest_symbols(fg, syms, &err)) {
		std::cerr << "tcgprof-report: " << err << '\n';
		return 1;
	}
	tcgprof::Report r = tcgprof::attribute(
		tcgprof::difference(tcgprof::parse_counts(fe), tcgprof::parse_counts(fs)), syms);
	double mb = std::strtod(opt["--bytes"].c_str(), nullptr) / 1e6;
	size_t top = opt.count("--top") ? std::strtoul(opt["--top"].c_str(), nullptr, 10) : 25;
	const std::string &l = opt["--label"];

	std::printf("TCG %s tcg_insns %llu\n", l.c_str(), (unsigned long long)r.total);
	std::printf("TCG %s tcg_kernel_insns %llu\n", l.c_str(), (unsigned long long)r.kernel);
	if (mb > 0) {
		std::printf("TCG %s tcg_Minsns_per_MB %.2f\n", l.c_str(), r.total / 1e6 / mb);
		std::printf("TCG %s tcg_kernel_Minsns_per_MB %.2f\n", l.c_str(), r.kernel / 1e6 / mb);
	}
	for (size_t i = 0; i < r.functions.size() && i < top; i++)
		std::printf("# %s | tcg %5.2f%% %12llu %s\n", l.c_str(),
			    r.kernel ? 100.0 * r.functions[i].second / r.kernel : 0.0,
			    (unsigned long long)r.functions[i].second, r.functions[i].first.c_str());
	return 0;
}
