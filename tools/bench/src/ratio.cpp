#include "pvk/bench/ratio.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace pvk::bench {

bool Selector::matches(const Config& config) const {
  for (const auto& [key, values] : terms) {
    const auto v = config.effective(key);
    if (!v || std::find(values.begin(), values.end(), *v) == values.end()) return false;
  }
  return true;
}

bool Selector::mentions(std::string_view key) const {
  return std::any_of(terms.begin(), terms.end(), [&](const auto& t) { return t.first == key; });
}

std::string Selector::text() const {
  std::string out;
  for (const auto& [key, values] : terms) {
    if (!out.empty()) out += ',';
    out += key + "=";
    for (size_t i = 0; i < values.size(); ++i) out += (i ? "|" : "") + values[i];
  }
  return out;
}

Selector parse_selector(std::string_view text) {
  Selector s;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view term = text.substr(start, end - start);
    const size_t eq = term.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == term.size())
      throw std::invalid_argument(fmt::format("selector '{}': '{}' is not key=value", text, term));
    std::vector<std::string> values;
    std::string_view rest = term.substr(eq + 1);
    while (true) {
      const size_t bar = rest.find('|');
      values.emplace_back(rest.substr(0, bar));
      if (values.back().empty()) throw std::invalid_argument(fmt::format("selector '{}': empty value", text));
      if (bar == std::string_view::npos) break;
      rest = rest.substr(bar + 1);
    }
    s.terms.emplace_back(std::string(term.substr(0, eq)), std::move(values));
    start = end + 1;
  }
  return s;
}

const std::vector<RatioSpec>& builtin_ratios() {
  // The one place pairs are declared. Linux rows come with the Linux
  // platforms (linux-native, linux-xen); until then those ratios are empty.
  static const std::vector<RatioSpec> specs{
      {"batched÷wrpt", parse_selector("platform=xen,mmu=batched"), parse_selector("platform=xen,mmu=wrpt"),
       "Xen: queued mmu_update batches vs writable page tables (trap and emulate); seed 003's comparison"},
      {"batched÷direct", parse_selector("platform=xen,mmu=batched"), parse_selector("platform=xen,mmu=direct"),
       "Xen: queued batches vs one mmu_update hypercall per PTE write"},
      // Issue 12: seed 003's own ratio (wtpt÷emulate: 0.248 at 1,280 pages,
      // 0.132 at 128,000) and the adaptive backend against the fixed ones.
      {"unhook÷wrpt", parse_selector("platform=xen,mmu=unhook"), parse_selector("platform=xen,mmu=wrpt"),
       "Xen: unhook-and-rehook whole L1 tables vs trap and emulate per entry; seed 003's wtpt÷emulate"},
      {"unhook÷batched", parse_selector("platform=xen,mmu=unhook"), parse_selector("platform=xen,mmu=batched"),
       "Xen: unhook-and-rehook vs queued batches; their break-even against density is issue 12's question"},
      {"auto÷batched", parse_selector("platform=xen,mmu=auto"), parse_selector("platform=xen,mmu=batched"),
       "Xen: per table, queued or unhooked by entry count (calibrated threshold) vs always queued; issue 12"},
      {"auto÷unhook", parse_selector("platform=xen,mmu=auto"), parse_selector("platform=xen,mmu=unhook"),
       "Xen: the adaptive backend vs always unhooking; issue 12"},
      {"auto÷wrpt", parse_selector("platform=xen,mmu=auto"), parse_selector("platform=xen,mmu=wrpt"),
       "Xen: the adaptive backend vs trap and emulate per entry; issue 12"},
      {"auto÷direct", parse_selector("platform=xen,mmu=auto"), parse_selector("platform=xen,mmu=direct"),
       "Xen: the adaptive backend vs one mmu_update hypercall per entry; issue 12"},
      // direct is not among the candidates: it sends the same validated
      // updates as batched, one hypercall each, so it is never the fastest
      // (auto÷direct shows it), and leaving it out keeps its 128,000-page
      // boot out of the default matrix.
      {.name = "auto÷best fixed",
       .numerator = parse_selector("platform=xen,mmu=auto"),
       .denominator = parse_selector("platform=xen,mmu=batched|wrpt|unhook"),
       .about = "Xen: the adaptive backend vs whichever of batched, wrpt and unhook was fastest at that size and "
                "density (named); issue 12",
       .best_denominator = true},
      {"Xen÷native", parse_selector("platform=xen,mmu=batched"), parse_selector("platform=native,mmu=native"),
       "the cost of running under Xen (batched) over running natively"},
      {"pgd_cache on÷off", parse_selector("pgd_cache=on"), parse_selector("pgd_cache=off"),
       "keeping freed page-table roots (pinned, under Xen) for reuse; seed 000's before/after"},
      {"zero_page on÷off", parse_selector("zero_page=on"), parse_selector("zero_page=off"),
       "mapping the shared zero page on read faults; seed 001"},
      {"pte flags÷attrs", parse_selector("pte=flags"), parse_selector("pte=attrs"),
       "every PTE flag read through pvops vs inline, call sites patched at boot (pvpatch=on); seed 002"},
      // Issue 11: what the pvops machinery costs, and what patching buys.
      {"pvpatch on÷builtin", parse_selector("platform=native,mmu=native,pvpatch=on"),
       parse_selector("platform=native-builtin"),
       "natively: pvops calls patched at boot (direct calls, inline flag reads) over the compiled-in native verbs "
       "with no table (pvk-builtin.elf); issue 11"},
      {"pvpatch off÷on", parse_selector("pvpatch=off"), parse_selector("pvpatch=on"),
       "pvops calls left indirect through the table over calls patched at boot; issue 11"},
      {"pte flags÷attrs, pvpatch=on", parse_selector("pte=flags,pvpatch=on"), parse_selector("pte=attrs,pvpatch=on"),
       "seed 002's question with patched sites (flag reads inline code either way): issue 11's target"},
      {"pte flags÷attrs, pvpatch=off", parse_selector("pte=flags,pvpatch=off"), parse_selector("pte=attrs,pvpatch=off"),
       "seed 002's question without patching: every flag read an indirect pvops call vs inline; issue 11"},
      {"pvk÷Linux native", parse_selector("platform=native,mmu=native"), parse_selector("platform=linux-native"),
       "pvk vs Linux running the same programs natively in the same QEMU"},
      {"pvk÷Linux Xen", parse_selector("platform=xen,mmu=batched"), parse_selector("platform=linux-xen"),
       "pvk (batched) vs Linux PV as dom0 of the same Xen"},
      {"Linux Xen÷native", parse_selector("platform=linux-xen"), parse_selector("platform=linux-native"),
       "Linux under Xen (PV dom0) over Linux natively"},
      // Issue 10: table sharing (ptshare=on) against per-PTE fork and mprotect.
      {"ptshare on÷off", parse_selector("ptshare=on"), parse_selector("ptshare=off"),
       "fork shares whole L1 tables behind read-only L2 entries (a table is copied on the first write through it), "
       "mprotect of whole tables changes the L2 entry; issue 10"},
      {"ptshare on÷off, fork+exit+rewrite", parse_selector("ptshare=on"), parse_selector("ptshare=off"),
       "fork_dirty's fork + child exit + the parent writing every page again, rep by rep (total_median): sharing "
       "moves work from fork to the later faults, this counts it",
       "total_median"},
      {"ptshare batched÷wrpt", parse_selector("platform=xen,mmu=batched,ptshare=on"),
       parse_selector("platform=xen,mmu=wrpt,ptshare=off"),
       "Xen: batched with table sharing vs writable page tables per PTE (seed 003's reference)"},
      {"ptshare÷Linux Xen", parse_selector("platform=xen,mmu=batched,ptshare=on"), parse_selector("platform=linux-xen"),
       "pvk (batched, table sharing) vs Linux PV as dom0 of the same Xen"},
      {"ptshare÷Linux native", parse_selector("platform=native,mmu=native,ptshare=on"),
       parse_selector("platform=linux-native"), "pvk natively with table sharing vs Linux natively"},
      // Issue 14: across benchmarks, within one configuration: seed 001's
      // figures are one fault against another, in cycles of one fault.
      {"zero-page COW÷fresh fault", parse_selector("zero_page=on"), parse_selector("zero_page=on"),
       "seed 001: a store to a page that was read first (COW of the zero page) over a store to a fresh page, "
       "cycles of one page's fault (page_median_cycles); the seed: 2,660 / 2,300 cycles",
       "page_median_cycles", "fault_zero_cow", "fault_write"},
      {"zero-page read÷fresh fault", parse_selector("zero_page=on"), parse_selector("zero_page=on"),
       "seed 001: a read fault that maps the zero page (the fault path, nothing cleared) over a write fault "
       "that allocates and clears a page, cycles of one page's fault; Linus: ~900 of ~2,300 cycles",
       "page_median_cycles", "fault_zero_read", "fault_write"},
      // Issue 14: the A/A check (--aa): a configuration over itself, booted
      // as two configurations. Must be 1.00 within its interval.
      // Issue 15: what other CPUs running the same address space cost (the
      // TLB shootdowns of mprotect, munmap and fork; faults contending in
      // one mm), in each configuration: threads=K over threads=0.
      {.name = "threads K÷0",
       .about = "issue 15: the smp benchmarks with K more threads of the process running (on other CPUs with "
                "--smp) over the same operation with none, in one configuration",
       .vary = "threads",
       .vary_base = "0"},
      // Issue 15: how a Xen PV guest reaches the other vCPUs' TLBs, on the
      // same machine; and each way against Linux PV on the same vCPUs.
      {"shootdown hypercall÷ipi", parse_selector("platform=xen,shootdown=hypercall"),
       parse_selector("platform=xen,shootdown=ipi"),
       "issue 15: Xen flushing the other vCPUs (MMUEXT_TLB_FLUSH_MULTI / INVLPG_MULTI in the section's multicall) "
       "over event-channel IPIs and local flushes, the same vCPUs"},
      {"pvk÷Linux Xen, hypercall shootdown", parse_selector("platform=xen,mmu=batched,shootdown=hypercall,sched_cpus=all"),
       parse_selector("platform=linux-xen"),
       "issue 15: pvk (batched, processes on every vCPU, shootdown through Xen) vs Linux PV on the same vCPUs"},
      {"pvk÷Linux Xen, ipi shootdown", parse_selector("platform=xen,mmu=batched,shootdown=ipi,sched_cpus=all"),
       parse_selector("platform=linux-xen"),
       "issue 15: pvk (batched, processes on every vCPU, shootdown by event-channel IPIs) vs Linux PV on the same "
       "vCPUs"},
      {"A/A", parse_selector("twin=2"), parse_selector("twin=1"),
       "the same configuration booted twice as two configurations (--aa): any difference is noise"},
  };
  return specs;
}

const std::vector<Target>& targets() {
  static const std::vector<Target> table{
      {"fork after dirtying 128,000 pages under Xen: batched ≤ 0.10 × wrpt", "batched÷wrpt", "fork_dirty",
       "pages=128000", 0.10, ""},
      {"fork after dirtying 128,000 pages under Xen: batched ≤ 0.10 × Linux PV", "pvk÷Linux Xen", "fork_dirty",
       "pages=128000", 0.10, ""},
      {"mprotect RW→RO→RW of 128,000 pages under Xen: batched ≤ 0.10 × Linux PV", "pvk÷Linux Xen", "mprotect",
       "pages=128000", 0.10, ""},
      {"fork+exit+wait: pvk's Xen÷native ≤ 0.7 × Linux's Xen÷native", "Xen÷native", "forkwait", "", 0.7,
       "Linux Xen÷native"},
      {"null syscall natively ≤ 0.8 × Linux", "pvk÷Linux native", "getppid", "", 0.8, ""},
      {"context switch natively ≤ 0.8 × Linux", "pvk÷Linux native", "ctx", "procs=2 working_set=0", 0.8, ""},
      {"pipe round trip natively ≤ 0.8 × Linux", "pvk÷Linux native", "lat_pipe", "", 0.8, ""},
      {"page fault natively ≤ 0.8 × Linux", "pvk÷Linux native", "fault_write", "", 0.8, ""},
      // Issue 10: table sharing. The 128,000-page sizes are in the default
      // matrix for the configurations these compare.
      {"fork after dirtying 128,000 pages under Xen: batched ptshare=on ≤ 0.10 × wrpt ptshare=off",
       "ptshare batched÷wrpt", "fork_dirty", "pages=128000", 0.10, "", false, true},
      {"fork after dirtying 128,000 pages under Xen: batched ptshare=on ≤ 0.10 × Linux PV", "ptshare÷Linux Xen",
       "fork_dirty", "pages=128000", 0.10, "", false, true},
      {"mprotect RW→RO→RW of 128,000 pages under Xen: batched ptshare=on ≤ 0.10 × Linux PV", "ptshare÷Linux Xen",
       "mprotect", "pages=128000", 0.10, "", false, true},
      {"fork after dirtying 128,000 pages natively: ptshare=on ≤ 0.10 × Linux", "ptshare÷Linux native",
       "fork_dirty", "pages=128000", 0.10, "", false, true},
      // Issue 11: patched pvops cost about what Linux's do (~1.00), and
      // flag reads through patched pvops about what inline ones cost.
      {"natively, fork after dirtying: pvpatch=on ≤ 1.01 × compiled-in native", "pvpatch on÷builtin", "fork_dirty",
       "", 1.01, "", true},
      {"natively, mprotect RW→RO→RW: pvpatch=on ≤ 1.01 × compiled-in native", "pvpatch on÷builtin", "mprotect", "",
       1.01, "", true},
      {"natively, page fault: pvpatch=on ≤ 1.01 × compiled-in native", "pvpatch on÷builtin", "fault_write", "", 1.01,
       "", true},
      {"natively, fork+exit+wait: pvpatch=on ≤ 1.01 × compiled-in native", "pvpatch on÷builtin", "forkwait", "",
       1.01, "", true},
      {"mprotect with pvpatch=on: pte=flags ≤ 1.02 × pte=attrs", "pte flags÷attrs, pvpatch=on", "mprotect", "", 1.02,
       "", true},
      // Issue 12: the adaptive backend against the fixed ones — never more
      // than 5 % worse than the best of them at any size and density
      // measured (the density series included), at 128,000 pages in the
      // default matrix (which boots every Xen backend there, seed 003's
      // unhook÷wrpt with it), and better than each somewhere.
      {.goal = "fork after dirtying 128,000 pages under Xen: auto ≤ 1.05 × the best fixed backend",
       .ratio = "auto÷best fixed", .bench = "fork_dirty", .params = "pages=128000", .at_most = 1.05,
       .in_default_matrix = true},
      {.goal = "fork after dirtying, every size and density: auto ≤ 1.05 × the best fixed backend",
       .ratio = "auto÷best fixed", .bench = "fork_dirty", .at_most = 1.05, .each_pair = true, .sparse_too = true},
      {.goal = "mprotect RW→RO→RW, every size: auto ≤ 1.05 × the best fixed backend", .ratio = "auto÷best fixed",
       .bench = "mprotect", .at_most = 1.05, .each_pair = true},
      // Any benchmark (bench ""), any size and density.
      {.goal = "auto better than batched somewhere", .ratio = "auto÷batched", .at_most = 1.0, .sparse_too = true,
       .somewhere = true},
      {.goal = "auto better than unhook somewhere", .ratio = "auto÷unhook", .at_most = 1.0, .sparse_too = true,
       .somewhere = true},
      {.goal = "auto better than wrpt somewhere", .ratio = "auto÷wrpt", .at_most = 1.0, .sparse_too = true,
       .somewhere = true},
      {.goal = "auto better than direct somewhere", .ratio = "auto÷direct", .at_most = 1.0, .sparse_too = true,
       .somewhere = true},
      // At every size both sides ran, per backend.
      {"fork + child exit + parent rewrite: ptshare=on ≤ 1.05 × off", "ptshare on÷off, fork+exit+rewrite",
       "fork_dirty", "", 1.05, "", true},
  };
  return table;
}

RatioSpec parse_ratio(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw std::invalid_argument(fmt::format("--ratio '{}': expected NAME=NUMERATOR/DENOMINATOR", text));
  const std::string_view sides = text.substr(eq + 1);
  const size_t slash = sides.find('/');
  if (slash == std::string_view::npos || sides.find('/', slash + 1) != std::string_view::npos)
    throw std::invalid_argument(fmt::format("--ratio '{}': expected one '/' between the two selectors", text));
  // A side is SELECTOR[@BENCH]; with a benchmark the selector may be empty
  // (any configuration: then both rows come from one).
  auto side = [&](std::string_view part, std::string& bench) {
    const size_t at = part.find('@');
    if (at != std::string_view::npos) {
      bench = std::string(part.substr(at + 1));
      if (bench.empty()) throw std::invalid_argument(fmt::format("--ratio '{}': empty benchmark after '@'", text));
      part = part.substr(0, at);
      if (part.empty()) return Selector{};
    }
    return parse_selector(part);
  };
  RatioSpec spec{std::string(text.substr(0, eq)), {}, {}, "declared with --ratio"};
  spec.numerator = side(sides.substr(0, slash), spec.numerator_bench);
  spec.denominator = side(sides.substr(slash + 1), spec.denominator_bench);
  if (spec.numerator_bench.empty() != spec.denominator_bench.empty())
    throw std::invalid_argument(fmt::format("--ratio '{}': name a benchmark on both sides or on neither", text));
  return spec;
}

bool paired_in_time(const Results& results) {
  const auto it = results.run.find("schedule");
  return it != results.run.end() && it->is_string() && it->get<std::string>() == "paired";
}

std::vector<std::pair<int, double>> boot_values(const Row& row, const std::string& field) {
  std::vector<std::pair<int, double>> out;
  for (const auto& b : row.boots)
    if (const auto v = b.field(field.empty() ? "per_op" : field)) out.emplace_back(b.rep, *v);
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  return out;
}

namespace {

// The two rows' boot values as the statistics take them: paired when each
// side has one value per rep and the same reps.
RatioStats stats_of(const Row& a, const Row& b, const std::string& field, bool paired, Timing timing) {
  const auto va = boot_values(a, field), vb = boot_values(b, field);
  std::vector<double> xa, xb;
  for (const auto& v : va) xa.push_back(v.second);
  for (const auto& v : vb) xb.push_back(v.second);
  bool same_reps = va.size() == vb.size();
  for (size_t i = 0; same_reps && i < va.size(); ++i)
    same_reps = va[i].first == vb[i].first && (i == 0 || va[i].first != va[i - 1].first);
  return ratio_stats(xa, xb, paired && same_reps, timing);
}

bool bench_is(const std::string& bench, const std::string& wanted, const std::string& otherwise) {
  return bench == (wanted.empty() ? otherwise : wanted);
}

// The parameters without `key` ("" = all of them), as params_text.
std::string params_without(const Params& params, const std::string& key) {
  Params rest;
  for (const auto& p : params)
    if (p.first != key) rest.push_back(p);
  return params_text(rest);
}

// A parameter's value as text ("" when the row has no such parameter).
std::string param_value(const Params& params, const std::string& key) {
  for (const auto& [k, v] : params)
    if (k == key) return v.is_string() ? v.get<std::string>() : v.dump();
  return "";
}

// Whether b is a's denominator under spec's rows and parameters.
bool rows_pair(const RatioSpec& spec, const Row& a, const Row& b) {
  if (spec.vary.empty()) return params_text(a.params) == params_text(b.params);
  const std::string va = param_value(a.params, spec.vary), vb = param_value(b.params, spec.vary);
  return !va.empty() && va != spec.vary_base && vb == spec.vary_base &&
         params_without(a.params, spec.vary) == params_without(b.params, spec.vary);
}

}  // namespace

std::vector<Ratio> compute_ratios(const Results& results, const std::vector<RatioSpec>& specs) {
  const bool paired_run = paired_in_time(results);
  std::vector<Ratio> out;
  for (const auto& spec : specs) {
    for (const auto& a : results.rows) {
      if (!spec.numerator_bench.empty() && a.bench != spec.numerator_bench) continue;
      const Config* ca = results.find_config(a.config);
      if (!ca || !spec.numerator.matches(*ca)) continue;
      const size_t first = out.size();
      for (const auto& b : results.rows) {
        if (&a == &b || !bench_is(b.bench, spec.denominator_bench, a.bench) || !rows_pair(spec, a, b)) continue;
        const Config* cb = results.find_config(b.config);
        const bool same_config = cb && ca->id() == cb->id();
        // One configuration over itself only across benchmarks or a parameter;
        // across a parameter, only within one configuration.
        if (!cb || !spec.denominator.matches(*cb)) continue;
        if (spec.vary.empty() ? (same_config && a.bench == b.bench) : !same_config) continue;
        std::set<std::string> keys;
        for (const auto& k : ca->keys()) keys.insert(k);
        for (const auto& k : cb->keys()) keys.insert(k);
        bool same = true;
        for (const auto& k : keys)
          if (!spec.numerator.mentions(k) && !spec.denominator.mentions(k) && ca->effective(k) != cb->effective(k))
            same = false;
        if (!same) continue;
        double va = a.per_op, vb = b.per_op, a_min = a.per_op_min, a_max = a.per_op_max, b_min = b.per_op_min,
               b_max = b.per_op_max;
        if (!spec.field.empty()) {
          const auto fa = a.field(spec.field), fb = b.field(spec.field);
          if (!fa || !fb) continue;
          va = *fa;
          vb = *fb;
          // total_median -> total_min / total_max (absent: no spread).
          std::string stem = spec.field;
          if (stem.ends_with("_median")) stem.resize(stem.size() - 7);
          a_min = a.field(stem + "_min").value_or(0);
          a_max = a.field(stem + "_max").value_or(0);
          b_min = b.field(stem + "_min").value_or(0);
          b_max = b.field(stem + "_max").value_or(0);
        }
        if (vb <= 0) continue;
        Ratio r;
        r.spec = spec.name;
        r.bench = a.bench;
        if (b.bench != a.bench) r.denominator_bench = b.bench;
        r.params = a.params;
        r.numerator = ca->id();
        r.denominator = cb->id();
        // What the pair shares: the numerator without the keys the spec is about.
        Config shared{spec.numerator.mentions("platform") ? "" : ca->platform, {}};
        for (const auto& s : ca->switches)
          if (!spec.numerator.mentions(s.first) && !spec.denominator.mentions(s.first)) shared.switches.push_back(s);
        r.pair = shared.label();
        while (!r.pair.empty() && (r.pair.front() == ' ' || r.pair.front() == '/')) r.pair.erase(0, 1);
        r.value = va / vb;
        r.low = b_max > 0 ? a_min / b_max : 0;
        r.high = b_min > 0 ? a_max / b_min : 0;
        r.pass = a.pass && b.pass;
        // Two rows of one configuration come from the same boots: paired.
        // Exact only when both sides' boots repeat (virtual time).
        const bool deterministic = results.virtual_time(*ca) && results.virtual_time(*cb);
        r.stats = stats_of(a, b, spec.field, paired_run || same_config, deterministic ? Timing::Virtual : Timing::Wall);
        r.deterministic = deterministic;
        out.push_back(std::move(r));
      }
      if (spec.best_denominator && out.size() > first + 1) {
        // The fastest denominator gives the highest ratio.
        const auto best = std::max_element(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                                           [](const Ratio& x, const Ratio& y) { return x.value < y.value; });
        Ratio kept = std::move(*best);
        out.resize(first);
        out.push_back(std::move(kept));
      }
    }
  }
  return out;
}

}  // namespace pvk::bench
