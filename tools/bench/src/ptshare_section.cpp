#include "pvk/bench/ptshare_section.hpp"

#include "pvk/bench/break_even.hpp"
#include "pvk/bench/format.hpp"
#include "pvk/bench/matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace pvk::bench {

// Table sharing's figures: every configuration that has a partner differing only
// in ptshare, off then on, at the largest size measured (128,000 pages in
// the default matrix), with the counters that say where the work went, per
// 128,000 pages. fork_dirty by phase (fork, child exit, parent rewrite,
// total); mprotect per RW->RO->RW cycle.
std::string ptshare_section(const Results& results) {
  constexpr double kPer = 128000;
  // Configurations keyed by what they are besides ptshare.
  auto without_ptshare = [](const Config& c) {
    Config k{c.platform, {}};
    for (const auto& s : c.switches)
      if (s.first != "ptshare") k.switches.push_back(s);
    return k.id();
  };
  std::map<std::string, std::vector<const Config*>> by_key;
  std::vector<std::string> key_order;
  for (const auto& c : results.configs) {
    if (!c.get("mmu")) continue;  // pvk only (Linux has no ptshare and no counters)
    const std::string k = without_ptshare(c);
    if (!by_key.count(k)) key_order.push_back(k);
    by_key[k].push_back(&c);
  }
  // Off before on, each pair together.
  std::vector<std::pair<const Config*, const Config*>> order;  // (config, its off partner or null)
  for (const auto& k : key_order) {
    const auto& cs = by_key[k];
    const Config* off = nullptr;
    bool has_on = false;
    for (const Config* c : cs) {
      if (c->effective("ptshare") == "off") off = c;
      if (c->effective("ptshare") == "on") has_on = true;
    }
    if (!off || !has_on) continue;
    order.emplace_back(off, nullptr);
    for (const Config* c : cs)
      if (c->effective("ptshare") == "on") order.emplace_back(c, off);
  }
  if (order.empty()) return "";

  auto pages_of = [](const Row& r) -> double {
    for (const auto& [k, v] : r.params)
      if (k == "pages" && v.is_number()) return v.get<double>();
    return 0;
  };
  auto find_row = [&](const std::string& bench, const std::string& config, double pages) -> const Row* {
    for (const auto& r : results.rows)
      if (r.bench == bench && r.config == config && pages_of(r) == pages && dense(r)) return &r;
    return nullptr;
  };
  // The sizes shown: the two largest any configuration of the pairs ran
  // (the targets' 128,000 pages, which the default matrix boots only where a
  // target needs them, and the largest of the standard list, which every
  // configuration ran).
  auto sizes_for = [&](const std::string& bench) {
    std::set<double> sizes;
    for (const auto& r : results.rows)
      if (r.bench == bench && dense(r) &&
          std::any_of(order.begin(), order.end(), [&](const auto& p) { return p.first->id() == r.config; }))
        sizes.insert(pages_of(r));
    std::vector<double> out(sizes.rbegin(), sizes.rend());
    if (out.size() > 2) out.resize(2);
    out.erase(std::remove(out.begin(), out.end(), 0.0), out.end());
    return out;
  };
  std::vector<std::string> counters{"pte_writes"};
  // L2 update counters, where the kernel has them.
  for (const char* c : {"l2_writes", "l2_updates"})
    if (std::any_of(results.rows.begin(), results.rows.end(), [&](const Row& r) { return r.field(c).has_value(); }))
      counters.emplace_back(c);
  for (const char* c : {"pt_shares", "pt_copyouts", "pt_gate_opens", "pt_pushdowns", "l2_protects", "mmu_update_entries",
                        "hypercalls", "ptwr_traps", "page_faults"})
    counters.emplace_back(c);

  std::string md = "\n## Table sharing (ptshare)\n\n"
                   "Each backend with `ptshare=off` and `=on` (table sharing). Counters per 128,000 pages (scaled when the "
                   "size differs) from the median rep of each phase; on÷off: the phase's time over the same "
                   "configuration with ptshare=off. L2 entry stores are among pte_writes (and l2_writes, where the "
                   "kernel counts them); l2_protects counts whole tables mprotected at their L2 entry, pt_gate_opens "
                   "the read-only L2 entries opened without a copy, pt_copyouts the shared tables copied.\n";
  auto head = [&](std::vector<std::string> cells) {
    for (const auto& c : counters) cells.push_back(c);
    std::string rule = "|---|";
    for (size_t i = 1; i < cells.size(); ++i) rule += i == 1 && cells[1] == "phase" ? "---|" : "---:|";
    return row_line(cells) + rule + "\n";
  };

  for (const double pages : sizes_for("fork_dirty")) {
    md += fmt::format("\n### fork_dirty at {:.0f} pages: fork, child exit, parent rewrite{}\n\n", pages,
                      pages == kPer ? "" : " (counters × 128000/pages)");
    md += head({"configuration", "phase", "time", "on÷off"});
    const std::vector<std::pair<std::string, std::string>> phases{
        {"fork", ""}, {"child exit", "exit_"}, {"parent rewrite", "rewrite_"}, {"total", "total_"}};
    for (const auto& [config, off] : order) {
      const Row* r = find_row("fork_dirty", config->id(), pages);
      if (!r) continue;
      const Row* o = off ? find_row("fork_dirty", off->id(), pages) : nullptr;
      for (const auto& [phase, prefix] : phases) {
        auto time_of = [&](const Row* row) -> std::optional<double> {
          if (!row) return std::nullopt;
          if (prefix.empty()) return row->per_op;
          return row->field(prefix + "median");
        };
        const auto t = time_of(r), ot = time_of(o);
        std::vector<std::string> cells{config->label(), phase, t ? format_ns(*t) : "—",
                                       t && ot && *ot > 0 ? format_ratio(*t / *ot) : ""};
        for (const auto& c : counters) {
          const auto v = r->field(prefix + c);
          cells.push_back(v ? format_count(*v * kPer / pages / (prefix.empty() ? r->ops : 1)) : "—");
        }
        md += row_line(cells);
      }
    }
  }
  for (const double pages : sizes_for("mprotect")) {
    md += fmt::format("\n### mprotect RW→RO→RW of {:.0f} pages, per cycle{}\n\n", pages,
                      pages == kPer ? "" : " (counters × 128000/pages)");
    md += head({"configuration", "per cycle", "on÷off"});
    for (const auto& [config, off] : order) {
      const Row* r = find_row("mprotect", config->id(), pages);
      if (!r) continue;
      const Row* o = off ? find_row("mprotect", off->id(), pages) : nullptr;
      std::vector<std::string> cells{config->label(), format_ns(r->per_op),
                                     o && o->per_op > 0 ? format_ratio(r->per_op / o->per_op) : ""};
      for (const auto& c : counters) {
        const auto v = r->field(c);
        cells.push_back(v ? format_count(*v * kPer / pages / r->ops) : "—");
      }
      md += row_line(cells);
    }
  }
  return md;
}

}  // namespace pvk::bench
