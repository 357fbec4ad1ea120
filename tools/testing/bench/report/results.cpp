// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Parsing and grouping of make bench's raw result lines.
#include "results.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace mr::bench {

namespace {

std::vector<std::string> split_tabs(const std::string &line)
{
	std::vector<std::string> fields;
	std::string field;
	std::istringstream in(line);
	while (std::getline(in, field, '\t'))
		fields.push_back(field);
	return fields;
}

template <typename T> std::optional<T> number(const std::string &text)
{
	T value{};
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
	if (ec != std::errc() || end != text.data() + text.size())
		return std::nullopt;
	return value;
}

void add_unique(std::vector<std::string> &list, const std::string &item)
{
	if (std::ranges::find(list, item) == list.end())
		list.push_back(item);
}

} // namespace

Results Results::parse(std::istream &in, std::vector<std::string> &errors)
{
	Results results;
	std::string line;
	int lineno = 0;
	while (std::getline(in, line)) {
		lineno++;
		if (!line.empty() && line.back() == '\r')
			line.pop_back();
		if (!line.starts_with("BENCH\t"))
			continue;
		auto f = split_tabs(line);
		auto rep = f.size() == 7 ? number<int>(f[4]) : std::nullopt;
		auto value = f.size() == 7 ? number<double>(f[6]) : std::nullopt;
		if (!rep && f.size() == 7 && f[4] == "-")
			rep = 0;
		if (f.size() != 7 || !rep || !value) {
			errors.push_back("line " + std::to_string(lineno) + ": malformed: " + line);
			continue;
		}
		if (!std::isfinite(*value)) {
			errors.push_back("line " + std::to_string(lineno) + ": not a finite number: " +
					 line);
			continue;
		}
		results.add({f[1], f[2], f[3], *rep, f[5], *value});
	}
	return results;
}

std::vector<double> Results::values(const std::string &scenario, const std::string &transport,
				    const std::string &param, const std::string &metric) const
{
	std::vector<double> out;
	for (const auto &r : rows_)
		if (r.scenario == scenario && r.transport == transport && r.param == param &&
		    r.metric == metric)
			out.push_back(r.value);
	return out;
}

std::vector<double> Results::values_of_rep(const std::string &scenario,
					   const std::string &transport, const std::string &param,
					   const std::string &metric, int rep) const
{
	std::vector<double> out;
	for (const auto &r : rows_)
		if (r.scenario == scenario && r.transport == transport && r.param == param &&
		    r.metric == metric && r.rep == rep)
			out.push_back(r.value);
	return out;
}

std::vector<int> Results::reps(const std::string &scenario) const
{
	std::vector<int> out;
	for (const auto &r : rows_)
		if (r.scenario == scenario && std::ranges::find(out, r.rep) == out.end())
			out.push_back(r.rep);
	std::ranges::sort(out);
	return out;
}

std::optional<double> Results::median(const std::string &scenario, const std::string &transport,
				      const std::string &param, const std::string &metric) const
{
	auto v = values(scenario, transport, param, metric);
	return bench::median(v);
}

double Results::total(const std::string &scenario, const std::string &transport,
		      const std::string &param, const std::string &metric) const
{
	double sum = 0;
	for (double v : values(scenario, transport, param, metric))
		sum += v;
	return sum;
}

std::vector<std::string> Results::params(const std::string &scenario) const
{
	std::vector<std::string> out;
	for (const auto &r : rows_)
		if (r.scenario == scenario)
			add_unique(out, r.param);
	// Numbers (loss %, links, QPs) in ascending order: repetitions may run them in
	// another order (make bench reverses every second one).
	if (std::ranges::all_of(out, [](const std::string &p) { return number<double>(p).has_value(); }))
		std::ranges::sort(out, {}, [](const std::string &p) { return *number<double>(p); });
	return out;
}

std::vector<std::string> Results::transports(const std::string &scenario) const
{
	std::vector<std::string> out;
	for (const auto &r : rows_)
		if (r.scenario == scenario)
			add_unique(out, r.transport);
	return out;
}

std::vector<Sample> Results::series(const std::string &scenario, const std::string &transport,
				    const std::string &metric, int rep) const
{
	std::vector<Sample> out;
	for (const auto &r : rows_) {
		if (r.scenario != scenario || r.transport != transport || r.metric != metric ||
		    (rep && r.rep != rep))
			continue;
		if (auto t = number<double>(r.param))
			out.push_back({*t, r.value});
	}
	std::ranges::sort(out, {}, &Sample::t_ms);
	return out;
}

} // namespace mr::bench
