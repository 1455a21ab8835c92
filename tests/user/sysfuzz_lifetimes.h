// The fuzzer's lifetime mode (sysfuzz_lifetimes.cpp runs it, the child
// side is sysfuzz_lifetimes_child.cpp): what the parent and its children
// share.
#pragma once
#include <stdint.h>

namespace sysfuzz {

struct LifetimeConfig {
  uint64_t seed = 1;
  uint64_t ops = 0;      // operations per thread; 0: the mode is off
  uint64_t procs = 3;    // fuzz processes, all at once
  uint64_t threads = 4;  // threads each starts (each may start more, up to twice as many)
};

constexpr int kSigUsr2 = 12;  // the watchdog's kick (abi.h does not name it)
constexpr uint64_t kMaxLifetimeProcs = 6, kMaxLifetimeThreads = 6, kMaxLifetimeOps = 4000;

// The counts of a child (and, summed, of the run), in record order; each
// is a key of the records.
#define SYSFUZZ_LIFETIME_COUNTERS(X)                                                                           \
  X(ops) X(pipe) X(close) X(dup2) X(read) X(write) X(futex_wait) X(futex_wake) X(sleep) X(spawn) X(thread_exit) \
  X(threads_started) X(threads_joined) X(pipe_emfile) X(read_eof) X(write_epipe) X(ebadf) X(eintr)            \
  X(futex_timedout) X(futex_woken) X(raced_calls) X(releases) X(kicks) X(bytes_written) X(bytes_read)           \
  X(tagged_bytes) X(unchecked_bytes) X(foreign_bytes) X(stray_bytes) X(torn_reads)

enum Counter : unsigned {
#define SYSFUZZ_LT_ENUM(name) c_##name,
  SYSFUZZ_LIFETIME_COUNTERS(SYSFUZZ_LT_ENUM)
#undef SYSFUZZ_LT_ENUM
      kCounters
};

// One per child, in MAP_SHARED memory the parent mapped.
struct LifetimeSlot {
  volatile uint64_t counts[kCounters];
  volatile uint32_t finished;  // the child joined every thread and is exiting 0
  volatile uint32_t bug;       // the child saw the kernel misbehave (bug_msg says how: the first such)
  char bug_msg[200];
};

// The parent's slot memory (main maps it before the free-frame baseline).
constexpr uint64_t kLifetimeSlotBytes = kMaxLifetimeProcs * sizeof(LifetimeSlot);

// Runs the mode: forks cfg.procs children that race (lifetime_child),
// judges them, prints a record per child and the summary; true if it passed.
bool run_lifetimes(const LifetimeConfig& cfg, void* slots);

// A child's life: its threads race until their budgets are spent, then it
// exits 0 (or 3 if its setup failed). index names it in every tag it writes.
[[noreturn]] void lifetime_child(LifetimeSlot* slot, unsigned index, uint64_t seed, const LifetimeConfig& cfg);

}  // namespace sysfuzz
