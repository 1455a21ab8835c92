// Item options (item_options.h).
#include "bench/item_options.h"

#include "base/lib/format.h"

namespace bench {

namespace {

// A word value (bench.h, word_value): 1..kMaxWord letters a-z.
bool parse_word(const char* s, uint64_t* out) {
  size_t n = 0;
  for (; s[n]; ++n)
    if (n == kMaxWord || s[n] < 'a' || s[n] > 'z') return false;
  if (n == 0) return false;
  *out = word_value(s);
  return true;
}

}  // namespace

void word_text(uint64_t v, char* out) {
  unsigned n = 0;
  for (; n < kMaxWord; ++n) {
    const char c = static_cast<char>(v >> (8 * n) & 0xff);
    if (!c) break;
    out[n] = c;
  }
  out[n] = 0;
}

bool parse_options(const char* s, Options& opts, char* why, size_t why_cap) {
  while (*s) {
    if (opts.n == sizeof opts.opt / sizeof opts.opt[0]) {
      pvk::format(why, why_cap, "too many options");
      return false;
    }
    Option& o = opts.opt[opts.n];
    o = Option{};
    size_t k = 0;
    while (*s && *s != '=' && *s != ':') {
      if (k + 1 < sizeof o.key) o.key[k++] = *s;
      ++s;
    }
    o.key[k] = 0;
    if (*s != '=' || k == 0) {
      pvk::format(why, why_cap, "option '%s' needs key=value", o.key);
      return false;
    }
    ++s;
    for (;;) {
      char num[24];
      size_t m = 0;
      while (*s && *s != '+' && *s != ':') {
        if (m + 1 < sizeof num) num[m++] = *s;
        ++s;
      }
      num[m] = 0;
      if (o.n == sizeof o.values / sizeof o.values[0] || (!parse_u64(num, &o.values[o.n]) && !parse_word(num, &o.values[o.n]))) {
        pvk::format(why, why_cap, "bad value '%s' for '%s'", num, o.key);
        return false;
      }
      ++o.n;
      if (*s != '+') break;
      ++s;
    }
    for (unsigned i = 0; i < opts.n; ++i)
      if (strcmp(opts.opt[i].key, o.key) == 0) {
        pvk::format(why, why_cap, "option '%s' given twice", o.key);
        return false;
      }
    ++opts.n;
    if (*s == ':') ++s;
  }
  return true;
}

Option* find_option(Options& opts, const char* key) {
  for (unsigned i = 0; i < opts.n; ++i)
    if (strcmp(opts.opt[i].key, key) == 0) {
      opts.opt[i].used = true;
      return &opts.opt[i];
    }
  return nullptr;
}

bool has_param(const BenchDef& b, const char* key) {
  if (strcmp(key, "reps") == 0) return true;
  for (const ParamDef& p : b.params)
    if (p.key && strcmp(p.key, key) == 0) return true;
  return false;
}

}  // namespace bench
