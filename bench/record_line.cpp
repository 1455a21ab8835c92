// The driver's record lines (record_line.h).
#include "bench/record_line.h"

#include "bench/bench.h"
#include "base/lib/format.h"

namespace bench {

unsigned g_records = 0, g_failed = 0;

Line::Line(const char* key, const char* value) {
  add("@pvk {");
  str(key, value);
}

Line::~Line() {
  add("}\n");
  if (overflow_) {
    print("@pvk {\"event\":\"error\",\"what\":\"bench record too long\"}\n");
    return;
  }
  write_all(1, buf_, len_);
}

Line& Line::str(const char* k, const char* v) {
  key(k);
  add("\"");
  for (; *v; ++v) {
    char c = *v;
    if (c == '"' || c == '\\') {
      char e[3] = {'\\', c, 0};
      add(e);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      add("?");
    } else {
      char e[2] = {c, 0};
      add(e);
    }
  }
  add("\"");
  return *this;
}

Line& Line::u64(const char* k, uint64_t v) {
  key(k);
  char num[24];
  pvk::format(num, sizeof num, "%lu", v);
  add(num);
  return *this;
}

Line& Line::boolean(const char* k, bool v) {
  key(k);
  add(v ? "true" : "false");
  return *this;
}

void Line::key(const char* k) {
  if (len_ && buf_[len_ - 1] != '{') add(",");
  add("\"");
  add(k);
  add("\":");
}

void Line::add(const char* s) {
  const size_t n = strlen(s);
  if (len_ + n > sizeof buf_) {
    overflow_ = true;
    return;
  }
  memcpy(buf_ + len_, s, n);
  len_ += n;
}

void item_error(const char* item, const char* what) {
  printf("bench: %s: FAIL %s\n", item, what);
  Line("bench", item).boolean("pass", false).str("error", what);
  count_record(false);
}

}  // namespace bench
