// The benchmark driver's framework: benchmark definitions, one parameter
// set's run (reps, timings, counter deltas, extra fields, failure) and the
// helpers the benchmarks share. See docs/benchmarks.md for the records.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "bench/libc/user.h"

namespace bench {

using namespace pvk::user;

inline constexpr unsigned kMaxParams = 4;
inline constexpr unsigned kMaxReps = 64;

class Run;

struct ParamDef {
  const char* key;
  const char* defaults;  // "1+64+4096": one record per value; "procs+threads": the words it takes
};

// A parameter may take words instead of numbers (mmap_churn's
// mode=procs|threads): a word of 1..7 letters a-z is packed into the value
// with the top bit set, so it never equals a number a benchmark takes, and
// the record prints it as a string. A parameter's defaults say which kind it
// is: words (the only ones it takes) or numbers.
inline constexpr uint64_t kWordBit = 1ull << 63;
inline constexpr unsigned kMaxWord = 7;
constexpr uint64_t word_value(const char* w) {
  uint64_t v = kWordBit;
  for (unsigned i = 0; i < kMaxWord && w[i]; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(w[i])) << (8 * i);
  return v;
}
inline bool is_word_value(uint64_t v) { return (v & kWordBit) != 0; }
// The word of a word value, NUL-terminated, into out[kMaxWord + 1].
void word_text(uint64_t v, char* out);

struct BenchDef {
  const char* name;
  const char* suite;  // "seed000" ...
  void (*run)(Run&);
  ParamDef params[kMaxParams];  // unused slots: key == nullptr
  const char* smoke;            // options of the `smoke` suite, e.g. "reps=1:iters=10"
  bool pvk_only = false;        // needs a pvk system call: left out of suites on Linux
};

// True when SYS_pvk_counters works (pvk); false on Linux (-ENOSYS).
extern bool g_have_counters;
// argv[0] of the driver (to find kbworker next to it on Linux: kbworker_path).
extern const char* g_argv0;

inline uint64_t rdtsc() {
  uint32_t lo, hi;
  asm volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// A store / load the compiler keeps exactly as written.
inline void poke(volatile void* addr, uint64_t value) {
  asm volatile("movq %1, (%0)" : : "r"(addr), "r"(value) : "memory");
}
inline uint64_t peek(const volatile void* addr) {
  uint64_t v;
  asm volatile("movq (%1), %0" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

// A deterministic 64-bit pattern for (tag, index).
inline uint64_t pattern(uint64_t tag, uint64_t i) {
  return (tag << 56) ^ ((i + 1) * 0x9E3779B97F4A7C15ull) ^ (i << 8);
}

// In-place ascending sort of n values (heapsort: no recursion, no memory).
void sort_u64(uint64_t* v, size_t n);

// Values of one quantity over the reps.
struct Series {
  uint64_t v[kMaxReps];
  unsigned n = 0;
  void add(uint64_t x) {
    if (n < kMaxReps) v[n++] = x;
  }
  // Index of the median value (the lower middle one for an even count).
  unsigned median_index() const;
  uint64_t median() const { return n ? v[median_index()] : 0; }
  uint64_t min() const;
  uint64_t max() const;
};

// The counters of PvkCounters that benchmarks report as deltas: every line
// of base/counters.inc, in its order.
inline constexpr unsigned kNumCounters = 0
#define PVK_MMU_COUNTER(name) +1
#define PVK_MM_COUNTER(name) +1
#define PVK_CPU_COUNTER(name) +1
#include "base/counters.inc"
    ;
extern const char* const kCounterNames[kNumCounters];
// Extra record fields one Run can carry: fork_dirty's four phases (fork,
// exit, rewrite, total) x (4 timings + every counter), and a few more. Sized
// from the counter list so a new counter cannot push fields out.
inline constexpr unsigned kMaxExtras = 4 * (4 + kNumCounters) + 16;
struct Counters {
  uint64_t v[kNumCounters] = {};
  uint64_t free_frames = 0;
};
// Reads the kernel's counters (all zero on Linux).
Counters read_all_counters();
Counters delta(const Counters& after, const Counters& before);

// One parameter set of one benchmark.
class Run {
 public:
  const BenchDef* def = nullptr;
  uint64_t value[kMaxParams] = {};
  unsigned reps = 5;
  bool reps_explicit = false;
  uint64_t ops = 1;  // operations per rep (the benchmark sets it)

  // A parameter's value for this set (the key must be one of def->params).
  uint64_t p(const char* key) const;
  // Replaces a parameter's value in the record (e.g. an automatic default).
  void set_p(const char* key, uint64_t v);

  // Brackets one rep's timed region: counters, rdtsc, CLOCK_MONOTONIC.
  void start();
  void stop();
  // Brackets a second timed quantity of the same rep (fork_dirty's exit).
  void start2();
  void stop2();
  // Brackets a third one (fork_dirty's rewrite).
  void start3();
  void stop3();

  // Marks the set failed (first message kept); returns false so callers can
  // `return r.fail(...)`-style bail out.
  bool fail(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  bool failed() const { return failed_; }
  const char* error() const { return error_; }

  // An extra integer field of the record (after the standard ones).
  void extra(const char* key, uint64_t value);

  // Results.
  Series ns, cycles;
  Counters deltas[kMaxReps];
  Series ns2, cycles2;
  Counters deltas2[kMaxReps];
  Series ns3, cycles3;
  Counters deltas3[kMaxReps];
  struct Extra {
    const char* key;
    uint64_t value;
  };
  Extra extras[kMaxExtras];
  unsigned n_extras = 0;

 private:
  Counters c0_, c0b_, c0c_;
  uint64_t t0_ = 0, tsc0_ = 0, t0b_ = 0, tsc0b_ = 0, t0c_ = 0, tsc0c_ = 0;
  bool failed_ = false;
  char error_[120] = {};
};

// Waits for pid; returns its status, or fails r and returns -1.
int wait_child(Run& r, int64_t pid);
// fork() that fails r on error.
int64_t fork_or_fail(Run& r);

// kbworker's path (bench/kbworker.cpp; kernbench and forkexec exec it): on
// pvk the embedded program's name, on Linux the file next to the driver.
const char* kbworker_path();

// mmap of n pages (private anonymous RW) or fail r.
uint64_t* map_pages_or_fail(Run& r, uint64_t pages);
// pages= of at least 1, or fail r.
bool pages_or_fail(Run& r, uint64_t pages);
// r.reps timed reps of `loops` x (mprotect RO, mprotect RW) of the region;
// a failed call fails r (seed 002's mprotect and mprotect_threads).
// before_rep(arg), if given, runs untimed before each rep.
void time_mprotect_cycles(Run& r, void* region, uint64_t len, uint64_t loops, void (*before_rep)(void*) = nullptr,
                          void* arg = nullptr);

// The benchmarks (one function per name).
void run_getpid(Run&);
void run_shell_exec(Run&);
void run_bash_exec(Run&);
void run_sh_script(Run&);
void run_getppid(Run&);
void run_segv(Run&);
void run_divzero(Run&);
void run_forkwait(Run&);
void run_forkexec(Run&);
void run_lat_pipe(Run&);
void run_ctx(Run&);
void run_fault_zero_read(Run&);
void run_fault_zero_cow(Run&);
void run_fault_write(Run&);
void run_poke_full(Run&);
void run_memset_present(Run&);
void run_mprotect(Run&);
void run_cpa(Run&);
void run_kernbench(Run&);
void run_fork_dirty(Run&);
// SMP: threads and shootdowns (bench/smp_shootdown.cpp, bench/smp_scaling.cpp).
void run_mprotect_threads(Run&);
void run_munmap_threads(Run&);
void run_fork_threads(Run&);
void run_fault_threads(Run&);
void run_ctx_threads(Run&);
void run_mmap_churn(Run&);
// The cost model's events, one at a time (bench/calibrate.cpp, `pvk calibrate`).
void run_calibrate(Run&);

}  // namespace bench
