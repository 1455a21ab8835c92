#include "guest/console/record.h"

#include "guest/console/console.h"
#include "guest/lib/format.h"
#include "guest/lib/kstring.h"

namespace pvk {

Record::Record(const char* event) : Record("event", event) {}

Record::Record(const char* k, const char* value) {
  append("@pvk {", 6);
  key(k);
  append_escaped(value);
}

Record::~Record() {
  append("}\n", 2);
  if (overflow_) {
    // A truncated record would be invalid JSON; say so in one valid record.
    static const char kMsg[] = "@pvk {\"event\":\"error\",\"what\":\"record too long\"}\n";
    console_write(kMsg, sizeof kMsg - 1);
    return;
  }
  console_write(buf_, len_);
}

void Record::append(const char* s, size_t n) {
  if (len_ + n > sizeof buf_) {
    overflow_ = true;
    return;
  }
  memcpy(buf_ + len_, s, n);
  len_ += n;
}

void Record::append_escaped(const char* s) {
  append("\"", 1);
  for (; *s; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', static_cast<char>(c)};
      append(e, 2);
    } else if (c < 0x20) {
      char e[8];
      size_t n = format(e, sizeof e, "\\u%04x", c);
      append(e, n);
    } else {
      append(s, 1);
    }
  }
  append("\"", 1);
}

void Record::key(const char* k) {
  if (buf_[len_ - 1] != '{') append(",", 1);
  append_escaped(k);
  append(":", 1);
}

Record& Record::str(const char* k, const char* value) {
  key(k);
  append_escaped(value);
  return *this;
}

Record& Record::u64(const char* k, uint64_t value) {
  key(k);
  char num[24];
  append(num, format(num, sizeof num, "%lu", value));
  return *this;
}

Record& Record::i64(const char* k, int64_t value) {
  key(k);
  char num[24];
  append(num, format(num, sizeof num, "%ld", value));
  return *this;
}

Record& Record::boolean(const char* k, bool value) {
  key(k);
  if (value)
    append("true", 4);
  else
    append("false", 5);
  return *this;
}

}  // namespace pvk
