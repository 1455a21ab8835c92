// Placing a test's threads on CPUs of their own: the CPUs this thread may
// run on, the n-th of them, and pinning to one. The SMP race and stress
// tests spread their workers with these so each runs beside the others.
#pragma once
#include <stdint.h>

#include "bench/libc/user.h"

namespace usertest {

// The CPUs this thread may run on (the first 64; CPU 0 if the call fails).
inline uint64_t cpus_mask() {
  uint64_t words[16] = {};
  return pvk::user::sched_getaffinity(0, sizeof words, words) > 0 ? words[0] : 1;
}

// The n-th CPU of a non-empty mask, wrapping, as a one-bit mask: each
// thread gets its own while there are enough.
inline uint64_t nth_cpu(uint64_t mask, unsigned n) {
  n %= static_cast<unsigned>(__builtin_popcountll(mask));
  for (unsigned c = 0; c < 64; ++c)
    if ((mask >> c & 1) && n-- == 0) return uint64_t{1} << c;
  return 1;
}

inline void pin(uint64_t one) { pvk::user::sched_setaffinity(0, sizeof one, &one); }

}  // namespace usertest
