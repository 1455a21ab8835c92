#include "pvk/bench/seeds.hpp"

#include "pvk/bench/experiments.hpp"
#include "pvk/bench/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace pvk::bench {
namespace {

using Claim = SeedFigure::Claim;

// Within this distance of 1 a ratio counts as "no difference" even when its
// interval excludes 1 (the A/A goal: 1.00 ± 0.02).
constexpr double kSame = 0.02;

std::string p_text(double p) { return p < 0.001 ? "<0.001" : fmt::format("{:.3f}", p); }

std::vector<const Ratio*> ratios_for(const SeedFigure& f, const std::vector<Ratio>& ratios) {
  std::vector<const Ratio*> out;
  if (f.ratio.empty()) return out;
  for (const auto& r : ratios)
    if (r.spec == f.ratio && r.bench == f.bench && has_params(r.params, f.params)) out.push_back(&r);
  return out;
}

std::string pvk_cell(const std::vector<const Ratio*>& mine) {
  std::string cell;
  for (const Ratio* r : mine) {
    if (!cell.empty()) cell += "<br>";
    const std::string params = params_text(r->params);
    cell += fmt::format("{}{}: {}", r->pair.empty() ? "defaults" : r->pair, params.empty() ? "" : " " + params,
                        ratio_cell(*r));
  }
  return cell;
}

std::string seed_cell(const SeedFigure& f) {
  const RatioStats s = seed000_stats(f.bench);
  if (f.seed != "000" || !s.estimated) return f.figure;
  return fmt::format("{} (after÷before {:.3f} [{:.3f}, {:.3f}] p={})", f.figure, s.center, s.low, s.high,
                     p_text(s.p));
}

std::string us(double ns) { return fmt::format("{:.3f} µs", ns / 1e3); }

}  // namespace

RatioStats seed000_stats(std::string_view bench) {
  for (const auto& r : experiments().seed000_runs)
    if (r.bench == bench) return ratio_stats(r.after, r.before, false);
  return {};
}

std::string seed_verdict(const SeedFigure& f, const std::vector<const Ratio*>& mine) {
  if (mine.empty()) {
    if (!f.needs.empty()) return fmt::format("pvk: not measured (needs {})", f.needs);
    // The default matrix boots batched, wrpt and unhook at 128,000 pages
    // (auto's target compares them there): a run without them left a side out.
    if (f.ratio == "batched÷wrpt" || f.ratio == "unhook÷wrpt")
      return fmt::format("not in this run (the default matrix boots both sides{}; --mmu or --bench left one out)",
                         f.params.find("128000") != std::string::npos ? " at 128,000 pages" : "");
    return "not in this run";
  }
  // Each ratio: no difference (the interval holds 1 and is narrower than
  // ±5 %, or the ratio is within ±2 % either way), a difference either way
  // (the interval excludes 1), or too noisy to say (it holds 1 but is wide).
  int same = 0, below = 0, above = 0, noisy = 0;
  for (const Ratio* r : mine) {
    const bool within = std::fabs(r->shown() - 1) <= kSame && !r->stats.noisy();
    if (within || (r->stats.same() && r->stats.estimated && !r->stats.noisy())) ++same;
    else if (r->stats.same()) ++noisy;
    else if (r->shown() < 1) ++below;
    else ++above;
  }
  const int n = static_cast<int>(mine.size());
  const auto [lo, hi] = std::minmax_element(mine.begin(), mine.end(),
                                            [](const Ratio* a, const Ratio* b) { return a->shown() < b->shown(); });
  const std::string range = format_ratio((*lo)->shown()) == format_ratio((*hi)->shown())
                                ? format_ratio((*lo)->shown())
                                : format_ratio((*lo)->shown()) + "–" + format_ratio((*hi)->shown());
  const std::string unsure = noisy ? fmt::format("; {} too noisy to tell", noisy) : "";
  switch (f.claim) {
    case Claim::no_difference:
      if (below + above)
        return fmt::format("differs: a difference in {} of {} ({} faster, {} slower; pvk {}){}", below + above, n,
                           below, above, range, unsure);
      if (same == n) return fmt::format("agrees: no difference in {} of {} (pvk {})", same, n, range);
      return fmt::format("inconclusive: no difference shown, but {} of {} too noisy to tell (pvk {})", noisy, n,
                         range);
    case Claim::below_one:
    case Claim::above_one: {
      const int right = f.claim == Claim::below_one ? below : above;
      const int wrong = f.claim == Claim::below_one ? above : below;
      std::string v = right == n ? "agrees in direction" : wrong ? "differs in direction" : right ? "partly shown" : "inconclusive";
      v += fmt::format(" in {} of {} (pvk {} vs the seed's {})", right, n, range, format_ratio(f.value));
      if (same) v += fmt::format("; {} without a difference", same);
      return v + unsure;
    }
    case Claim::reference:
      break;
  }
  return fmt::format("reference: pvk {} ({} of {} with a difference shown)", range, below + above, n);
}

std::vector<FaultSplit> fault_splits(const Results& results) {
  auto first_row = [&](std::string_view bench, const std::string& config) -> const Row* {
    for (const auto& r : results.rows)
      if (r.bench == bench && r.config == config && r.pass) return &r;
    return nullptr;
  };
  // Cycles per page of a row, and the kernel's clearing cycles per cleared page.
  auto cycles = [](const Row* r) { return r ? r->field("per_op_cycles").value_or(0) : 0; };
  auto clearing = [](const Row* r) {
    if (!r) return 0.0;
    const double pages = r->field("pages_cleared").value_or(0);
    return pages > 0 ? r->field("page_clear_cycles").value_or(0) / pages : 0;
  };
  std::vector<FaultSplit> out;
  for (const auto& c : results.configs) {
    const Row* fault = first_row("fault_write", c.id());
    // Linux, or a kernel from before the counters: nothing to split.
    if (!fault || !fault->field("pages_cleared") || cycles(fault) <= 0) continue;
    FaultSplit s;
    s.config = c.id();
    s.fault = cycles(fault);
    s.clearing = clearing(fault);
    s.poke_full = cycles(first_row("poke_full", c.id()));
    const Row* cow = first_row("fault_zero_cow", c.id());
    s.cow = cycles(cow);
    s.cow_clearing = clearing(cow);
    double copied = 0, copy_cycles = 0;
    for (const auto& r : results.rows)
      if (r.config == c.id() && r.pass && r.field("pages_copied").value_or(0) > 0) {
        copied += *r.field("pages_copied");
        copy_cycles += r.field("page_copy_cycles").value_or(0);
      }
    s.copying = copied > 0 ? copy_cycles / copied : 0;
    out.push_back(s);
  }
  return out;
}

FaultSplit seed001_split() { return experiments().seed001_split; }

std::string fault_split_verdict(const FaultSplit& s) {
  // Judged on the percentage as printed, so two rows showing the same share
  // never get different verdicts. The seed's picture: clearing is most of a
  // fault (~61 %); a quarter or more is still a large part.
  const FaultSplit seed = seed001_split();
  const long share = std::lround(s.clearing_share() * 100);
  std::string v = fmt::format("clearing {} % of the fault (seed ~{:.0f} %): ", share, seed.clearing_share() * 100);
  if (share >= 50)
    v += "agrees, clearing is most of the fault";
  else if (share >= 25)
    v += "partly: clearing is a large part, the fault path the larger";
  else
    v += "differs: the fault path dominates (traps and page-table updates cost more here, a memset less)";
  if (s.poke_full > 0)
    v += fmt::format("; Poke_full's memset of the new page adds {} cycles (seed ~{})",
                     format_count(s.poke_full - s.fault), format_count(seed.poke_full - seed.fault));
  return v;
}

std::vector<ForkFit> fork_fits(const Results& results) {
  std::vector<ForkFit> out;
  for (const auto& c : results.configs) {
    ForkFit f;
    f.config = c.id();
    std::vector<double> x, y;
    for (const auto& r : results.rows) {
      if (r.bench != "fork_dirty" || r.config != c.id() || fork_stride(r) != 1 || fork_pages(r) <= 0) continue;
      const auto values = boot_values(r, "");
      // A file without each boot's values still has the row's median.
      if (values.empty()) {
        x.push_back(fork_pages(r));
        y.push_back(r.per_op);
      }
      for (const auto& [rep, v] : values) {
        x.push_back(fork_pages(r));
        y.push_back(v);
      }
    }
    if (x.empty()) continue;
    f.lo = *std::min_element(x.begin(), x.end());
    f.hi = *std::max_element(x.begin(), x.end());
    f.fit = fit_line(x, y);
    if (f.fit.ok) out.push_back(f);
  }
  return out;
}

std::string seeds_section(const Results& results, const std::vector<Ratio>& ratios) {
  std::string md = fmt::format(
      "\n## Seeds\n\n"
      "Every experiment of seeds 000–003 (`docs/seeds.md`): the seed's figure, pvk's corresponding figure from "
      "this run ({}, one cell line per configuration pair; the ratio's interval and p as in Ratios) and a verdict. "
      "\"No difference\": the interval holds 1 and is narrower than ±5 %, or the ratio is within ±{:.0f} %; \"too "
      "noisy to tell\": the interval holds 1 but is wider (or a side has one boot). The seeds ran on real "
      "hardware (2006-2011), pvk on QEMU TCG: compare directions and sizes of effects, not absolute values.\n\n",
      time_mode(results), kSame * 100);
  md += "| seed | experiment | seed's figure | pvk | verdict |\n|---|---|---|---|---|\n";
  for (const auto& f : seed_figures()) {
    const auto mine = ratios_for(f, ratios);
    md += fmt::format("| {} | {} | {} | {} | {} |\n", f.seed, f.experiment, seed_cell(f),
                      mine.empty() ? std::string("—") : pvk_cell(mine), seed_verdict(f, mine));
  }

  // Seed 001's split of a fault: figures within each boot, not a ratio.
  md += "\n### Seed 001: a fresh page's fault = fault path + clearing (cycles per page)\n\n"
        "fault_write's cycles per fault, the part the kernel spent clearing the new frame (its page_clear_cycles "
        "÷ pages_cleared counters, rdtsc around the memset), the fault path (the rest); Poke_full (poke_full: the "
        "fault plus a memset of the whole new page) and the zero page's COW (fault_zero_cow: the new frame is "
        "cleared, not copied from the zero page), with its clearing; and a page copy (the kernel's "
        "page_copy_cycles ÷ pages_copied over this configuration's COW copies: what the zero page's COW cost "
        "when it copied zeros). Medians over the boots.\n\n";
  md += "| configuration | fault | clearing | fault path | Poke_full | zero-page COW (clearing) | a page copy | "
        "verdict |\n|---|---:|---:|---:|---:|---:|---:|---|\n";
  auto split_line = [&](const std::string& label, const FaultSplit& s, const std::string& verdict) {
    auto n = [](double v) { return v > 0 ? format_count(v) : std::string("—"); };
    md += fmt::format("| {} | {} | {} | {} | {} | {}{} | {} | {} |\n", label, n(s.fault), n(s.clearing),
                      n(s.path()), n(s.poke_full), n(s.cow),
                      s.cow > 0 && s.cow_clearing > 0 ? " (" + n(s.cow_clearing) + ")" : "", n(s.copying), verdict);
  };
  split_line(seed001_split().config, seed001_split(), experiments().seed001_verdict);
  const std::vector<FaultSplit> splits = fault_splits(results);
  for (const auto& s : splits) {
    const Config* c = results.find_config(s.config);
    split_line(c ? c->label() : s.config, s, fault_split_verdict(s));
  }
  if (splits.empty()) md += "\nNo pvk configuration ran fault_write with the clearing counters.\n";

  // Seed 003's cost model. The seed's two points per mode give its line.
  md += "\n### Fork cost model: ms per fork = fixed + per page × dirty pages\n\n"
        "Least squares over every boot's fork_dirty time (parent side, every page dirtied) at each size, per "
        "configuration. Seed 003's lines through its two points (1,280 and 128,000 pages).\n\n";
  md += "| configuration | pages fitted | points | per page | fixed | R² |\n|---|---|---:|---:|---:|---:|\n";
  // Seed 003's lines (bench/experiments.json): the first is its wtpt arm,
  // the second emulation.
  std::vector<LineFit> seed_fits;
  for (const auto& line : experiments().seed003_lines) {
    std::vector<double> ns;
    for (const double t : line.us) ns.push_back(t * 1e3);
    const LineFit f = fit_line(line.pages, ns);
    seed_fits.push_back(f);
    md += fmt::format("| seed 003 {} | {:.0f}–{:.0f} | {} | {} | {:.3f} ms | — |\n", line.name,
                      *std::min_element(line.pages.begin(), line.pages.end()),
                      *std::max_element(line.pages.begin(), line.pages.end()), line.pages.size(), us(f.slope),
                      f.intercept / 1e6);
  }
  const std::vector<ForkFit> fits = fork_fits(results);
  for (const auto& f : fits) {
    const Config* c = results.find_config(f.config);
    md += fmt::format("| {} | {:.0f}–{:.0f} | {} | {} | {:.3f} ms | {:.3f} |\n", c ? c->label() : f.config, f.lo, f.hi,
                      f.fit.n, us(f.fit.slope), f.fit.intercept / 1e6, f.fit.r2);
  }
  if (fits.empty()) md += "\nNo configuration ran fork_dirty at two sizes or more.\n";
  // The seed's comparison on the per-page cost: the pair of backends
  // bench/experiments.json names (seed003_per_page) with every other switch
  // the same, against wtpt over emulate.
  const SeedPairing& pair = experiments().seed003_per_page;
  std::string per_page;
  for (const auto& f : fits) {
    const Config* c = results.find_config(f.config);
    if (!c || c->platform != pair.platform || c->get(pair.switch_name) != pair.numerator) continue;
    Config other = *c;
    for (auto& sw : other.switches)
      if (sw.first == pair.switch_name) sw.second = pair.denominator;
    for (const auto& g : fits)
      if (g.config == other.id() && g.fit.slope > 0)
        per_page += fmt::format("{}{} ÷ {}: {:.3f}", per_page.empty() ? "" : "; ", c->label(), other.label(),
                                f.fit.slope / g.fit.slope);
  }
  if (!per_page.empty() && seed_fits.size() >= 2 && seed_fits[1].slope > 0)
    md += fmt::format("\nPer-page cost, {} ÷ {}: {} (seed 003, wtpt ÷ emulate: {:.3f}).\n", pair.numerator,
                      pair.denominator, per_page, seed_fits[0].slope / seed_fits[1].slope);
  return md;
}

}  // namespace pvk::bench
