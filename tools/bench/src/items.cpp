#include "pvk/bench/items.hpp"

#include "pvk/bench/catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace pvk::bench {

std::string Item::text() const {
  std::string out = name;
  for (const auto& [key, value] : options) out += fmt::format(":{}={}", key, value);
  return out;
}

Item parse_item(std::string_view text) {
  if (text.find(',') != std::string_view::npos)
    throw std::invalid_argument(fmt::format("benchmark item '{}': one item per entry (',' separates items)", text));
  Item item;
  size_t at = text.find(':');
  item.name = std::string(text.substr(0, at));
  if (item.name.empty()) throw std::invalid_argument(fmt::format("benchmark item '{}': no name", text));
  while (at != std::string_view::npos) {
    const size_t next = text.find(':', at + 1);
    const std::string_view option = text.substr(at + 1, next == std::string_view::npos ? next : next - at - 1);
    const size_t eq = option.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == option.size())
      throw std::invalid_argument(
          fmt::format("benchmark item '{}': option '{}' is not key=value", text, option));
    item.options.emplace_back(std::string(option.substr(0, eq)), std::string(option.substr(eq + 1)));
    at = next;
  }
  return item;
}

std::vector<Item> parse_items(std::string_view list) {
  std::vector<Item> items;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    if (end > start) items.push_back(parse_item(list.substr(start, end - start)));
    start = end + 1;
  }
  return items;
}

std::string join_items(const std::vector<Item>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ',';
    out += item.text();
  }
  return out;
}

std::vector<Item> restrict_to_suite(const std::vector<Item>& items, std::string_view suite) {
  const std::vector<std::string_view> members = suite_members(suite);
  auto some_member_takes = [&](std::string_view key) {
    if (key == "reps") return true;
    return std::any_of(members.begin(), members.end(), [&](std::string_view m) {
      const BenchInfo* b = find_benchmark(m);
      return b && std::find(b->params.begin(), b->params.end(), key) != b->params.end();
    });
  };
  std::vector<Item> out;
  for (const auto& item : items) {
    if (item.name == suite) {
      out.push_back(item);
    } else if (item.name == "all") {
      Item narrowed{std::string(suite), {}};
      for (const auto& option : item.options)
        if (some_member_takes(option.first)) narrowed.options.push_back(option);
      out.push_back(std::move(narrowed));
    } else if (const BenchInfo* b = find_benchmark(item.name); b && b->suite == suite) {
      out.push_back(item);
    }
  }
  return out;
}

std::vector<Item> restrict_to_benches(const std::vector<Item>& items, const std::vector<std::string>& names) {
  std::vector<Item> out;
  for (const auto& item : items) {
    if (std::find(names.begin(), names.end(), item.name) != names.end()) {
      out.push_back(item);
      continue;
    }
    if (item.name == "smoke" || !is_suite(item.name)) continue;
    const std::vector<std::string_view> members = suite_members(item.name);
    for (const auto& name : names) {
      if (std::find(members.begin(), members.end(), name) == members.end()) continue;
      const BenchInfo* b = find_benchmark(name);
      Item narrowed{name, {}};
      for (const auto& option : item.options)
        if (option.first == "reps" || (b && std::find(b->params.begin(), b->params.end(), option.first) != b->params.end()))
          narrowed.options.push_back(option);
      out.push_back(std::move(narrowed));
    }
  }
  return out;
}

std::vector<std::string> pack_items(const std::vector<Item>& items, size_t max_chars, size_t max_items) {
  std::vector<std::string> values;
  std::string current;
  size_t count = 0;
  for (const auto& item : items) {
    const std::string text = item.text();
    if (text.size() > max_chars)
      throw std::invalid_argument(fmt::format("benchmark item '{}' is longer than bench= allows ({} characters)",
                                              text, max_chars));
    if (count > 0 && (current.size() + 1 + text.size() > max_chars || count == max_items)) {
      values.push_back(std::move(current));
      current.clear();
      count = 0;
    }
    if (count > 0) current += ',';
    current += text;
    ++count;
  }
  if (count > 0) values.push_back(std::move(current));
  return values;
}

}  // namespace pvk::bench
