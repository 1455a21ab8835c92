// The driver's records: one flat JSON object per line ("@pvk {...}"),
// written with one write() so lines of concurrent writers never interleave
// (docs/benchmarks.md, "Records").
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "bench/bench.h"

namespace bench {

class Line {
 public:
  Line(const char* key, const char* value);
  ~Line();  // writes the line
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;

  Line& str(const char* k, const char* v);
  Line& u64(const char* k, uint64_t v);
  Line& boolean(const char* k, bool v);

 private:
  void key(const char* k);
  void add(const char* s);

  // The longest record is fork_dirty's: every extra field a Run can carry
  // (kMaxExtras, sized from the counter list), each at most a ~48-byte
  // phase-prefixed name and a 20-digit value with its punctuation.
  static constexpr size_t kBytes = kMaxExtras * 80 + 2048;
  char buf_[kBytes];
  size_t len_ = 0;
  bool overflow_ = false;
};

// The records the driver wrote and how many of them failed (bench_done).
extern unsigned g_records, g_failed;
inline void count_record(bool pass) {
  ++g_records;
  if (!pass) ++g_failed;
}

// A failed record for an item that could not even start, and its line on
// the console.
void item_error(const char* item, const char* what);

}  // namespace bench
