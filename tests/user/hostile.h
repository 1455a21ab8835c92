// hostile's runner and the helpers its attacks share (hostile.cpp); the
// attacks themselves are in the hostile_*.cpp files (hostile_attacks.h).
#pragma once
#include <initializer_list>

#include "bench/libc/user.h"
#include "base/lib/format.h"

namespace hostile {

using namespace pvk::user;

// Failure bookkeeping of the current attack (shared by its victims).
void count_check(int line);
void fail(int line, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void detail(const char* key, int64_t value);  // replaces an earlier value of key
void detail_str(const char* key, const char* value);

#define HCHECK(cond, ...)                                   \
  do {                                                      \
    ::hostile::count_check(__LINE__);                       \
    if (!(cond)) ::hostile::fail(__LINE__, __VA_ARGS__);    \
  } while (0)

// How a victim ended.
struct Outcome {
  int status = 0;          // wait status (INT32_MIN: fork or wait failed)
  bool timed_out = false;  // killed by the deadline
  uint64_t ns = 0;         // from fork to reap
};

// A victim that returns from its function exits with this status.
inline constexpr int kVictimSurvived = 99;

// How long a victim may run before it counts as hung and is SIGKILLed. Only
// a guard against hangs, never a judgement of speed: a healthy victim takes
// milliseconds of the guest's clock, but under TCG without -icount the
// guest's clock is the host's, and a loaded host can stretch them a
// hundredfold.
inline constexpr uint64_t kHangMs = 60'000;

// Forks a victim running fn(arg) and reaps it (wait_victim).
Outcome run_victim(void (*fn)(uint64_t), uint64_t arg);
// Reaps pid; SIGKILLs it first if it is still running after kHangMs.
Outcome wait_victim(int64_t pid);
Outcome wait_deadline(int64_t pid, uint64_t deadline_ms);
const char* describe(char* buf, size_t cap, const Outcome& o);
bool died_of_one_of(const Outcome& o, std::initializer_list<int> sigs);
void expect_signal(int line, const char* what, const Outcome& o, std::initializer_list<int> sigs);
void expect_exit(int line, const char* what, const Outcome& o, int code);
#define EXPECT_SIGNAL(what, o, ...) ::hostile::expect_signal(__LINE__, what, o, {__VA_ARGS__})
#define EXPECT_EXIT(what, o, code) ::hostile::expect_exit(__LINE__, what, o, code)

// mmap(MAP_SHARED|MAP_ANONYMOUS|MAP_FIXED) at addr; nullptr on failure.
void* map_fixed_shared(uint64_t addr, size_t len, uint64_t prot);

struct Attack {
  const char* name;
  void (*fn)();
};
extern const Attack kAttacks[];
extern const unsigned kAttackCount;

// Signals beyond abi.h's list (Linux numbers).
inline constexpr int SIGILL = 4, SIGTRAP = 5, SIGBUS = 7, SIGUSR2 = 12, SIGCONT = 18, SIGURG = 23,
                     SIGWINCH = 28;

}  // namespace hostile
