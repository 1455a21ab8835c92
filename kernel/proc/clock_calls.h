// The clock system calls (kernel/proc/clock_calls.cpp): clock_gettime,
// gettimeofday and time, with Linux x86-64 numbers and errno values. Every
// clock is the boot-relative TSC, so they all agree. They touch nothing but
// the caller's memory, so they also run without the kernel lock
// (kernel/proc/unlocked_calls.cpp).
#pragma once
#include <stdint.h>

namespace pvk {

// Nanoseconds since boot: every clock's reading.
uint64_t now_ns();

// The call's result as rax, or false if `nr` is none of these calls.
bool clock_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret);

}  // namespace pvk
