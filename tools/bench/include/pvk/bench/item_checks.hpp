// What the host knows about an item before anything boots: whether the
// driver would take it (the catalogue, bench/benches.inc), and how much
// memory it maps, so a plan refuses a misspelt item in one line instead of
// booting it and sizes each boot's machine from what it will run.
#pragma once

#include "pvk/bench/items.hpp"

#include <vector>

namespace pvk::bench {

// Throws std::invalid_argument, one line, for what the driver would refuse:
// a name that is no benchmark, suite or program item, an option the
// benchmark (or, for a suite, every member) does not take or gives twice,
// a value that is not a number (or, for a benchmark's parameter, a '+'
// list of at most 16 numbers), reps that is not one number in 1..64.
void check_item(const Item& item);

// The memory the item's largest parameter set maps, in MiB (bench/
// benches.inc, PVK_NEEDS; a suite: its largest member's, each with the
// options it takes, the smoke suite with its tiny sizes); 0 for program
// items and benchmarks that map nothing to speak of.
double item_memory_mib(const Item& item);
// The most any of the items needs (they run one after another).
double items_memory_mib(const std::vector<Item>& items);

}  // namespace pvk::bench
