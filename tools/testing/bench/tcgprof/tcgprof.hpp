// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tcgprof: where a TCG guest's instructions go.  The plugin (tcgprof_plugin.cpp)
 * counts, for each translated block's guest address, the instructions executed
 * there and writes snapshots of those counts; this library takes the difference
 * of two snapshots and attributes it to the guest's functions.
 */
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

namespace tcgprof {

/* Guest virtual address of a block -> instructions executed there. */
using Counts = std::unordered_map<uint64_t, uint64_t>;

/* The first address of x86-64's kernel half. */
inline constexpr uint64_t kernel_start = 0xffff800000000000ULL;

/* One snapshot as the plugin writes it: "<hex address> <decimal count>" per line. */
Counts parse_counts(std::istream &in);
void write_counts(std::ostream &out, const Counts &c);

/* What ran between two snapshots (a counter that went back is taken as 0). */
Counts difference(const Counts &end, const Counts &start);

struct Symbol {
	uint64_t addr;
	std::string name;	/* with " [module]" for a module's */
};

/* Text symbols by address; an address belongs to the last symbol at or below it. */
class SymbolTable {
public:
	void add(uint64_t addr, std::string name);
	/* Sorts; call once after the last add(). */
	void finish();
	/* nullptr: below every symbol. */
	const Symbol *lookup(uint64_t addr) const;
	size_t size() const { return syms_.size(); }

private:
	std::vector<Symbol> syms_;
};

/* One line of /proc/kallsyms. */
struct KallsymsLine {
	uint64_t addr = 0;
	char type = 0;
	std::string name;
	std::string module;	/* empty: vmlinux */
};

bool parse_kallsyms_line(const std::string &line, KallsymsLine &out);
bool is_text_type(char type);

/*
 * A guest's text symbols from its /proc/kallsyms (vmlinux's and its modules'):
 * the guest's own, since KASLR moves its image and its kernel need not be
 * the host's.  False with why in *err if there is no text symbol at all.
 */
bool load_guest_symbols(std::istream &kallsyms, SymbolTable &out, std::string *err);

struct Report {
	uint64_t total = 0;	/* every instruction */
	uint64_t kernel = 0;	/* in the kernel half */
	std::vector<std::pair<std::string, uint64_t>> functions;	/* kernel's, most first */
};

/* Kernel instructions by function ("?" for an address below every symbol). */
Report attribute(const Counts &c, const SymbolTable &syms);

}  // namespace tcgprof
