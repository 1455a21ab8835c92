// Programs as items: `hostile[:timeout=S:only=INDEX]` and
// `sysfuzz[:seed=N:iters=N:...]` (their keys: bench/benches.inc) fork and
// execve the embedded program of that name with one key=value argument per
// option; the item passes iff the program exits 0 and every frame it used
// came back. Their own records (one per attack / per fuzzed child, and a
// summary) come first; then {"bench":NAME,"args":..,"pass":..}.
#pragma once

namespace bench {

// Runs `item` (its name `name`, its options `opts`, "k=v:k=v") if `name`
// is a program item; false when it is not one.
bool run_program_item(const char* name, const char* item, const char* opts);

// Reaps children a benchmark left behind; returns how many.
unsigned reap_leftovers();

}  // namespace bench
