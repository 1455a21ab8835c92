// "@pvk {json}" records: one JSON object per console line (docs/design.md,
// console protocol). The host parses them with a real JSON library; this
// writer only has to produce valid JSON for flat objects of strings,
// integers and booleans, so it escapes strings and nothing more.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace pvk {

class Record {
 public:
  // Starts a record whose first member is {"event": event}.
  explicit Record(const char* event);
  // Starts a record whose first member is {key: value}, e.g. {"bench": name}.
  Record(const char* key, const char* value);
  // A record longer than the usual kilobyte (a report with a field per
  // CPU), built in the caller's storage instead.
  Record(const char* event, char* storage, size_t capacity);
  Record(const Record&) = delete;
  Record& operator=(const Record&) = delete;
  ~Record();  // emits the line

  Record& str(const char* key, const char* value);
  Record& u64(const char* key, uint64_t value);
  Record& i64(const char* key, int64_t value);
  Record& boolean(const char* key, bool value);

 private:
  void key(const char* k);
  void append(const char* s, size_t n);
  void append_escaped(const char* s);

  char inline_[1024];
  char* buf_ = inline_;
  size_t cap_ = sizeof inline_;
  size_t len_ = 0;
  bool overflow_ = false;
};

}  // namespace pvk
