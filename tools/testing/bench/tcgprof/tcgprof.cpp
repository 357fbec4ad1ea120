// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "tcgprof.hpp"

#include <algorithm>
#include <sstream>

namespace tcgprof {

Counts parse_counts(std::istream &in)
{
	Counts c;
	std::string line;

	while (std::getline(in, line)) {
		std::istringstream ls(line);
		uint64_t addr = 0, n = 0;

		if (ls >> std::hex >> addr >> std::dec >> n)
			c[addr] += n;
	}
	return c;
}

void write_counts(std::ostream &out, const Counts &c)
{
	for (const auto &[addr, n] : c)
		if (n)
			out << std::hex << addr << std::dec << ' ' << n << '\n';
}

Counts difference(const Counts &end, const Counts &start)
{
	Counts d;

	for (const auto &[addr, n] : end) {
		auto it = start.find(addr);
		uint64_t before = it == start.end() ? 0 : it->second;

		if (n > before)
			d[addr] = n - before;
	}
	return d;
}

void SymbolTable::add(uint64_t addr, std::string name)
{
	syms_.push_back({addr, std::move(name)});
}

void SymbolTable::finish()
{
	std::stable_sort(syms_.begin(), syms_.end(),
			 [](const Symbol &a, const Symbol &b) { return a.addr < b.addr; });
}

const Symbol *SymbolTable::lookup(uint64_t addr) const
{
	auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
				   [](uint64_t a, const Symbol &s) { return a < s.addr; });

	return it == syms_.begin() ? nullptr : &*(it - 1);
}

bool parse_kallsyms_line(const std::string &line, KallsymsLine &out)
{
	std::istringstream ls(line);
	std::string addr, type, mod;

	if (!(ls >> addr >> type >> out.name) || type.size() != 1 || addr.empty() ||
	    addr.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
		return false;
	out.addr = std::stoull(addr, nullptr, 16);
	out.type = type[0];
	out.module.clear();
	if (ls >> mod && mod.size() > 2 && mod.front() == '[' && mod.back() == ']')
		out.module = mod.substr(1, mod.size() - 2);
	return true;
}

bool is_text_type(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

bool load_guest_symbols(std::istream &kallsyms, SymbolTable &out, std::string *err)
{
	std::string line;
	KallsymsLine k;
	size_t n = 0;

	while (std::getline(kallsyms, line)) {
		if (!parse_kallsyms_line(line, k) || !is_text_type(k.type))
			continue;
		out.add(k.addr, k.module.empty() ? k.name : k.name + " [" + k.module + "]");
		n++;
	}
	out.finish();
	if (!n)
		*err = "no text symbol in the guest's kallsyms";
	return n;
}

Report attribute(const Counts &c, const SymbolTable &syms)
{
	std::unordered_map<std::string, uint64_t> by;
	Report r;

	for (const auto &[addr, n] : c) {
		r.total += n;
		if (addr < kernel_start)
			continue;
		r.kernel += n;
		const Symbol *s = syms.lookup(addr);
		by[s ? s->name : "?"] += n;
	}
	r.functions.assign(by.begin(), by.end());
	std::sort(r.functions.begin(), r.functions.end(), [](const auto &a, const auto &b) {
		return a.second != b.second ? a.second > b.second : a.first < b.first;
	});
	return r;
}

}  // namespace tcgprof
