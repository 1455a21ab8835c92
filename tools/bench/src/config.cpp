// One configuration of the matrix: its platform and boot switches, as an id
// (what results.json keys rows by), a label (what tables print) and a kernel
// command line; and --set's axes.
#include "pvk/bench/matrix.hpp"

#include "pvk/bench/catalog.hpp"
#include "pvk/backends.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace pvk::bench {

std::vector<std::string> split_fields(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    out.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

namespace {

// mmu= first, then the others by name: one order for ids and labels.
bool switch_order(const std::pair<std::string, std::string>& a, const std::pair<std::string, std::string>& b) {
  if ((a.first == "mmu") != (b.first == "mmu")) return a.first == "mmu";
  return a.first < b.first;
}

std::string switches_text(const Switches& switches, bool kernel_only) {
  std::string out;
  for (const auto& [key, value] : switches) {
    if (kernel_only && is_harness_key(key)) continue;
    if (!out.empty()) out += ' ';
    out += key + "=" + value;
  }
  return out;
}

}  // namespace

std::string Config::cmdline() const { return switches_text(switches, /*kernel_only=*/true); }

std::string Config::id() const {
  const std::string line = switches_text(switches, /*kernel_only=*/false);
  return line.empty() ? platform : platform + " " + line;
}

unsigned Config::cpus() const {
  const std::string n = effective(kSmpKey).value_or("1");
  return static_cast<unsigned>(std::max(1ul, std::stoul(n)));
}

std::string Config::label() const {
  std::string out = platform;
  for (const auto& [key, value] : switches) {
    if (key == "mmu") {
      // Natively the backend is implied by the platform.
      if (!(platform == "native" && value == default_backend(Platform::native))) out += "/" + value;
    } else {
      out += " " + key + "=" + value;
    }
  }
  return out;
}

std::optional<std::string> Config::get(std::string_view key) const {
  if (key == "platform") return platform;
  for (const auto& [k, v] : switches)
    if (k == key) return v;
  return std::nullopt;
}

std::optional<std::string> Config::effective(std::string_view key) const {
  if (auto v = get(key)) return v;
  if (auto d = switch_default(key)) return std::string(*d);
  return std::nullopt;
}

std::vector<std::string> Config::keys() const {
  std::vector<std::string> out{"platform"};
  for (const auto& s : switches) out.push_back(s.first);
  return out;
}

Config make_config(std::string platform, Switches switches) {
  std::stable_sort(switches.begin(), switches.end(), switch_order);
  for (size_t i = 1; i < switches.size(); ++i)
    if (switches[i].first == switches[i - 1].first)
      throw std::invalid_argument(fmt::format("boot switch {}= given twice", switches[i].first));
  for (const auto& [key, value] : switches)
    if (key == kSmpKey) {
      const bool digits = !value.empty() && value.size() <= 2 && value.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || std::stoul(value) < 1 || std::stoul(value) > kMaxSmp)
        throw std::invalid_argument(fmt::format("{}={}: CPUs are a number from 1 to {}", key, value, kMaxSmp));
    }
  return Config{std::move(platform), std::move(switches)};
}

Config config_from_id(std::string_view id) {
  const std::vector<std::string> words = split_fields(id, ' ');
  Switches switches;
  for (size_t i = 1; i < words.size(); ++i) {
    if (words[i].empty()) continue;
    const size_t eq = words[i].find('=');
    if (eq == std::string::npos) throw std::invalid_argument(fmt::format("configuration '{}': '{}' is not key=value", id, words[i]));
    switches.emplace_back(words[i].substr(0, eq), words[i].substr(eq + 1));
  }
  return make_config(words.at(0), std::move(switches));
}

SetAxis parse_set(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    throw std::invalid_argument(fmt::format("--set '{}': expected key=value[,value...]", text));
  SetAxis axis{std::string(text.substr(0, eq)), split_fields(text.substr(eq + 1), ',')};
  if (axis.key == "mmu") throw std::invalid_argument("--set mmu=...: use --mmu");
  if (axis.key == "platform") throw std::invalid_argument("--set platform=...: use --platforms");
  if (axis.key == "bench") throw std::invalid_argument("--set bench=...: use --bench");
  for (const auto& v : axis.values) {
    if (v.empty()) throw std::invalid_argument(fmt::format("--set '{}': empty value", text));
    if (v.find_first_of(" \t") != std::string::npos)
      throw std::invalid_argument(fmt::format("--set '{}': blanks in a value", text));
  }
  return axis;
}

}  // namespace pvk::bench
