// bench: the benchmark driver (docs/benchmarks.md).
//
//   bench [ITEM...]     ITEM = NAME | SUITE, optionally followed by
//                       :key=value (lists: v1+v2+v3)
//
// pvk runs it as init with bench=ITEM,ITEM,...; on Linux it is a static
// executable. One "@pvk {...}" record per (benchmark, parameter set), then
// {"event":"bench_done",...}; exits 1 if any benchmark failed.
#include "bench/bench.h"
#include "bench/item_options.h"
#include "bench/program_items.h"
#include "bench/record_line.h"
#include "bench/libc/files.h"  // ioctl
#include "base/lib/error_or.h"  // pvk::panic
#include "base/lib/format.h"

namespace bench {
namespace {

// ---------------------------------------------------------------------------
// The benchmarks (bench/benches.inc), in its order.

const BenchDef kBenches[] = {
#define PVK_PARAM(key, defaults) {#key, defaults}
#define PVK_BENCH(name, suite, needs, smoke, what, ...) {#name, #suite, run_##name, {__VA_ARGS__}, smoke, false},
#define PVK_BENCH_PVK(name, suite, needs, smoke, what, ...) {#name, #suite, run_##name, {__VA_ARGS__}, smoke, true},
#include "bench/benches.inc"
#undef PVK_PARAM
};

// A suite: all, smoke, or the suite of some benchmark (seed000..seed003,
// smp, calibrate).
bool is_suite(const char* name) {
  if (strcmp(name, "all") == 0 || strcmp(name, "smoke") == 0) return true;
  for (const BenchDef& b : kBenches)
    if (strcmp(b.suite, name) == 0) return true;
  return false;
}

bool in_suite(const BenchDef& b, const char* suite) {
  // `all` is the seeds' benchmarks; the smp and calibrate suites are asked
  // for by name.
  if (strcmp(suite, "all") == 0) return strncmp(b.suite, "seed", 4) == 0;
  return strcmp(suite, "smoke") == 0 || strcmp(suite, b.suite) == 0;
}

// ---------------------------------------------------------------------------
// Running a parameter set.

void print_ns(char* buf, size_t cap, uint64_t ns) {
  if (ns >= 10000000)
    pvk::format(buf, cap, "%lu.%03lu ms", ns / 1000000, ns / 1000 % 1000);
  else if (ns >= 10000)
    pvk::format(buf, cap, "%lu.%03lu us", ns / 1000, ns % 1000);
  else
    pvk::format(buf, cap, "%lu ns", ns);
}

void run_set(const BenchDef& b, const uint64_t* values, unsigned reps, bool reps_explicit) {
  static Run r;  // large (series and counters of every rep): not on the stack
  r = Run{};
  r.def = &b;
  for (unsigned i = 0; i < kMaxParams; ++i) r.value[i] = values[i];
  r.reps = reps;
  r.reps_explicit = reps_explicit;

  char params[160];
  size_t pl = 0;
  params[0] = 0;
  for (unsigned i = 0; i < kMaxParams && b.params[i].key; ++i) {
    char word[kMaxWord + 1];
    word_text(values[i], word);
    if (is_word_value(values[i]))
      pl += pvk::format(params + pl, pl < sizeof params ? sizeof params - pl : 0, " %s=%s", b.params[i].key, word);
    else
      pl += pvk::format(params + pl, pl < sizeof params ? sizeof params - pl : 0, " %s=%lu", b.params[i].key,
                        values[i]);
  }
  printf("bench: %s%s ...\n", b.name, params);

  const Counters before = read_all_counters();
  b.run(r);
  const unsigned leftovers = reap_leftovers();
  if (leftovers) r.fail("%u child process(es) left behind", leftovers);
  const Counters after = read_all_counters();
  if (g_have_counters && after.free_frames != before.free_frames)
    r.fail("frame leak: %lu free frames before, %lu after (%ld)", before.free_frames, after.free_frames,
           static_cast<int64_t>(after.free_frames) - static_cast<int64_t>(before.free_frames));
  if (!r.failed() && r.ns.n != r.reps) r.fail("%u of %u reps ran", r.ns.n, r.reps);

  const uint64_t ops = r.ops ? r.ops : 1;
  {
    Line l("bench", b.name);
    for (unsigned i = 0; i < kMaxParams && b.params[i].key; ++i) {
      char word[kMaxWord + 1];
      word_text(r.value[i], word);
      if (is_word_value(r.value[i]))
        l.str(b.params[i].key, word);
      else
        l.u64(b.params[i].key, r.value[i]);
    }
    l.str("unit", "ns").u64("reps", r.ns.n);
    if (r.ns.n) {
      l.u64("median", r.ns.median()).u64("min", r.ns.min()).u64("max", r.ns.max());
      l.u64("ops", ops).u64("per_op", r.ns.median() / ops);
      l.u64("median_cycles", r.cycles.median()).u64("min_cycles", r.cycles.min()).u64("max_cycles", r.cycles.max());
      l.u64("per_op_cycles", r.cycles.median() / ops);
      if (g_have_counters) {
        const Counters& d = r.deltas[r.ns.median_index()];
        for (unsigned i = 0; i < kNumCounters; ++i) l.u64(kCounterNames[i], d.v[i]);
      }
    }
    if (g_have_counters) l.u64("free_frames_before", before.free_frames).u64("free_frames_after", after.free_frames);
    for (unsigned i = 0; i < r.n_extras; ++i) l.u64(r.extras[i].key, r.extras[i].value);
    l.boolean("pass", !r.failed());
    if (r.failed()) l.str("error", r.error());
  }
  count_record(!r.failed());

  char med[32], lo[32], hi[32], per[32];
  print_ns(med, sizeof med, r.ns.median());
  print_ns(lo, sizeof lo, r.ns.min());
  print_ns(hi, sizeof hi, r.ns.max());
  print_ns(per, sizeof per, r.ns.median() / ops);
  printf("bench: %s%s: %s per op, rep median %s (min %s, max %s, %u reps)%s\n", b.name, params, per, med, lo, hi,
         r.ns.n, r.failed() ? " [FAIL]" : "");
}

// Whether every value of parameter i is of its kind: one of the words its
// defaults list (a parameter of words), or a number; why if not.
bool values_fit(const BenchDef& b, unsigned i, const uint64_t* values, unsigned n, char* why, size_t cap) {
  const char* defaults = b.params[i].defaults;
  const bool words = defaults[0] >= 'a' && defaults[0] <= 'z';
  for (unsigned k = 0; k < n; ++k) {
    char word[kMaxWord + 1];
    word_text(values[k], word);
    if (!words && is_word_value(values[k])) {
      pvk::format(why, cap, "'%s' takes numbers, not '%s'", b.params[i].key, word);
      return false;
    }
    if (!words) continue;
    // The value must be one of the words of "w1+w2+...".
    bool listed = false;
    for (const char* d = defaults; *d;) {
      size_t len = 0;
      while (d[len] && d[len] != '+') ++len;
      listed |= is_word_value(values[k]) && len == strlen(word) && strncmp(d, word, len) == 0;
      d += len;
      if (*d == '+') ++d;
    }
    if (!listed) {
      pvk::format(why, cap, "'%s' takes %s", b.params[i].key, defaults);
      return false;
    }
  }
  return true;
}

// Runs benchmark b with opts (already checked to apply): the cartesian
// product of its list-valued parameters, the first varying slowest.
void run_bench(const BenchDef& b, Options& opts) {
  const uint64_t* lists[kMaxParams] = {};
  unsigned counts[kMaxParams] = {};
  uint64_t defaults[kMaxParams][16];
  unsigned np = 0;
  for (; np < kMaxParams && b.params[np].key; ++np) {
    if (Option* o = find_option(opts, b.params[np].key)) {
      lists[np] = o->values;
      counts[np] = o->n;
    } else {
      Options d;
      char why[80];
      char spec[96];
      pvk::format(spec, sizeof spec, "%s=%s", b.params[np].key, b.params[np].defaults);
      if (!parse_options(spec, d, why, sizeof why)) pvk::panic("bench %s: bad default: %s", b.name, why);
      memcpy(defaults[np], d.opt[0].values, sizeof defaults[np]);
      lists[np] = defaults[np];
      counts[np] = d.opt[0].n;
    }
    char why[80];
    if (!values_fit(b, np, lists[np], counts[np], why, sizeof why)) {
      item_error(b.name, why);
      return;
    }
  }
  unsigned reps = 5;
  bool reps_explicit = false;
  if (Option* o = find_option(opts, "reps")) {
    reps = static_cast<unsigned>(o->values[0]);
    reps_explicit = true;
    if (o->n != 1 || o->values[0] < 1 || o->values[0] > kMaxReps) {
      char why[80];
      pvk::format(why, sizeof why, "reps must be one value in 1..%u", kMaxReps);
      item_error(b.name, why);
      return;
    }
  }
  unsigned idx[kMaxParams] = {};
  for (;;) {
    uint64_t values[kMaxParams] = {};
    for (unsigned i = 0; i < np; ++i) values[i] = lists[i][idx[i]];
    run_set(b, values, reps, reps_explicit);
    // Next combination: the last parameter varies fastest.
    int i = static_cast<int>(np) - 1;
    for (; i >= 0; --i) {
      if (++idx[i] < counts[i]) break;
      idx[i] = 0;
    }
    if (i < 0) break;
  }
}

void run_item(const char* item) {
  char name[40];
  size_t k = 0;
  const char* s = item;
  while (*s && *s != ':') {
    if (k + 1 < sizeof name) name[k++] = *s;
    ++s;
  }
  name[k] = 0;
  if (*s == ':') ++s;
  if (run_program_item(name, item, s)) return;
  Options opts;
  char why[120];
  if (!parse_options(s, opts, why, sizeof why)) {
    item_error(item, why);
    return;
  }
  const bool suite = is_suite(name);
  const BenchDef* single = nullptr;
  for (const BenchDef& b : kBenches)
    if (strcmp(b.name, name) == 0) single = &b;
  if (!suite && !single) {
    pvk::format(why, sizeof why, "no benchmark or suite named '%s'", name);
    item_error(item, why);
    return;
  }
  // Every option must apply to the benchmark (or to some suite member).
  for (unsigned i = 0; i < opts.n; ++i) {
    bool applies = false;
    for (const BenchDef& b : kBenches)
      if ((single ? &b == single : in_suite(b, name)) && has_param(b, opts.opt[i].key)) applies = true;
    if (!applies) {
      pvk::format(why, sizeof why, "'%s' has no parameter '%s'", name, opts.opt[i].key);
      item_error(item, why);
      return;
    }
  }
  if (single) {
    run_bench(*single, opts);
    return;
  }
  const bool smoke = strcmp(name, "smoke") == 0;
  for (const BenchDef& b : kBenches) {
    if (!in_suite(b, name)) continue;
    if (b.pvk_only && !g_have_counters) {
      printf("bench: %s left out: it needs pvk's own system call\n", b.name);
      continue;
    }
    // This member's options: the item's that it has, then (smoke) its tiny
    // defaults for the rest.
    Options mine;
    for (unsigned i = 0; i < opts.n; ++i)
      if (has_param(b, opts.opt[i].key)) mine.opt[mine.n++] = opts.opt[i];
    if (smoke) {
      Options tiny;
      char spec[96];
      pvk::format(spec, sizeof spec, "reps=1:%s", b.smoke);
      if (!parse_options(spec, tiny, why, sizeof why)) pvk::panic("bench %s: bad smoke options: %s", b.name, why);
      for (unsigned i = 0; i < tiny.n; ++i) {
        bool given = false;
        for (unsigned j = 0; j < mine.n; ++j) given |= strcmp(mine.opt[j].key, tiny.opt[i].key) == 0;
        if (!given && mine.n < sizeof mine.opt / sizeof mine.opt[0]) mine.opt[mine.n++] = tiny.opt[i];
      }
    }
    run_bench(b, mine);
  }
}

// ---------------------------------------------------------------------------
// Preparation for the leak checks.

extern "C" char __rodata_end[], _end[];

// Writes every page of .data/.bss (each value back to itself), so the
// first use of a global inside a benchmark allocates nothing.
void touch_data() {
  for (char* p = __rodata_end; p < _end; p += kPage) {
    volatile char* v = p;
    *v = *v;
  }
}

// Touches the stack the benchmarks may use.
__attribute__((noinline)) void pretouch_stack() {
  volatile char area[160 * 1024];
  for (size_t i = 0; i < sizeof area; i += kPage) area[i] = 0;
  area[sizeof area - 1] = 0;
}

}  // namespace
}  // namespace bench

using namespace bench;

int main(int argc, char** argv) {
  if (argc > 0 && argv[0]) g_argv0 = argv[0];
  PvkCounters c;
  g_have_counters = read_counters(&c) == 0;

  touch_data();
  pretouch_stack();
  warm_root_cache(20);
  const Counters start = read_all_counters();
  Line("event", "bench_start")
      .u64("items", argc > 1 ? static_cast<uint64_t>(argc - 1) : 1)
      .boolean("counters", g_have_counters)
      .u64("tsc_khz", g_have_counters ? c.tsc_khz : 0)
      .u64("free_frames", start.free_frames);
  printf("bench: pid %ld, %s\n", getpid(), g_have_counters ? "pvk counters" : "no pvk counters (Linux?)");

  if (argc <= 1)
    run_item("all");
  else
    for (int i = 1; i < argc; ++i) run_item(argv[i]);

  Line("event", "bench_done").u64("benchmarks", g_records).u64("failed", g_failed);
  printf("bench: %u benchmark records, %u failed\n", g_records, g_failed);
  // On Linux in the harness's machines the driver is init: its exit panics
  // the kernel and QEMU stops at once, while the serial driver may still
  // hold the last lines (seen: fault_threads' last record and bench_done
  // lost at two CPUs, in every boot). Wait until the console has sent them:
  // tcdrain, TCSBRK with a non-zero argument (not a terminal: ENOTTY).
  constexpr uint64_t kTcsbrk = 0x5409;
  if (!g_have_counters) ioctl(1, kTcsbrk, reinterpret_cast<void*>(1));
  return g_failed ? 1 : 0;
}
