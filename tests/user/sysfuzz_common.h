// What the fuzzer's modes share (sysfuzz.cpp, sysfuzz_lifetimes*.cpp): the
// seeded randomness and the free-frame count the leak checks compare.
#pragma once
#include <stdint.h>

#include "bench/libc/user.h"

namespace sysfuzz {

// xorshift64: everything a run does is derived from its seed.
struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  bool one_in(uint64_t n) { return below(n) == 0; }
};

// splitmix64's finaliser: seeds of children and threads from (seed, index).
inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x = x ^ (x >> 31);
  return x ? x : 0x1234567;
}

inline uint64_t free_frames() {
  pvk::user::PvkCounters c;
  return pvk::user::read_counters(&c) == 0 ? c.free_frames : 0;
}

// Every child is reaped: give the kernel a moment to finish tearing down
// (a thread's last frames go once it has left the CPU), then read the count.
inline uint64_t settled_free_frames(uint64_t baseline) {
  uint64_t now = free_frames();
  for (int i = 0; i < 50 && now != baseline; ++i) {
    pvk::user::sched_yield();
    int st;
    while (pvk::user::wait4(-1, &st, pvk::user::WNOHANG) > 0) {
    }
    now = free_frames();
  }
  return now;
}

}  // namespace sysfuzz
