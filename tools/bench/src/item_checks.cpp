#include "pvk/bench/item_checks.hpp"

#include "pvk/bench/catalog.hpp"
#include "pvk/bench/matrix.hpp"  // split_fields

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>

namespace pvk::bench {
namespace {

// The driver's limits (bench/item_options.h, bench/bench.h).
constexpr size_t kMaxOptions = 8;
constexpr size_t kMaxValues = 16;
constexpr size_t kMaxKey = 31;
constexpr uint64_t kMaxReps = 64;

bool is_number(std::string_view text) {
  return !text.empty() && text.size() <= 20 && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// "1+64+4096" as numbers; nullopt when a value is not one.
std::optional<std::vector<double>> values_of(std::string_view list) {
  std::vector<double> out;
  size_t start = 0;
  while (true) {
    const size_t plus = list.find('+', start);
    const std::string_view v = list.substr(start, plus == std::string_view::npos ? plus : plus - start);
    if (!is_number(v)) return std::nullopt;
    out.push_back(std::stod(std::string(v)));
    if (plus == std::string_view::npos) return out;
    start = plus + 1;
  }
}

// Whether every value of "w1+w2" is a word the parameter `key` of one of
// `members` lists in its defaults: a parameter of words (the driver's
// word_value, bench/bench.h) takes those and nothing else.
bool listed_words(const std::vector<std::string_view>& members, std::string_view key, std::string_view list) {
  for (const auto& m : members) {
    const BenchInfo& b = *find_benchmark(m);
    for (size_t i = 0; i < b.params.size(); ++i) {
      if (b.params[i] != key) continue;
      const std::vector<std::string> words = split_fields(b.defaults[i], '+');
      const std::vector<std::string> given = split_fields(list, '+');
      if (std::all_of(given.begin(), given.end(),
                      [&](const std::string& v) { return std::find(words.begin(), words.end(), v) != words.end(); }))
        return true;
    }
  }
  return false;
}

bool takes(const BenchInfo& b, std::string_view key) {
  return key == "reps" || std::find(b.params.begin(), b.params.end(), key) != b.params.end();
}

[[noreturn]] void refuse(const Item& item, const std::string& why) {
  throw std::invalid_argument(fmt::format("benchmark item '{}': {}", item.text(), why));
}

using Options = std::vector<std::pair<std::string, std::string>>;

// The largest value of `key` among the options, if they give it.
std::optional<double> largest_in(const Options& options, std::string_view key) {
  for (const auto& [k, v] : options)
    if (k == key) {
      const auto values = values_of(v);
      return values ? *std::max_element(values->begin(), values->end()) : 0;
    }
  return std::nullopt;
}

// The largest value a parameter takes: the item's, else the smoke suite's
// (`smoke`: the benchmark's smoke options, or none), else its default.
double largest(const BenchInfo& b, const Item& item, const Options& smoke, std::string_view key) {
  if (const auto v = largest_in(item.options, key)) return *v;
  if (const auto v = largest_in(smoke, key)) return *v;
  for (size_t i = 0; i < b.params.size(); ++i)
    if (b.params[i] == key) {
      const auto values = values_of(b.defaults[i]);
      return values ? *std::max_element(values->begin(), values->end()) : 0;
    }
  return 0;
}

double bench_memory_mib(const BenchInfo& b, const Item& item, bool smoke) {
  if (b.needs.param.empty()) return 0;
  const Options tiny = smoke ? parse_item(std::string(b.name) + ":" + std::string(b.smoke)).options : Options{};
  double bytes = largest(b, item, tiny, b.needs.param) * static_cast<double>(b.needs.bytes_per_unit);
  if (!b.needs.per.empty()) bytes *= 1 + largest(b, item, tiny, b.needs.per);
  return bytes / (1 << 20);
}

}  // namespace

void check_item(const Item& item) {
  if (const ProgramInfo* p = find_program(item.name)) {
    for (const auto& [key, value] : item.options) {
      if (std::find(p->keys.begin(), p->keys.end(), key) == p->keys.end())
        refuse(item, fmt::format("'{}' has no parameter '{}' (it takes {})", item.name, key, fmt::join(p->keys, ", ")));
      if (!is_number(value)) refuse(item, fmt::format("'{}={}': the value is not a number", key, value));
    }
    return;
  }
  const BenchInfo* single = find_benchmark(item.name);
  if (!single && !is_suite(item.name)) refuse(item, fmt::format("no benchmark or suite named '{}'", item.name));
  if (item.options.size() > kMaxOptions) refuse(item, fmt::format("more than {} options", kMaxOptions));
  const std::vector<std::string_view> members =
      single ? std::vector<std::string_view>{single->name} : suite_members(item.name);
  std::set<std::string> seen;
  for (const auto& [key, value] : item.options) {
    if (!seen.insert(key).second) refuse(item, fmt::format("option '{}' given twice", key));
    if (key.size() > kMaxKey) refuse(item, fmt::format("option '{}': the key is too long", key));
    const bool applies = std::any_of(members.begin(), members.end(),
                                     [&](std::string_view m) { return takes(*find_benchmark(m), key); });
    if (!applies) refuse(item, fmt::format("'{}' has no parameter '{}'", item.name, key));
    const auto values = values_of(value);
    if (!values && listed_words(members, key, value)) {
      if (split_fields(value, '+').size() > kMaxValues) refuse(item, fmt::format("'{}': more than {} values", key, kMaxValues));
      continue;
    }
    if (!values) refuse(item, fmt::format("'{}={}': values are numbers joined with '+'", key, value));
    if (values->size() > kMaxValues) refuse(item, fmt::format("'{}': more than {} values", key, kMaxValues));
    if (key == "reps" && (values->size() != 1 || values->front() < 1 || values->front() > kMaxReps))
      refuse(item, fmt::format("reps must be one value in 1..{}", kMaxReps));
  }
}

double item_memory_mib(const Item& item) {
  if (const BenchInfo* b = find_benchmark(item.name)) return bench_memory_mib(*b, item, false);
  if (!is_suite(item.name)) return 0;
  double most = 0;
  for (const auto& m : suite_members(item.name)) {
    const BenchInfo& b = *find_benchmark(m);
    most = std::max(most, bench_memory_mib(b, item, item.name == "smoke"));
  }
  return most;
}

double items_memory_mib(const std::vector<Item>& items) {
  double most = 0;
  for (const auto& item : items) most = std::max(most, item_memory_mib(item));
  return most;
}

}  // namespace pvk::bench
