// bench: the benchmark driver (bench/README.md).
//
//   bench [ITEM...]     ITEM = NAME | SUITE, optionally followed by
//                       :key=value (lists: v1+v2+v3)
//
// pvk runs it as init with bench=ITEM,ITEM,...; on Linux it is a static
// executable. One "@pvk {...}" record per (benchmark, parameter set), then
// {"event":"bench_done",...}; exits 1 if any benchmark failed.
#include "bench/bench.h"
#include "base/lib/error_or.h"  // pvk::panic
#include "base/lib/format.h"

namespace bench {
namespace {

// ---------------------------------------------------------------------------
// The benchmarks.

const BenchDef kBenches[] = {
    {"getpid", "seed000", run_getpid, {{"iters", "10000"}}, "iters=50"},
    {"getppid", "seed000", run_getppid, {{"iters", "10000"}}, "iters=50"},
    {"segv", "seed000", run_segv, {{"iters", "1000"}}, "iters=10"},
    {"divzero", "seed000", run_divzero, {{"iters", "1000"}}, "iters=10"},
    {"forkwait", "seed000", run_forkwait, {{"iters", "100"}}, "iters=3"},
    {"lat_pipe", "seed000", run_lat_pipe, {{"iters", "1000"}}, "iters=10"},
    {"ctx", "seed000", run_ctx, {{"procs", "2+8"}, {"working_set", "0+16384"}, {"iters", "200"}},
     "procs=3:working_set=0+8192:iters=5"},
    {"fault_zero_read", "seed001", run_fault_zero_read, {{"pages", "2048"}}, "pages=16"},
    {"fault_zero_cow", "seed001", run_fault_zero_cow, {{"pages", "2048"}}, "pages=16"},
    {"fault_write", "seed001", run_fault_write, {{"pages", "2048"}}, "pages=16"},
    {"poke_full", "seed001", run_poke_full, {{"pages", "2048"}}, "pages=16"},
    {"forkexec", "seed001", run_forkexec, {{"iters", "20"}}, "iters=2"},
    {"memset_present", "seed001", run_memset_present, {{"pages", "2048"}}, "pages=16"},
    {"mprotect", "seed002", run_mprotect, {{"pages", "1+64+4096+16384"}, {"loops", "0"}}, "pages=1+64:loops=3"},
    {"cpa", "seed002", run_cpa, {{"pages", "1+64+512+4096"}}, "pages=1+8", true},
    // procs: seed 002's half, optimal and maximal load (bench/seed002.cpp).
    {"kernbench", "seed002", run_kernbench, {{"procs", "1+4+8"}, {"jobs", "8"}, {"pages", "512"}, {"source_kb", "32"}},
     "procs=1+4:jobs=4:pages=16:source_kb=8"},
    {"fork_dirty", "seed003", run_fork_dirty, {{"pages", "1280+12800"}, {"stride", "1"}}, "pages=64:stride=1+8"},
    // Issue 15: threads in one address space (bench/smp.cpp). Suite smp, not
    // in `all` (the default list of every configuration): tools/pvk bench
    // adds them with --smp.
    {"mprotect_threads", "smp", run_mprotect_threads, {{"pages", "1+256"}, {"threads", "0+1"}, {"loops", "0"}},
     "pages=4:threads=0+1:loops=3"},
    {"munmap_threads", "smp", run_munmap_threads, {{"pages", "1+256"}, {"threads", "0+1"}, {"loops", "0"}},
     "pages=4:threads=0+1:loops=3"},
    {"fork_threads", "smp", run_fork_threads, {{"pages", "64+1024"}, {"threads", "0+1"}}, "pages=16:threads=0+1"},
    {"fault_threads", "smp", run_fault_threads, {{"pages", "64+1024"}, {"threads", "0+1"}}, "pages=16:threads=0+1"},
    {"ctx_threads", "smp", run_ctx_threads, {{"threads", "0+1"}, {"iters", "500"}}, "threads=0+1+2:iters=5"},
    // `pvk calibrate`'s events, each timed alone (bench/calibrate.cpp): suite
    // calibrate, not in `all`; pvk only (SYS_pvk_probe).
    {"calibrate", "calibrate", run_calibrate, {{"event", "0+1+2+3+4+5+6+7+8+9+10+11+12"}, {"count", "256"}},
     "count=8", true},
};
constexpr unsigned kNumBenches = sizeof kBenches / sizeof kBenches[0];

const char* const kSuites[] = {"all", "seed000", "seed001", "seed002", "seed003", "smp", "calibrate", "smoke"};

bool in_suite(const BenchDef& b, const char* suite) {
  // `all` is the seeds' benchmarks; the smp and calibrate suites are asked
  // for by name.
  if (strcmp(suite, "all") == 0) return strncmp(b.suite, "seed", 4) == 0;
  return strcmp(suite, "smoke") == 0 || strcmp(suite, b.suite) == 0;
}

// ---------------------------------------------------------------------------
// Records: one flat JSON object per line, written with one write().

class Line {
 public:
  Line(const char* key, const char* value) {
    add("@pvk {");
    str(key, value);
  }
  ~Line() {
    add("}\n");
    if (overflow_) {
      print("@pvk {\"event\":\"error\",\"what\":\"bench record too long\"}\n");
      return;
    }
    write_all(1, buf_, len_);
  }
  Line& str(const char* k, const char* v) {
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
  Line& u64(const char* k, uint64_t v) {
    key(k);
    char num[24];
    pvk::format(num, sizeof num, "%lu", v);
    add(num);
    return *this;
  }
  Line& boolean(const char* k, bool v) {
    key(k);
    add(v ? "true" : "false");
    return *this;
  }

 private:
  void key(const char* k) {
    if (len_ && buf_[len_ - 1] != '{') add(",");
    add("\"");
    add(k);
    add("\":");
  }
  void add(const char* s) {
    const size_t n = strlen(s);
    if (len_ + n > sizeof buf_) {
      overflow_ = true;
      return;
    }
    memcpy(buf_ + len_, s, n);
    len_ += n;
  }
  char buf_[6144];  // fork_dirty: ~2.4 KB (3 phases x every counter)
  size_t len_ = 0;
  bool overflow_ = false;
};

// ---------------------------------------------------------------------------
// Items and options.

struct Option {
  char key[32];
  uint64_t values[16];
  unsigned n = 0;
  bool used = false;
};

struct Options {
  Option opt[8];
  unsigned n = 0;
};

unsigned g_records = 0, g_failed = 0;

// A record for an item that could not even start.
void item_error(const char* item, const char* what) {
  printf("bench: %s: FAIL %s\n", item, what);
  Line("bench", item).boolean("pass", false).str("error", what);
  ++g_records;
  ++g_failed;
}

// Parses "k=v1+v2:k2=v" (the part after the name) into opts; false + why.
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
      if (o.n == sizeof o.values / sizeof o.values[0] || !parse_u64(num, &o.values[o.n])) {
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

// Option `key` of opts (or nullptr); marks it used.
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

// Reaps children a benchmark left behind; returns how many.
unsigned reap_leftovers() {
  unsigned n = 0;
  int st;
  while (wait4(-1, &st, WNOHANG) > 0) ++n;
  return n;
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
  for (unsigned i = 0; i < kMaxParams && b.params[i].key; ++i)
    pl += pvk::format(params + pl, pl < sizeof params ? sizeof params - pl : 0, " %s=%lu", b.params[i].key,
                      values[i]);
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
    for (unsigned i = 0; i < kMaxParams && b.params[i].key; ++i) l.u64(b.params[i].key, r.value[i]);
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
  ++g_records;
  if (r.failed()) ++g_failed;

  char med[32], lo[32], hi[32], per[32];
  print_ns(med, sizeof med, r.ns.median());
  print_ns(lo, sizeof lo, r.ns.min());
  print_ns(hi, sizeof hi, r.ns.max());
  print_ns(per, sizeof per, r.ns.median() / ops);
  printf("bench: %s%s: %s per op, rep median %s (min %s, max %s, %u reps)%s\n", b.name, params, per, med, lo, hi,
         r.ns.n, r.failed() ? " [FAIL]" : "");
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

// ---------------------------------------------------------------------------
// Programs as items: `hostile[:timeout=S:only=INDEX]` and
// `sysfuzz[:seed=N:iters=N:children=N:parallel=N:regress=0|1:lifetimes=N:procs=N:threads=N]` fork and
// execve the embedded program of that name with one key=value argument per
// option; the item passes iff the program exits 0 and every frame it used
// came back. Their own records (one per attack / per fuzzed child, and a
// summary) come first; then {"bench":NAME,"args":..,"pass":..}.

struct ProgramItem {
  const char* name;
  const char* keys[9];
};
const ProgramItem kProgramItems[] = {
    {"hostile", {"timeout", "only"}},
    {"sysfuzz", {"seed", "iters", "children", "parallel", "regress", "lifetimes", "procs", "threads"}},
};

void run_program_item(const ProgramItem& p, const char* item, const char* opts) {
  // "k=v:k=v" -> argv {"NAME", "k=v", "k=v"}; each key must be one of p.keys.
  static char store[512];
  const char* argv[12] = {p.name};
  unsigned argc = 1;
  size_t n = 0;
  while (*opts) {
    if (argc + 1 >= sizeof argv / sizeof argv[0]) return item_error(item, "too many options");
    char* arg = store + n;
    while (*opts && *opts != ':' && n + 1 < sizeof store) store[n++] = *opts++;
    store[n++] = 0;
    if (*opts == ':') ++opts;
    bool known = false;
    for (const char* k : p.keys) {
      if (!k) break;
      const size_t kl = strlen(k);
      known |= strncmp(arg, k, kl) == 0 && arg[kl] == '=';
    }
    uint64_t v;
    const char* eq = arg;
    while (*eq && *eq != '=') ++eq;
    if (!known || !*eq || !parse_u64(eq + 1, &v)) {
      char why[96];
      pvk::format(why, sizeof why, "'%s' has no parameter '%s' (or its value is not a number)", p.name, arg);
      return item_error(item, why);
    }
    argv[argc++] = arg;
  }
  argv[argc] = nullptr;
  printf("bench: %s: running the %s program\n", item, p.name);
  const Counters before = read_all_counters();
  const uint64_t t0 = now_ns();
  const int64_t pid = fork();
  if (pid == 0) {
    const char* envp[] = {nullptr};
    const int64_t r = execve(p.name, argv, envp);
    printf("bench: execve(%s) failed: %ld\n", p.name, r);
    exit_group(127);
  }
  int status = 0;
  const bool reaped = pid > 0 && wait4(pid, &status, 0) == pid;
  const uint64_t ns = now_ns() - t0;
  reap_leftovers();
  const Counters after = read_all_counters();
  const bool leak = g_have_counters && after.free_frames != before.free_frames;
  const bool pass = reaped && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !leak;
  {
    Line l("bench", p.name);
    l.str("args", item).u64("ns", ns);
    if (WIFEXITED(status)) l.u64("exit_code", static_cast<uint64_t>(WEXITSTATUS(status)));
    if (WIFSIGNALED(status)) l.u64("signal", static_cast<uint64_t>(WTERMSIG(status)));
    if (g_have_counters) l.u64("free_frames_before", before.free_frames).u64("free_frames_after", after.free_frames);
    l.boolean("pass", pass);
    if (!pass)
      l.str("error", !reaped ? "fork/wait failed" : leak ? "frame leak" : "the program failed (see its records)");
  }
  ++g_records;
  if (!pass) ++g_failed;
  printf("bench: %s: %s\n", item, pass ? "pass" : "FAIL");
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
  for (const ProgramItem& p : kProgramItems)
    if (strcmp(p.name, name) == 0) return run_program_item(p, item, s);
  Options opts;
  char why[120];
  if (!parse_options(s, opts, why, sizeof why)) {
    item_error(item, why);
    return;
  }
  bool suite = false;
  for (const char* su : kSuites) suite |= strcmp(su, name) == 0;
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
  return g_failed ? 1 : 0;
}
