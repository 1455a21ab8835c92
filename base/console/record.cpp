#include "base/console/record.h"

#include "base/console/console.h"
#include "base/lib/format.h"
#include "base/lib/kstring.h"

namespace pvk {

Record::Record(const char* event) : Record("event", event) {}

Record::Record(const char* k, const char* value) {
  append("@pvk {", 6);
  key(k);
  append_escaped(value);
}

Record::Record(const char* event, char* storage, size_t capacity) : buf_(storage), cap_(capacity) {
  append("@pvk {", 6);
  key("event");
  append_escaped(event);
}

Record::~Record() {
  append("}\n", 2);
  console_begin_line();
  if (overflow_) {
    // A truncated record would be invalid JSON; say so in one valid record.
    static const char kMsg[] = "@pvk {\"event\":\"error\",\"what\":\"record too long\"}\n";
    console_write(kMsg, sizeof kMsg - 1);
    return;
  }
  console_write(buf_, len_);
}

void Record::append(const char* s, size_t n) {
  if (len_ + n > cap_) {
    overflow_ = true;
    return;
  }
  memcpy(buf_ + len_, s, n);
  len_ += n;
}

namespace {

// Length of the well-formed UTF-8 sequence at s (1..4), or 0 if the bytes
// there are not one (stray continuation, overlong form, surrogate, > U+10FFFF,
// cut short by the terminator).
size_t utf8_sequence_length(const unsigned char* s) {
  const unsigned c = s[0];
  size_t len;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07;
  else return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xc0) != 0x80) return 0;  // also stops at the terminator
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return len;
}

}  // namespace

// JSON strings must be valid UTF-8: text from outside (the command line, a
// program name) may not be, so a byte that starts no well-formed sequence
// is written as U+FFFD and the record stays parseable.
void Record::append_escaped(const char* s) {
  append("\"", 1);
  while (*s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', static_cast<char>(c)};
      append(e, 2);
      ++s;
    } else if (c < 0x20 || c == 0x7f) {
      char e[8];
      size_t n = format(e, sizeof e, "\\u%04x", c);
      append(e, n);
      ++s;
    } else if (const size_t len = utf8_sequence_length(reinterpret_cast<const unsigned char*>(s))) {
      append(s, len);
      s += len;
    } else {
      append("\\ufffd", 6);
      ++s;
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
