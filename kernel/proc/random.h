// Random bytes for user programs (AT_RANDOM, getrandom): a splitmix64
// stream seeded once from the TSC. Not cryptographic — pvk is a measuring
// kernel — but never the same two boots running on a real clock, and the
// same stream in a virtual-time boot, so such a run repeats exactly. Safe
// from any CPU without a lock (one atomic word).
#pragma once
#include <stddef.h>

namespace pvk {

void random_bytes(void* dst, size_t n);

}  // namespace pvk
