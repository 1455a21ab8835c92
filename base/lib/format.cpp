#include "base/lib/format.h"

#include <stdint.h>

namespace pvk {
namespace {

struct Out {
  char* buf;
  size_t cap;
  size_t len = 0;
  void put(char c) {
    if (len + 1 < cap) buf[len] = c;
    ++len;
  }
};

// Zero padding goes between the sign and the digits, space padding before
// the sign (as printf does).
void put_number(Out& o, uint64_t v, unsigned base, bool upper, int width, char pad, bool negative) {
  char tmp[24];
  int n = 0;
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  do {
    tmp[n++] = digits[v % base];
    v /= base;
  } while (v);
  const int len = n + (negative ? 1 : 0);
  if (pad == ' ')
    for (int i = len; i < width; ++i) o.put(' ');
  if (negative) o.put('-');
  if (pad == '0')
    for (int i = len; i < width; ++i) o.put('0');
  while (n) o.put(tmp[--n]);
}

void put_unsigned(Out& o, uint64_t v, unsigned base, bool upper, int width, char pad) {
  put_number(o, v, base, upper, width, pad, false);
}

}  // namespace

size_t vformat(char* buf, size_t cap, const char* fmt, va_list ap) {
  Out o{buf, cap};
  for (const char* p = fmt; *p; ++p) {
    if (*p != '%') {
      o.put(*p);
      continue;
    }
    ++p;
    char pad = ' ';
    int width = 0;
    if (*p == '0') pad = '0', ++p;
    while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
    int precision = -1;  // for %s: at most this many characters
    if (*p == '.') {
      ++p;
      precision = 0;
      if (*p == '*') {
        precision = va_arg(ap, int);
        ++p;
      } else {
        while (*p >= '0' && *p <= '9') precision = precision * 10 + (*p++ - '0');
      }
    }
    int longs = 0;
    while (*p == 'l' || *p == 'z') ++longs, ++p;
    auto get_unsigned = [&]() -> uint64_t {
      return longs ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
    };
    switch (*p) {
      case 'd':
      case 'i': {
        int64_t v = longs ? va_arg(ap, int64_t) : va_arg(ap, int);
        const bool negative = v < 0;
        const uint64_t magnitude = negative ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
        put_number(o, magnitude, 10, false, width, pad, negative);
        break;
      }
      case 'u': put_unsigned(o, get_unsigned(), 10, false, width, pad); break;
      case 'x': put_unsigned(o, get_unsigned(), 16, false, width, pad); break;
      case 'X': put_unsigned(o, get_unsigned(), 16, true, width, pad); break;
      case 'p':
        o.put('0'), o.put('x');
        put_unsigned(o, reinterpret_cast<uint64_t>(va_arg(ap, void*)), 16, false, 16, '0');
        break;
      case 'c': o.put(static_cast<char>(va_arg(ap, int))); break;
      case 's': {
        const char* s = va_arg(ap, const char*);
        if (!s) s = "(null)";
        int n = 0;
        int len = 0;
        while ((precision < 0 || len < precision) && s[len]) ++len;  // never read past the precision
        for (int pad_n = len; pad_n < width; ++pad_n) o.put(' ');   // right-justified, as printf
        for (; n < len; ++n) o.put(s[n]);
        break;
      }
      case '%': o.put('%'); break;
      case '\0': --p; break;
      default: o.put('%'), o.put(*p); break;
    }
  }
  if (cap) buf[o.len < cap ? o.len : cap - 1] = '\0';
  return o.len;
}

size_t format(char* buf, size_t cap, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t n = vformat(buf, cap, fmt, ap);
  va_end(ap);
  return n;
}

}  // namespace pvk
