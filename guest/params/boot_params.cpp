#include "guest/params/boot_params.h"

#include <stddef.h>

#include "guest/lib/format.h"
#include "guest/lib/kstring.h"

namespace pvk {
namespace {

struct Choice {
  const char* word;
  uint8_t value;
};

constexpr Choice kBackends[] = {{"native", uint8_t(MmuBackend::Native)},
                                {"batched", uint8_t(MmuBackend::Batched)},
                                {"direct", uint8_t(MmuBackend::Direct)},
                                {"wrpt", uint8_t(MmuBackend::Wrpt)}};
constexpr Choice kPteAccess[] = {{"attrs", uint8_t(PteAccess::Attrs)}, {"flags", uint8_t(PteAccess::Flags)}};
constexpr Choice kOnOff[] = {{"on", uint8_t(Switch::On)}, {"off", uint8_t(Switch::Off)}};

enum class Kind { Choice, Number, Text };

struct Param {
  const char* key;
  Kind kind;
  const Choice* choices;
  size_t nchoices;
  size_t offset;  // of the field in BootParams: a uint8_t-sized enum, a uint32_t or a char array
  size_t size;
  uint32_t min, max;
};

template <size_t N>
constexpr Param choice(const char* key, const Choice (&c)[N], size_t offset) {
  return {key, Kind::Choice, c, N, offset, 1, 0, 0};
}
constexpr Param number(const char* key, size_t offset, uint32_t min, uint32_t max) {
  return {key, Kind::Number, nullptr, 0, offset, sizeof(uint32_t), min, max};
}
constexpr Param text(const char* key, size_t offset, size_t size) {
  return {key, Kind::Text, nullptr, 0, offset, size, 0, 0};
}
static_assert(sizeof(MmuBackend) == 1 && sizeof(PteAccess) == 1 && sizeof(Switch) == 1);

// The one table of boot parameters.
constexpr Param kParams[] = {
    choice("mmu", kBackends, offsetof(BootParams, mmu)),
    choice("pte", kPteAccess, offsetof(BootParams, pte)),
    choice("pvpatch", kOnOff, offsetof(BootParams, pvpatch)),
    number("batch", offsetof(BootParams, batch), 1, kMaxBatch),
    choice("zero_page", kOnOff, offsetof(BootParams, zero_page)),
    choice("pgd_cache", kOnOff, offsetof(BootParams, pgd_cache)),
    text("selftest", offsetof(BootParams, selftest), sizeof(BootParams::selftest)),
    text("bench", offsetof(BootParams, bench), sizeof(BootParams::bench)),
    text("init", offsetof(BootParams, init), sizeof(BootParams::init)),
};
constexpr size_t kNumParams = sizeof(kParams) / sizeof(kParams[0]);

bool word_equals(const char* word, size_t len, const char* s) { return strlen(s) == len && !strncmp(word, s, len); }

void fail(ParseResult& r, const char* fmt, const char* a, size_t alen, const char* b = "", size_t blen = 0,
          const char* c = "") {
  char aa[64], bb[64];
  size_t an = alen < sizeof aa - 1 ? alen : sizeof aa - 1;
  memcpy(aa, a, an), aa[an] = 0;
  size_t bn = blen < sizeof bb - 1 ? blen : sizeof bb - 1;
  memcpy(bb, b, bn), bb[bn] = 0;
  r.ok = false;
  format(r.error, sizeof r.error, fmt, aa, bb, c);
}

void list_choices(const Param& p, char* out, size_t cap) {
  size_t n = 0;
  out[0] = 0;
  for (size_t i = 0; i < p.nchoices; ++i) n += format(out + n, cap - n, i ? "|%s" : "%s", p.choices[i].word);
}

bool parse_value(const Param& p, const char* v, size_t vlen, BootParams& out, ParseResult& r) {
  char accepted[96];
  switch (p.kind) {
    case Kind::Choice:
      for (size_t i = 0; i < p.nchoices; ++i) {
        if (word_equals(v, vlen, p.choices[i].word)) {
          *(reinterpret_cast<uint8_t*>(&out) + p.offset) = p.choices[i].value;
          return true;
        }
      }
      list_choices(p, accepted, sizeof accepted);
      fail(r, "pvk: boot parameter '%s': bad value '%s' (accepted: %s)", p.key, strlen(p.key), v, vlen, accepted);
      return false;
    case Kind::Number: {
      uint64_t n = 0;
      bool digits = vlen > 0 && vlen <= 10;
      for (size_t i = 0; digits && i < vlen; ++i) {
        if (v[i] < '0' || v[i] > '9') digits = false;
        n = n * 10 + uint64_t(v[i] - '0');
      }
      if (!digits || n < p.min || n > p.max) {
        format(accepted, sizeof accepted, "an integer %u..%u", p.min, p.max);
        fail(r, "pvk: boot parameter '%s': bad value '%s' (accepted: %s)", p.key, strlen(p.key), v, vlen, accepted);
        return false;
      }
      const uint32_t value = static_cast<uint32_t>(n);
      memcpy(reinterpret_cast<char*>(&out) + p.offset, &value, sizeof value);
      return true;
    }
    case Kind::Text: {
      char* field = reinterpret_cast<char*>(&out) + p.offset;
      if (vlen == 0 || vlen >= p.size) {
        format(accepted, sizeof accepted, "1..%zu characters", p.size - 1);
        fail(r, "pvk: boot parameter '%s': bad value '%s' (accepted: %s)", p.key, strlen(p.key), v, vlen, accepted);
        return false;
      }
      memcpy(field, v, vlen);
      field[vlen] = 0;
      return true;
    }
  }
  return false;
}

}  // namespace

const char* backend_name(MmuBackend b) {
  switch (b) {
    case MmuBackend::Default: return "default";
    case MmuBackend::Native: return "native";
    case MmuBackend::Batched: return "batched";
    case MmuBackend::Direct: return "direct";
    case MmuBackend::Wrpt: return "wrpt";
  }
  return "?";
}

ParseResult parse_boot_params(const char* cmdline, BootParams& out) {
  ParseResult r;
  bool seen[kNumParams] = {};
  const char* p = cmdline ? cmdline : "";
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == '\n') ++p;
    if (!*p) break;
    const char* word = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n') ++p;
    const size_t len = static_cast<size_t>(p - word);
    const char* eq = word;
    while (eq < p && *eq != '=') ++eq;
    const size_t klen = static_cast<size_t>(eq - word);
    const Param* param = nullptr;
    size_t index = 0;
    for (; index < kNumParams; ++index) {
      if (word_equals(word, klen, kParams[index].key)) {
        param = &kParams[index];
        break;
      }
    }
    if (!param) {
      fail(r, "pvk: unknown boot parameter '%s' (known: mmu pte pvpatch batch zero_page pgd_cache selftest bench init)",
           word, klen);
      return r;
    }
    if (eq == p) {
      fail(r, "pvk: boot parameter '%s' needs a value ('%s=...')", word, len, word, len);
      return r;
    }
    if (seen[index]) {
      fail(r, "pvk: boot parameter '%s' given twice", word, klen);
      return r;
    }
    seen[index] = true;
    if (!parse_value(*param, eq + 1, static_cast<size_t>(p - eq - 1), out, r)) return r;
  }
  return r;
}

}  // namespace pvk
