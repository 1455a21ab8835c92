#include "kernel/params/boot_params.h"

#include <stdarg.h>
#include <stddef.h>

#include "base/lib/format.h"
#include "base/lib/kstring.h"

namespace pvk {
namespace {

struct Choice {
  const char* word;
  uint8_t value;
};

// mmu='s words: the backends' rows.
constexpr Choice kBackends[] = {
#define PVK_BACKEND(id, name, platform, faults, params, role, weight, make, finish) {name, uint8_t(MmuBackend::id)},
#include "pvops/backends/backends.inc"
#undef PVK_BACKEND
};
constexpr Choice kPteAccess[] = {{"attrs", uint8_t(PteAccess::Attrs)}, {"flags", uint8_t(PteAccess::Flags)}};
constexpr Choice kOnOff[] = {{"on", uint8_t(Switch::On)}, {"off", uint8_t(Switch::Off)}};
constexpr Choice kSchedCpus[] = {{"all", uint8_t(SchedCpus::All)}, {"boot", uint8_t(SchedCpus::Boot)}};
constexpr Choice kFileMap[] = {{"eager", uint8_t(FileMap::Eager)}, {"demand", uint8_t(FileMap::Demand)}};
constexpr Choice kShootdown[] = {{"hypercall", uint8_t(Shootdown::Hypercall)}, {"ipi", uint8_t(Shootdown::Ipi)}};

enum class Kind { Choice, Number, Text, List, Seed, Fail };

struct Param {
  const char* key;
  Kind kind;
  const Choice* choices;
  size_t nchoices;
  size_t offset;  // of the field in BootParams: a uint8_t-sized enum, a uint32_t, a uint64_t, a char array
  size_t size;
  uint32_t min, max;  // Number: the range; List: the most items
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
// Text that is a comma-separated list of at most max_items non-empty items.
constexpr Param list(const char* key, size_t offset, size_t size, uint32_t max_items) {
  return {key, Kind::List, nullptr, 0, offset, size, 1, max_items};
}
static_assert(sizeof(MmuBackend) == 1 && sizeof(PteAccess) == 1 && sizeof(Switch) == 1 && sizeof(Shootdown) == 1 &&
              sizeof(FileMap) == 1);

constexpr const char* kFailKinds[] = {"mmu_update", "mmuext_op", "frame_alloc"};
static_assert(sizeof kFailKinds / sizeof kFailKinds[0] == size_t(FailKind::Count));

// The one table of boot parameters.
constexpr Param kParams[] = {
    choice("mmu", kBackends, offsetof(BootParams, mmu)),
    choice("pte", kPteAccess, offsetof(BootParams, pte)),
    choice("pvpatch", kOnOff, offsetof(BootParams, pvpatch)),
    number("batch", offsetof(BootParams, batch), 1, kMaxBatch),
    number("auto_threshold", offsetof(BootParams, auto_threshold), 1, 512),
    choice("zero_page", kOnOff, offsetof(BootParams, zero_page)),
    choice("pgd_cache", kOnOff, offsetof(BootParams, pgd_cache)),
    choice("ptshare", kOnOff, offsetof(BootParams, ptshare)),
    choice("file_map", kFileMap, offsetof(BootParams, file_map)),
    number("fault_around", offsetof(BootParams, fault_around), 1, 512),
    choice("sched_cpus", kSchedCpus, offsetof(BootParams, sched_cpus)),
    choice("shootdown", kShootdown, offsetof(BootParams, shootdown)),
    text("selftest", offsetof(BootParams, selftest), sizeof(BootParams::selftest)),
    list("bench", offsetof(BootParams, bench), sizeof(BootParams::bench), kMaxBenchItems),
    text("init", offsetof(BootParams, init), sizeof(BootParams::init)),
    list("init_args", offsetof(BootParams, init_args), sizeof(BootParams::init_args), kMaxBenchItems),
    {"fail", Kind::Fail, nullptr, 0, offsetof(BootParams, fail), sizeof(BootParams::fail), 0, 0},
    {"fail_seed", Kind::Seed, nullptr, 0, offsetof(BootParams, fail_seed), sizeof(uint64_t), 0, 0},
};
constexpr size_t kNumParams = sizeof(kParams) / sizeof(kParams[0]);

bool word_equals(const char* word, size_t len, const char* s) { return strlen(s) == len && !strncmp(word, s, len); }

// Copies at most cap-1 bytes of a word for an error message, each byte
// outside printable ASCII as '?': the message stays one line (no '\r', no
// escape sequences) and valid UTF-8 whatever the command line holds.
void quote(char* out, size_t cap, const char* word, size_t len) {
  size_t n = len < cap - 1 ? len : cap - 1;
  for (size_t i = 0; i < n; ++i) out[i] = word[i] >= 0x20 && word[i] <= 0x7e ? word[i] : '?';
  out[n] = 0;
}

// A refusal echoing words of the command line: fmt takes three strings,
// the quoted a and b and then c.
ParamError refusal(const char* fmt, const char* a, size_t alen, const char* b = "", size_t blen = 0,
                   const char* c = "") {
  char aa[64], bb[64];
  quote(aa, sizeof aa, a, alen);
  quote(bb, sizeof bb, b, blen);
  ParamError e;
  format(e.message, sizeof e.message, fmt, aa, bb, c);
  return e;
}

void list_choices(const Param& p, char* out, size_t cap) {
  size_t n = 0;
  out[0] = 0;
  for (size_t i = 0; i < p.nchoices; ++i) n += format(out + n, cap - n, i ? "|%s" : "%s", p.choices[i].word);
}

// Decimal digits only (no sign, no 0x, no spaces), at most max.
bool parse_decimal(const char* v, size_t vlen, uint64_t max, uint64_t& out) {
  if (vlen == 0) return false;
  uint64_t n = 0;
  for (size_t i = 0; i < vlen; ++i) {
    if (v[i] < '0' || v[i] > '9') return false;
    const uint64_t d = uint64_t(v[i] - '0');
    if (n > (max - d) / 10) return false;
    n = n * 10 + d;
  }
  out = n;
  return true;
}

const char* find(const char* p, const char* end, char c) {
  while (p < end && *p != c) ++p;
  return p;
}

// fail=KIND:NUM/DEN[,KIND:NUM/DEN...]: every item well-formed, each kind once.
ErrorOr<void, ParamError> parse_fail(const char* v, size_t vlen, BootParams& out) {
  FailRate rates[size_t(FailKind::Count)] = {};
  bool given[size_t(FailKind::Count)] = {};
  const char* const end = v + vlen;
  for (const char* item = v;; ) {
    const char* item_end = find(item, end, ',');
    const char* colon = find(item, item_end, ':');
    const char* slash = find(colon, item_end, '/');
    const size_t ilen = size_t(item_end - item);
    const char* why = nullptr;
    size_t k = 0;
    while (k < size_t(FailKind::Count) && !word_equals(item, size_t(colon - item), kFailKinds[k])) ++k;
    uint64_t num = 0, den = 0;
    if (k == size_t(FailKind::Count))
      why = "unknown kind";
    else if (given[k])
      why = "kind given twice";
    else if (colon == item_end || slash == item_end ||
             !parse_decimal(colon + 1, size_t(slash - colon - 1), UINT32_MAX, num) ||
             !parse_decimal(slash + 1, size_t(item_end - slash - 1), UINT32_MAX, den))
      why = "not KIND:NUM/DEN with 32-bit integers";
    else if (den == 0)
      why = "denominator 0";
    else if (num > den)
      why = "NUM above DEN";
    if (why)
      return refusal(
          "pvk: boot parameter 'fail': bad item '%s': %s (accepted: KIND:NUM/DEN,... with KIND "
          "mmu_update|mmuext_op|frame_alloc, each once, 0 <= NUM <= DEN, DEN >= 1)",
          item, ilen, why, strlen(why));
    given[k] = true;
    rates[k] = {uint32_t(num), uint32_t(den)};
    if (item_end == end) break;
    item = item_end + 1;
  }
  memcpy(out.fail, rates, sizeof rates);
  return {};
}

// A list value (bench=): no empty item, at most p.max items.
ErrorOr<void, ParamError> check_list(const Param& p, const char* v, size_t vlen) {
  size_t items = 1;
  bool empty = v[0] == ',' || v[vlen - 1] == ',';
  for (size_t i = 0; i < vlen; ++i) {
    if (v[i] != ',') continue;
    ++items;
    if (i + 1 < vlen && v[i + 1] == ',') empty = true;
  }
  if (empty)
    return refusal("pvk: boot parameter '%s': empty item in '%s' (accepted: ITEM,ITEM,...)", p.key, strlen(p.key), v,
                   vlen);
  if (items > p.max)
    return param_error("pvk: boot parameter '%s': %zu items (accepted: at most %u)", p.key, items, p.max);
  return {};
}

ErrorOr<void, ParamError> parse_value(const Param& p, const char* v, size_t vlen, BootParams& out) {
  char accepted[96];
  switch (p.kind) {
    case Kind::Choice:
      for (size_t i = 0; i < p.nchoices; ++i) {
        if (word_equals(v, vlen, p.choices[i].word)) {
          *(reinterpret_cast<uint8_t*>(&out) + p.offset) = p.choices[i].value;
          return {};
        }
      }
      list_choices(p, accepted, sizeof accepted);
      return refusal("pvk: boot parameter '%s': bad value '%s' (accepted: %s)", p.key, strlen(p.key), v, vlen,
                     accepted);
    case Kind::Number: {
      uint64_t n = 0;
      if (!parse_decimal(v, vlen, p.max, n) || n < p.min) {
        format(accepted, sizeof accepted, "an integer %u..%u", p.min, p.max);
        return refusal("pvk: boot parameter '%s': bad value '%s' (accepted: %s)", p.key, strlen(p.key), v, vlen,
                       accepted);
      }
      const uint32_t value = static_cast<uint32_t>(n);
      memcpy(reinterpret_cast<char*>(&out) + p.offset, &value, sizeof value);
      return {};
    }
    case Kind::Seed: {
      uint64_t n = 0;
      if (!parse_decimal(v, vlen, UINT64_MAX, n))
        return refusal("pvk: boot parameter '%s': bad value '%s' (accepted: an integer 0..18446744073709551615)",
                       p.key, strlen(p.key), v, vlen);
      memcpy(reinterpret_cast<char*>(&out) + p.offset, &n, sizeof n);
      return {};
    }
    case Kind::Fail:
      return parse_fail(v, vlen, out);
    case Kind::Text:
    case Kind::List: {
      char* field = reinterpret_cast<char*>(&out) + p.offset;
      if (vlen == 0) {
        format(accepted, sizeof accepted, "1..%zu characters", p.size - 1);
        return refusal("pvk: boot parameter '%s': bad value '%s' (accepted: %s)", p.key, strlen(p.key), v, vlen,
                       accepted);
      }
      if (vlen >= p.size)  // refused whole: a cut list would run fewer items
        return param_error(
            "pvk: boot parameter '%s': value of %zu characters too long (accepted: 1..%zu characters)", p.key, vlen,
            p.size - 1);
      if (p.kind == Kind::List) TRY(check_list(p, v, vlen));
      memcpy(field, v, vlen);
      field[vlen] = 0;
      return {};
    }
  }
  return param_error("pvk: boot parameter '%s': no parser for its kind", p.key);  // not reached: every Kind above
}

}  // namespace

ParamError param_error(const char* fmt, ...) {
  ParamError e;
  va_list ap;
  va_start(ap, fmt);
  vformat(e.message, sizeof e.message, fmt, ap);
  va_end(ap);
  return e;
}

const char* backend_name(MmuBackend b) {
  if (b == MmuBackend::Default) return "default";
  for (const Choice& c : kBackends)
    if (c.value == uint8_t(b)) return c.word;
  return "?";
}

const char* fail_kind_name(FailKind k) {
  return size_t(k) < size_t(FailKind::Count) ? kFailKinds[size_t(k)] : "?";
}

ErrorOr<void, ParamError> parse_boot_params(const char* cmdline, BootParams& out) {
  bool seen[kNumParams] = {};
  bool init_seen = false, bench_seen = false, init_args_seen = false;
  const char* p = cmdline ? cmdline : "";
  size_t length = 0;
  while (length <= kMaxCmdline && p[length]) ++length;
  if (length > kMaxCmdline)
    return param_error(
        "pvk: boot command line longer than %zu bytes: refused rather than cut (Xen passes at most 1023)",
        kMaxCmdline);
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
    if (!param)
      return refusal(
          "pvk: unknown boot parameter '%s' (known: mmu pte pvpatch batch auto_threshold zero_page pgd_cache ptshare "
          "file_map fault_around sched_cpus shootdown selftest bench init init_args fail fail_seed)",
          word, klen);
    if (eq == p) return refusal("pvk: boot parameter '%s' needs a value ('%s=...')", word, len, word, len);
    if (seen[index]) return refusal("pvk: boot parameter '%s' given twice", word, klen);
    seen[index] = true;
    init_seen |= param->offset == offsetof(BootParams, init);
    bench_seen |= param->offset == offsetof(BootParams, bench);
    init_args_seen |= param->offset == offsetof(BootParams, init_args);
    TRY(parse_value(*param, eq + 1, static_cast<size_t>(p - eq - 1), out));
  }
  if (init_seen && bench_seen)
    return param_error(
        "pvk: boot parameters 'init' and 'bench' together: bench= runs the bench driver as init, give one");
  if (out.fault_around & (out.fault_around - 1))
    return param_error("pvk: boot parameter 'fault_around=%u': a power of two from 1 to 512 (pages of an aligned window)",
                       out.fault_around);
  if (init_args_seen && !init_seen)
    return param_error("pvk: boot parameter 'init_args' without 'init': they are init's arguments");
  return {};
}

}  // namespace pvk
