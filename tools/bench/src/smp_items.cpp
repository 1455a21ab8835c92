// The benchmark items of machines with several CPUs: kernbench's loads and
// the smp suite's thread counts at N CPUs (the default matrix's SMP
// machines, --smp N, and the scaling run's --smp N,M,...).
#include "pvk/bench/catalog.hpp"
#include "pvk/bench/matrix.hpp"

#include <algorithm>

namespace pvk::bench {

std::string kernbench_procs(unsigned smp) {
  if (smp <= 1) return "1+4+8";
  constexpr unsigned kMaxProcs = 20;  // bench/seed002.cpp: each worker has a kbworker and its child
  std::vector<unsigned> loads{std::max(1u, smp / 2), smp, 2 * smp};
  std::string out;
  unsigned last = 0;
  for (unsigned p : loads) {
    p = std::min(p, kMaxProcs);
    if (p == last) continue;
    out += (out.empty() ? "" : "+") + std::to_string(p);
    last = p;
  }
  return out;
}

std::string smp_threads(unsigned smp) {
  std::string threads = "0+1";
  if (smp > 2) threads += "+" + std::to_string(smp - 1);
  return threads;
}

Item smp_items(unsigned smp) { return Item{"smp", {{"threads", smp_threads(smp)}, {"reps", "3"}}}; }

namespace {

// jobs= so that every worker has a job at the heaviest load of N CPUs.
unsigned kernbench_jobs(unsigned smp) {
  const std::string procs = kernbench_procs(smp);
  return std::max(8u, static_cast<unsigned>(std::stoul(procs.substr(procs.rfind('+') + 1))));
}

// kernbench's options on N CPUs: the N-CPU loads, and the jobs of
// jobs_smp CPUs' (a scaling run's largest count: one job count at every
// count, or its rows would not line up).
std::vector<std::pair<std::string, std::string>> kernbench_options(unsigned smp, unsigned jobs_smp) {
  return {{"procs", kernbench_procs(smp)}, {"jobs", std::to_string(kernbench_jobs(std::max(smp, jobs_smp)))}};
}

}  // namespace

std::vector<Item> default_items(unsigned smp) {
  if (smp <= 1) return {Item{"all", {}}};
  // `all` with procs= would reach ctx too (its ring size): the seeds'
  // suites one by one, procs= on seed002 (kernbench is its only member
  // with procs).
  return {Item{"seed000", {}}, Item{"seed001", {}}, Item{"seed002", kernbench_options(smp, smp)}, Item{"seed003", {}},
          smp_items(smp)};
}

std::vector<Item> smp_matrix_items(unsigned smp, unsigned jobs_smp) {
  return {Item{"kernbench", kernbench_options(smp, jobs_smp)}, smp_items(smp)};
}


namespace {

bool has_option(const Item& item, std::string_view key) {
  return std::any_of(item.options.begin(), item.options.end(), [&](const auto& o) { return o.first == key; });
}

bool in_smp_suite(std::string_view name) {
  if (name == "smp") return true;
  const BenchInfo* b = find_benchmark(name);
  return b && b->suite == "smp";
}

}  // namespace

std::vector<Item> scaling_items(const std::vector<Item>& items, unsigned smp, unsigned top_smp) {
  if (items.empty()) return smp_matrix_items(smp, top_smp);
  // The user's items, each given the count's workers where it leaves them
  // open: without them every count would run the driver's defaults
  // (threads=0+1, procs=1+4+8), and the row with one worker per CPU, the
  // one the scaling table reads, would be missing above two CPUs.
  std::vector<Item> out;
  for (Item item : items) {
    if (in_smp_suite(item.name) && !has_option(item, "threads")) item.options.emplace_back("threads", smp_threads(smp));
    if (item.name == "kernbench" && !has_option(item, "procs"))
      for (auto& option : kernbench_options(smp, top_smp))
        if (!has_option(item, option.first)) item.options.push_back(std::move(option));
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace pvk::bench
