// Lock statistics: for each lock class, how often a lock of it was taken,
// how often it was already held when asked for (contended), and how many
// times its waiters went round the wait loop (spins). Each CPU counts in
// its own row with plain stores, so taking a lock costs no extra atomic and
// no shared cache line; a reader sums the rows. Under virtual time the
// counts are as deterministic as the run, which is what makes "no kernel
// lock per mprotect" or "no contention between two processes' mm calls"
// something a test can assert.
//
// The classes are the PVK_LOCK_COUNTER lines of base/counters.inc, so the
// bench records and the shutdown `locks` record carry them like any counter.
#pragma once
#include <stdint.h>

namespace pvk {

enum class LockStat : uint8_t {
#define PVK_LOCK_COUNTER(cls) cls,
#include "base/counters.inc"
  count,
  none = 0xff,  // a class nobody counts (the host tests' own)
};
inline constexpr unsigned kLockStats = static_cast<unsigned>(LockStat::count);

struct LockCounts {
  uint64_t acquired = 0;
  uint64_t contended = 0;
  uint64_t spins = 0;
};

// The counts of one class, summed over every CPU.
LockCounts lock_counts(LockStat s);
// Its name in records (base/counters.inc's).
const char* lock_stat_name(LockStat s);

}  // namespace pvk
