// An item's options as the driver takes them: "k=v1+v2:k2=v" after the
// benchmark's name, each value a number, lists joined with '+'.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "bench/bench.h"

namespace bench {

struct Option {
  char key[32];
  uint64_t values[16];
  unsigned n = 0;
  bool used = false;
};

struct Options {
  Option opt[8];
  unsigned n = 0;
};

// Parses the options into opts; false and why on a malformed, repeated or
// non-numeric option (or too many of them).
bool parse_options(const char* s, Options& opts, char* why, size_t why_cap);

// Option `key` of opts (or nullptr); marks it used.
Option* find_option(Options& opts, const char* key);

// Whether benchmark b takes `key` (reps: every benchmark).
bool has_param(const BenchDef& b, const char* key);

}  // namespace bench
