// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <gtest/gtest.h>

#include <sstream>

#include "tcgprof.hpp"

using namespace tcgprof;

TEST(Tcgprof, CountsRoundTripAndDifference)
{
	Counts a{{0xffffffff81000010ULL, 100}, {0x400000, 7}};
	std::stringstream s;

	write_counts(s, a);
	Counts b = parse_counts(s);
	EXPECT_EQ(b, a);

	Counts later{{0xffffffff81000010ULL, 160}, {0x400000, 7}, {0xffffffffc0001000ULL, 5}};
	Counts d = difference(later, a);
	EXPECT_EQ(d.size(), 2u);
	EXPECT_EQ(d[0xffffffff81000010ULL], 60u);
	EXPECT_EQ(d[0xffffffffc0001000ULL], 5u);
	EXPECT_FALSE(d.count(0x400000));
}

TEST(Tcgprof, ParsesKallsymsLines)
{
	KallsymsLine k;

	ASSERT_TRUE(parse_kallsyms_line("ffffffffc0a01000 t metaroce_conn_tx_work\t[metaroce]", k));
	EXPECT_EQ(k.addr, 0xffffffffc0a01000ULL);
	EXPECT_EQ(k.type, 't');
	EXPECT_EQ(k.name, "metaroce_conn_tx_work");
	EXPECT_EQ(k.module, "metaroce");
	ASSERT_TRUE(parse_kallsyms_line("ffffffff81000000 T _text", k));
	EXPECT_TRUE(k.module.empty());
	EXPECT_FALSE(parse_kallsyms_line("garbage", k));
	EXPECT_FALSE(parse_kallsyms_line("zz T name", k));
}

TEST(Tcgprof, AttributesKernelInstructionsToGuestFunctions)
{
	std::stringstream guest("ffffffff83000000 T _text\n"
				"ffffffff83000100 T memcpy\n"
				"ffffffff83000200 t csum_partial\n"
				"ffffffff83000300 D some_data\n"
				"ffffffffc0200000 t metaroce_rx\t[metaroce]\n"
				"ffffffffc0200400 t metaroce_tx\t[metaroce]\n");
	SymbolTable syms;
	std::string err;

	ASSERT_TRUE(load_guest_symbols(guest, syms, &err)) << err;
	EXPECT_EQ(syms.size(), 5u);	/* the data symbol is not text */
	ASSERT_NE(syms.lookup(0xffffffff83000150ULL), nullptr);
	EXPECT_EQ(syms.lookup(0xffffffff83000150ULL)->name, "memcpy");
	EXPECT_EQ(syms.lookup(0xffffffff83000350ULL)->name, "csum_partial");
	EXPECT_EQ(syms.lookup(0xffffffffc0200010ULL)->name, "metaroce_rx [metaroce]");
	EXPECT_EQ(syms.lookup(0xffffffffc0200400ULL)->name, "metaroce_tx [metaroce]");
	EXPECT_EQ(syms.lookup(0xffffffff80000000ULL), nullptr);

	Counts c{{0xffffffff83000150ULL, 30}, {0xffffffff83000160ULL, 10},
		 {0xffffffffc0200404ULL, 60}, {0xffffffff80000000ULL, 5}, {0x401000, 1000}};
	Report r = attribute(c, syms);
	EXPECT_EQ(r.total, 1105u);
	EXPECT_EQ(r.kernel, 105u);
	ASSERT_EQ(r.functions.size(), 3u);
	EXPECT_EQ(r.functions[0].first, "metaroce_tx [metaroce]");
	EXPECT_EQ(r.functions[0].second, 60u);
	EXPECT_EQ(r.functions[1].first, "memcpy");
	EXPECT_EQ(r.functions[1].second, 40u);
	EXPECT_EQ(r.functions[2].first, "?");
	EXPECT_EQ(r.functions[2].second, 5u);
}

TEST(Tcgprof, NoTextSymbolIsAnError)
{
	std::stringstream guest("ffffffff83000300 D some_data\n");
	SymbolTable syms;
	std::string err;

	EXPECT_FALSE(load_guest_symbols(guest, syms, &err));
	EXPECT_FALSE(err.empty());
}
