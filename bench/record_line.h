// The driver's records: one flat JSON object per line ("@pvk {...}"),
// written with one write() so lines of concurrent writers never interleave
// (docs/benchmarks.md, "Records").
#pragma once
#include <stddef.h>
#include <stdint.h>

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

  char buf_[6144];  // fork_dirty: ~2.4 KB (3 phases x every counter)
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
