#include "pvk/bench/break_even.hpp"

#include "pvk/bench/matrix.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace pvk::bench {

double fork_pages(const Row& row) {
  for (const auto& [k, v] : row.params)
    if (k == "pages" && v.is_number()) return v.get<double>();
  return 0;
}

double fork_stride(const Row& row) {
  for (const auto& [k, v] : row.params)
    if (k == "stride" && v.is_number()) return v.get<double>();
  return 1;
}

std::vector<BreakEven> fork_break_evens(const Results& results) {
  // The configurations with fork_dirty rows, in results.configs order.
  std::vector<const Config*> configs;
  for (const auto& c : results.configs)
    if (std::any_of(results.rows.begin(), results.rows.end(),
                    [&](const Row& r) { return r.bench == "fork_dirty" && r.config == c.id() && r.per_op > 0; }))
      configs.push_back(&c);
  // Pairs: the same switches besides mmu= and ptshare=, and then either the
  // same ptshare (two backends) or the same platform and backend (ptshare
  // off against on).
  auto others = [](const Config& c) {
    Switches s;
    for (const auto& kv : c.switches)
      if (kv.first != "mmu" && kv.first != "ptshare") s.push_back(kv);
    return Config{"", s}.id();
  };
  auto per_op = [&](const std::string& id, double pages, double stride) -> std::optional<double> {
    for (const auto& r : results.rows)
      if (r.bench == "fork_dirty" && r.config == id && fork_pages(r) == pages && fork_stride(r) == stride &&
          r.per_op > 0)
        return r.per_op;
    return std::nullopt;
  };
  // (x, a / b) sorted by x: crossings interpolated on log(ratio) against log(x).
  auto fill = [](BreakEven& be, std::vector<std::pair<double, double>> points) {
    std::sort(points.begin(), points.end());
    be.lo = points.front().first;
    be.hi = points.back().first;
    for (size_t i = 1; i < points.size(); ++i) {
      const auto [x0, r0] = points[i - 1];
      const auto [x1, r1] = points[i];
      if ((r0 < 1) == (r1 < 1)) continue;
      const double f = std::log(r0) / (std::log(r0) - std::log(r1));
      be.crosses.push_back({std::exp(std::log(x0) + f * (std::log(x1) - std::log(x0))), r0 < 1 ? be.a : be.b});
    }
    if (be.crosses.empty()) be.faster = points.front().second < 1 ? be.a : be.b;
  };
  std::vector<BreakEven> out;
  for (size_t i = 0; i < configs.size(); ++i)
    for (size_t j = i + 1; j < configs.size(); ++j) {
      const Config& a = *configs[i];
      const Config& b = *configs[j];
      if (others(a) != others(b)) continue;
      const bool same_ptshare = a.effective("ptshare") == b.effective("ptshare");
      const bool same_backend = a.platform == b.platform && a.get("mmu") == b.get("mmu");
      if (!same_ptshare && !same_backend) continue;
      // Against pages: every page dirtied.
      std::set<double> sizes;
      for (const auto& r : results.rows)
        if (r.bench == "fork_dirty" && r.config == a.id() && fork_stride(r) == 1) sizes.insert(fork_pages(r));
      std::vector<std::pair<double, double>> points;
      for (const double p : sizes) {
        const auto ta = per_op(a.id(), p, 1), tb = per_op(b.id(), p, 1);
        if (ta && tb && p > 0) points.emplace_back(p, *ta / *tb);
      }
      if (points.size() >= 2) {
        BreakEven be;
        be.a = a.id();
        be.b = b.id();
        fill(be, points);
        out.push_back(std::move(be));
      }
      // Against density, at each span both measured at two strides or more.
      std::map<double, std::set<double>> strides;
      for (const auto& r : results.rows)
        if (r.bench == "fork_dirty" && r.config == a.id()) strides[fork_pages(r)].insert(fork_stride(r));
      for (const auto& [pages, set] : strides) {
        std::vector<std::pair<double, double>> dpoints;
        for (const double stride : set) {
          const auto ta = per_op(a.id(), pages, stride), tb = per_op(b.id(), pages, stride);
          if (ta && tb && stride > 0) dpoints.emplace_back(1 / stride, *ta / *tb);
        }
        if (dpoints.size() < 2) continue;
        BreakEven be;
        be.a = a.id();
        be.b = b.id();
        be.density = true;
        be.pages = pages;
        fill(be, dpoints);
        out.push_back(std::move(be));
      }
    }
  return out;
}

bool dense(const Row& r) { return fork_stride(r) == 1; }

}  // namespace pvk::bench
