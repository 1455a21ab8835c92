// The median of a small array, for code without a C++ library (the
// kernel's self-tests, the user-mode tests): sorts in place (insertion
// sort: the arrays are a handful of timings) and returns the lower middle
// for an even count, as the bench driver does.
#pragma once

#include "base/lib/types.h"

namespace pvk {

inline uint64_t sort_and_median(uint64_t* v, unsigned n) {
  if (n == 0) return 0;
  for (unsigned i = 1; i < n; ++i)
    for (unsigned j = i; j > 0 && v[j - 1] > v[j]; --j) {
      const uint64_t t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return v[(n - 1) / 2];
}

}  // namespace pvk
