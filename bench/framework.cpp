// The framework of bench.h: series, counters, one parameter set's run.
#include <stddef.h>

#include "bench/bench.h"
#include "base/lib/error_or.h"  // pvk::panic
#include "base/lib/format.h"

namespace bench {

bool g_have_counters = false;
const char* g_argv0 = "bench";

void sort_u64(uint64_t* v, size_t n) {
  if (n < 2) return;
  auto sift = [v](size_t root, size_t end) {
    for (;;) {
      size_t child = 2 * root + 1;
      if (child >= end) return;
      if (child + 1 < end && v[child] < v[child + 1]) ++child;
      if (v[root] >= v[child]) return;
      uint64_t t = v[root];
      v[root] = v[child];
      v[child] = t;
      root = child;
    }
  };
  for (size_t i = n / 2; i-- > 0;) sift(i, n);
  for (size_t end = n - 1; end > 0; --end) {
    uint64_t t = v[0];
    v[0] = v[end];
    v[end] = t;
    sift(0, end);
  }
}

unsigned Series::median_index() const {
  if (n == 0) return 0;
  // Rank of each value: the index whose value is the (n-1)/2-th smallest
  // (ties broken by index), found without disturbing v.
  const unsigned want = (n - 1) / 2;
  for (unsigned i = 0; i < n; ++i) {
    unsigned below = 0;
    for (unsigned j = 0; j < n; ++j)
      if (v[j] < v[i] || (v[j] == v[i] && j < i)) ++below;
    if (below == want) return i;
  }
  return 0;
}

uint64_t Series::min() const {
  uint64_t m = n ? v[0] : 0;
  for (unsigned i = 1; i < n; ++i)
    if (v[i] < m) m = v[i];
  return m;
}

uint64_t Series::max() const {
  uint64_t m = 0;
  for (unsigned i = 0; i < n; ++i)
    if (v[i] > m) m = v[i];
  return m;
}

const char* const kCounterNames[kNumCounters] = {
#define PVK_MMU_COUNTER(name) #name,
#define PVK_MM_COUNTER(name) #name,
#define PVK_CPU_COUNTER(name) #name,
#include "base/counters.inc"
};

Counters read_all_counters() {
  Counters out;
  if (!g_have_counters) return out;
  PvkCounters c;
  if (read_counters(&c) != 0) return out;
  const uint64_t src[kNumCounters] = {
#define PVK_MMU_COUNTER(name) c.name,
#define PVK_MM_COUNTER(name) c.name,
#define PVK_CPU_COUNTER(name) c.name,
#include "base/counters.inc"
  };
  for (unsigned i = 0; i < kNumCounters; ++i) out.v[i] = src[i];
  out.free_frames = c.free_frames;
  return out;
}

Counters delta(const Counters& after, const Counters& before) {
  Counters d;
  for (unsigned i = 0; i < kNumCounters; ++i) d.v[i] = after.v[i] - before.v[i];
  d.free_frames = after.free_frames;
  return d;
}

uint64_t Run::p(const char* key) const {
  for (unsigned i = 0; i < kMaxParams && def->params[i].key; ++i)
    if (strcmp(def->params[i].key, key) == 0) return value[i];
  pvk::panic("bench %s: no parameter '%s'", def->name, key);
}

void Run::set_p(const char* key, uint64_t v) {
  for (unsigned i = 0; i < kMaxParams && def->params[i].key; ++i)
    if (strcmp(def->params[i].key, key) == 0) value[i] = v;
}

namespace {

// One timed bracket of a rep (start/stop, start2/stop2, start3/stop3):
// counters, rdtsc and CLOCK_MONOTONIC at its start, the same in the reverse
// order at its end.
[[gnu::always_inline]] inline void bracket_start(Counters& c0, uint64_t& tsc0, uint64_t& t0) {
  c0 = read_all_counters();
  tsc0 = rdtsc();
  t0 = now_ns();
}

[[gnu::always_inline]] inline void bracket_stop(const Counters& c0, uint64_t tsc0, uint64_t t0, Series& ns,
                                                Series& cycles, Counters* deltas) {
  const uint64_t t1 = now_ns();
  const uint64_t tsc1 = rdtsc();
  const Counters c1 = read_all_counters();
  if (ns.n < kMaxReps) deltas[ns.n] = delta(c1, c0);
  ns.add(t1 - t0);
  cycles.add(tsc1 - tsc0);
}

}  // namespace

void Run::start() { bracket_start(c0_, tsc0_, t0_); }
void Run::stop() { bracket_stop(c0_, tsc0_, t0_, ns, cycles, deltas); }
void Run::start2() { bracket_start(c0b_, tsc0b_, t0b_); }
void Run::stop2() { bracket_stop(c0b_, tsc0b_, t0b_, ns2, cycles2, deltas2); }
void Run::start3() { bracket_start(c0c_, tsc0c_, t0c_); }
void Run::stop3() { bracket_stop(c0c_, tsc0c_, t0c_, ns3, cycles3, deltas3); }

bool Run::fail(const char* fmt, ...) {
  if (!failed_) {
    va_list ap;
    va_start(ap, fmt);
    pvk::vformat(error_, sizeof error_, fmt, ap);
    va_end(ap);
    failed_ = true;
  }
  char line[200];
  va_list ap;
  va_start(ap, fmt);
  pvk::vformat(line, sizeof line, fmt, ap);
  va_end(ap);
  printf("bench: %s: FAIL %s\n", def->name, line);
  return false;
}

void Run::extra(const char* key, uint64_t v) {
  for (unsigned i = 0; i < n_extras; ++i)
    if (strcmp(extras[i].key, key) == 0) {
      extras[i].value = v;
      return;
    }
  if (n_extras < kMaxExtras)
    extras[n_extras++] = {key, v};
  else
    fail("too many record fields (kMaxExtras %u): %s dropped", kMaxExtras, key);
}

int wait_child(Run& r, int64_t pid) {
  int status = 0;
  int64_t got;
  do {
    got = wait4(pid, &status, 0);
  } while (got == -EINTR);
  if (got != pid) {
    r.fail("wait4(%ld) returned %ld", pid, got);
    return -1;
  }
  return status;
}

int64_t fork_or_fail(Run& r) {
  const int64_t pid = fork();
  if (pid < 0) r.fail("fork returned %ld", pid);
  return pid;
}

uint64_t* map_pages_or_fail(Run& r, uint64_t pages) {
  const int64_t a = mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
  if (is_err(a)) {
    r.fail("mmap of %lu pages returned %ld", pages, a);
    return nullptr;
  }
  return reinterpret_cast<uint64_t*>(a);
}

bool pages_or_fail(Run& r, uint64_t pages) {
  if (pages == 0) r.fail("pages must be at least 1");
  return pages != 0;
}

void time_mprotect_cycles(Run& r, void* region, uint64_t len, uint64_t loops, void (*before_rep)(void*), void* arg) {
  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    if (before_rep) before_rep(arg);
    int64_t e1 = 0, e2 = 0;
    r.start();
    for (uint64_t l = 0; l < loops; ++l) {
      e1 |= mprotect(region, len, PROT_READ);
      e2 |= mprotect(region, len, PROT_READ | PROT_WRITE);
    }
    r.stop();
    if (e1 || e2) r.fail("mprotect failed (%ld, %ld)", e1, e2);
  }
}

const char* kbworker_path() {
  // On pvk the embedded program's name; on Linux the file next to the
  // driver (dirname(argv[0])/kbworker).
  static char path[256];
  if (path[0]) return path;
  const char* slash = nullptr;
  for (const char* s = g_argv0; *s; ++s)
    if (*s == '/') slash = s;
  if (!slash)
    pvk::format(path, sizeof path, "kbworker");
  else
    pvk::format(path, sizeof path, "%.*s/kbworker", static_cast<int>(slash - g_argv0), g_argv0);
  return path;
}

}  // namespace bench
