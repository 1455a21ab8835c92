// The checks of the project's stand-alone test programs (fstest,
// exectest): a failed check prints "<program>: line N: what (got V)" and
// is counted; the program reports the totals in its record at the end.
#pragma once
#include <stdint.h>

#include "bench/libc/user.h"

namespace pvk::user::checks {

inline unsigned g_checks = 0, g_failures = 0;
inline const char* g_program = "test";  // set by main

inline void check(bool ok, int line, const char* what, int64_t got) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  printf("%s: line %d: %s (got %ld)\n", g_program, line, what, got);
}

}  // namespace pvk::user::checks

#define CHECK(cond) ::pvk::user::checks::check((cond), __LINE__, #cond, 0)
#define CHECK_EQ(expr, want)                                                                           \
  do {                                                                                                 \
    const int64_t got_ = static_cast<int64_t>(expr);                                                   \
    ::pvk::user::checks::check(got_ == static_cast<int64_t>(want), __LINE__, #expr " == " #want, got_); \
  } while (0)
