#include "pvk/bench/plot_questions.hpp"

#include <algorithm>
#include <map>

namespace pvk::bench {
namespace {

// The switches beyond the backend: what makes a configuration a variation.
Switches extras(const Config& c) {
  Switches out;
  for (const auto& kv : c.switches)
    if (kv.first != "mmu") out.push_back(kv);
  return out;
}

std::string names_of(const Switches& s) {
  std::string out;
  for (const auto& [k, v] : s) out += "_" + k;
  return out;
}

// The default configuration a variation is compared with.
const Config* twin_of(const Results& results, const Config& c, const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    const Config* t = results.find_config(id);
    if (t && t->platform == c.platform && extras(*t).empty() && t->get("mmu") == c.get("mmu")) return t;
  }
  return nullptr;
}

}  // namespace

std::vector<PlotQuestion> plot_questions(const Results& results, const std::vector<std::string>& ids) {
  std::vector<PlotQuestion> out;
  PlotQuestion defaults{"", "the backends at their defaults", {}};
  std::map<std::string, size_t> by_names;  // suffix -> index in `out` (after the defaults)
  std::vector<PlotQuestion> variations;
  for (const auto& id : ids) {
    const Config* c = results.find_config(id);
    if (!c) continue;
    const Switches set = extras(*c);
    if (set.empty()) {
      defaults.ids.push_back(id);
      continue;
    }
    const std::string suffix = names_of(set);
    auto [it, fresh] = by_names.emplace(suffix, variations.size());
    if (fresh) variations.push_back({suffix, "", {}});
    PlotQuestion& q = variations[it->second];
    if (const Config* twin = twin_of(results, *c, ids);
        twin && std::find(q.ids.begin(), q.ids.end(), twin->id()) == q.ids.end())
      q.ids.push_back(twin->id());
    q.ids.push_back(id);
  }
  if (!defaults.ids.empty()) out.push_back(std::move(defaults));
  for (auto& q : variations) {
    // The settings this question shows, each once ("pvpatch=off", "pte=flags, pte=attrs").
    std::vector<std::string> settings;
    for (const auto& id : q.ids)
      if (const Config* c = results.find_config(id))
        for (const auto& [k, v] : extras(*c))
          if (std::find(settings.begin(), settings.end(), k + "=" + v) == settings.end())
            settings.push_back(k + "=" + v);
    std::string list;
    for (const auto& s : settings) list += (list.empty() ? "" : ", ") + s;
    q.heading = list + " against the defaults";
    out.push_back(std::move(q));
  }
  return out;
}

std::string plot_currency(const Results& results, const std::vector<std::string>& ids) {
  size_t timed_virtually = 0, known = 0;
  for (const auto& id : ids)
    if (const Config* c = results.find_config(id)) {
      ++known;
      timed_virtually += results.virtual_time(*c);
    }
  if (known && timed_virtually == known) return "virtual time (QEMU -icount: every instruction 1 ns)";
  if (timed_virtually == 0) return "wall time (QEMU TCG on the host that ran it)";
  return "virtual time, and wall time for the machines with several CPUs";
}

}  // namespace pvk::bench
