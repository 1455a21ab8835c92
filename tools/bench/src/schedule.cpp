#include "pvk/bench/schedule.hpp"

#include "pvk/bench/catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace pvk::bench {

Schedule parse_schedule(std::string_view text) {
  if (text == "paired") return Schedule::paired;
  if (text == "heaviest") return Schedule::heaviest;
  throw std::invalid_argument(fmt::format("--schedule '{}': expected paired or heaviest", text));
}

const char* schedule_name(Schedule schedule) { return schedule == Schedule::paired ? "paired" : "heaviest"; }

namespace {

// Where a configuration goes in a round: its twin right after its original.
std::vector<size_t> round_order(const Plan& plan) {
  std::vector<size_t> order;
  std::vector<bool> placed(plan.configs.size(), false);
  auto twin_of = [&](size_t i) -> std::optional<size_t> {
    for (size_t j = 0; j < plan.configs.size(); ++j) {
      if (plan.configs[j].get(kTwinKey) != "2") continue;
      Config original = plan.configs[j];
      std::erase_if(original.switches, [](const auto& s) { return s.first == kTwinKey; });
      if (original.id() == plan.configs[i].id()) return j;
    }
    return std::nullopt;
  };
  for (size_t i = 0; i < plan.configs.size(); ++i) {
    if (placed[i] || plan.configs[i].get(kTwinKey) == "2") continue;
    order.push_back(i);
    placed[i] = true;
    if (const auto t = twin_of(i)) {
      order.push_back(*t);
      placed[*t] = true;
    }
  }
  for (size_t i = 0; i < plan.configs.size(); ++i)
    if (!placed[i]) order.push_back(i);
  return order;
}

}  // namespace

void schedule_boots(Plan& plan, Schedule schedule) {
  if (schedule == Schedule::heaviest) return;
  const std::vector<size_t> order = round_order(plan);
  std::vector<size_t> position(plan.configs.size());
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  // Even rounds run in reverse (A B, then B A: counterbalanced), so being
  // started first or second in a round favours neither side of a pair.
  auto place = [&](const Boot& b) {
    const size_t p = position[b.config];
    return b.rep % 2 == 0 ? order.size() - 1 - p : p;
  };
  std::stable_sort(plan.boots.begin(), plan.boots.end(), [&](const Boot& a, const Boot& b) {
    return std::tuple(a.rep, place(a), a.part) < std::tuple(b.rep, place(b), b.part);
  });
}

size_t add_aa_twins(Plan& plan) {
  const size_t configs = plan.configs.size();
  const size_t boots = plan.boots.size();
  size_t added = 0;
  for (size_t i = 0; i < configs; ++i) {
    const Config& c = plan.configs[i];
    const bool base = std::all_of(c.switches.begin(), c.switches.end(), [](const auto& s) { return s.first == "mmu"; });
    if (!base) continue;
    Switches with = c.switches;
    with.emplace_back(std::string(kTwinKey), "2");
    const size_t twin = plan.configs.size();
    plan.configs.push_back(make_config(c.platform, with));
    for (size_t b = 0; b < boots; ++b)
      if (plan.boots[b].config == i) {
        Boot copy = plan.boots[b];  // the same command line: the kernel cannot tell them apart
        copy.config = twin;
        plan.boots.push_back(std::move(copy));
      }
    ++added;
  }
  if (added) plan.notes.push_back(fmt::format("A/A: {} base configurations booted twice, as twin=1 and twin=2", added));
  return added;
}

size_t add_warmups(Plan& plan) {
  size_t warmed = 0, left = 0;
  for (Boot& boot : plan.boots) {
    const std::vector<Item> items = parse_items(boot.bench);
    std::vector<Item> with;
    for (Item warm : items) {
      std::erase_if(warm.options, [](const auto& o) { return o.first == "reps"; });
      warm.options.emplace_back("reps", "1");
      with.push_back(std::move(warm));
    }
    with.insert(with.end(), items.begin(), items.end());
    std::vector<std::string> packed;
    try {
      packed = pack_items(with);
    } catch (const std::invalid_argument&) {
    }
    if (packed.size() != 1) {
      ++left;
      continue;
    }
    const size_t at = boot.cmdline.rfind("bench=");
    boot.cmdline = boot.cmdline.substr(0, at) + "bench=" + packed.front();
    boot.bench = packed.front();
    ++warmed;
  }
  if (left) plan.notes.push_back(fmt::format("--warmup: {} boots too long for warm-ups, run without", left));
  return warmed;
}

}  // namespace pvk::bench
