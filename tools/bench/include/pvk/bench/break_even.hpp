// fork_dirty analysis: where two configurations' per-fork times cross.
#pragma once

#include "pvk/bench/results.hpp"

#include <string>
#include <vector>

namespace pvk::bench {

// fork_dirty's parameters: `pages` (the span) and `stride` (every stride-th
// page dirtied; 1 when the record has none, as before the sparse fork).
double fork_pages(const Row& row);
double fork_stride(const Row& row);

// Where two configurations' fork_dirty per-fork times (per-op medians) cross:
// against the dirty page count (stride=1 rows) or, the sparse fork,
// against density (1/stride, the share of each L1 table's entries that are
// dirty) at one span of `pages`. Pairs: configurations that differ only in
// the backend (mmu=, or the platform) or only in ptshare=, every other
// switch equal. Crossings are interpolated on log(time ratio) against
// log(pages) or log(density).
struct BreakEven {
  std::string a, b;      // configuration ids, in results.configs order
  bool density = false;  // false: against pages; true: against density at `pages`
  double pages = 0;      // the span (density)
  struct Cross {
    double at;                 // pages, or density (0..1]
    std::string faster_below;  // the configuration faster below it (fewer pages, lower density)
  };
  std::vector<Cross> crosses;
  std::string faster;   // without a crossing: the one faster wherever both were measured
  double lo = 0, hi = 0;  // the range both were measured over (pages, or density)
};
std::vector<BreakEven> fork_break_evens(const Results& results);

// Whether a row is fork_dirty at full density (stride=1, or no stride: a
// record from before the sparse fork).
bool dense(const Row& row);

}  // namespace pvk::bench
