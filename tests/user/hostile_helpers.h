// Helpers that several of hostile's attack files share: the RFLAGS bits,
// a signal handler that longjmps out, and the TSC as a clock.
#pragma once
#include "flagged_syscall.h"
#include "hostile.h"

namespace hostile {

// RFLAGS bits.
// The flags the attacks set (flagged_syscall.h has the ones it clears again).
inline constexpr uint64_t kCF = 1, kTF = kFlagTF, kIF = 1u << 9, kDF = kFlagDF, kIOPL = kFlagIOPL, kNT = kFlagNT,
                          kVM = 1u << 17, kAC = kFlagAC;
inline constexpr uint64_t kClearAfter = kFlagsClearedAfter;

inline uint64_t read_flags() {
  uint64_t f;
  asm volatile("pushfq\n\tpop %0" : "=r"(f));
  return f;
}

inline constexpr uint64_t kW = kPage / 8;  // words per page

// A handler that notes the signal and the RFLAGS it was entered with, then
// longjmps to g_jmp.
inline JmpBuf g_jmp;
inline volatile int g_sig_seen;
inline volatile uint64_t g_handler_flags;
inline void escape_handler(int sig) {
  g_handler_flags = read_flags();
  g_sig_seen = sig;
  pvk_longjmp(&g_jmp, 1);
}

// The TSC and its rate (the kernel's counters; 1 GHz if they lack it).
inline uint64_t tsc_per_ms() {
  PvkCounters c;
  if (read_counters(&c) != 0 || !c.tsc_khz) return 1000000;
  return c.tsc_khz;
}
inline uint64_t rdtsc() {
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

}  // namespace hostile
