// smpstress: what the driver (smpstress.cpp) and the operations
// (smpstress_ops.cpp) share: the kinds of operation, each thread's
// counts in a MAP_SHARED page the driver reads after its workers exit,
// and the thread's own state.
#pragma once
#include "bench/libc/thread.h"
#include "bench/libc/user.h"

namespace smpstress {

using namespace pvk::user;

// X(name): one kind of operation; its count appears in the summary record
// under this name, and its failed checks under name_bad.
#define SMPSTRESS_OPS(X)                                                                                  \
  X(mmap) X(munmap) X(mprotect) X(touch) X(brk) X(fork) X(fork_kill) X(thread) X(pipe) X(futex) X(signal) \
      X(yield) X(sleep) X(ids) X(clock) X(file)

enum Op : unsigned {
#define SMPSTRESS_ENUM(name) op_##name,
  SMPSTRESS_OPS(SMPSTRESS_ENUM)
#undef SMPSTRESS_ENUM
      kOps
};

inline constexpr unsigned kMaxWorkers = 8;       // processes, one per CPU
inline constexpr unsigned kThreadsPerWorker = 2; // one pinned to the worker's CPU, one free to move

// One thread's tallies (written by that thread alone).
struct Tally {
  uint64_t done[kOps];
  uint64_t bad[kOps];
  uint64_t segv_expected;  // stores into read-only memory that faulted, as they must
  uint64_t first_bad_op;   // 1 + the operation number of the first failed check (0: none)
  uint32_t first_bad_kind;
  uint32_t first_bad_line;
  uint32_t finished;
};
struct SharedPage {
  Tally t[kMaxWorkers][kThreadsPerWorker];
};
static_assert(sizeof(SharedPage) <= 4 * 4096);
inline constexpr uint64_t kSharedBytes = 4 * 4096;

struct Config {
  uint64_t seed = 1;
  uint64_t ops = 200;  // per thread
  unsigned workers = 0;  // 0: one per CPU of the affinity mask
  bool files = false;    // /tmp is writable (a root file system is mounted)
};

// A worker thread's state; thread_self()->arg points at it.
struct Ctx {
  unsigned worker, thread;
  uint64_t rng;
  uint64_t op;  // the number of the current operation
  Tally* tally;
  const Config* cfg;
  JmpBuf jmp;                // where a store that must fault comes back to
  volatile uint32_t arm;     // the SIGSEGV handler may longjmp
  volatile uint64_t usr1;    // SIGUSR1s this thread took
  uint64_t last_clock;
};

// Runs cfg.ops random operations in the calling thread (made by
// thread_create with a Ctx as its argument).
void run_thread(void* ctx);
// Installs the handlers run_thread's checks need (once per process).
void install_handlers();

inline uint64_t next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}
inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x ? x : 0x2545F4914F6CDD1Dull;
}

extern const char* const kOpNames[kOps];

}  // namespace smpstress
