// nanosleep(2) and clock_nanosleep(2), on the timed sleeps of
// kernel/proc/timed_sleep.cpp: the caller is off its CPU for the whole
// sleep. Every clock reads the boot-relative TSC, as clock_gettime does.
#pragma once
#include <stdint.h>

namespace pvk {

// (const Timespec* req, Timespec* rem)
int64_t sys_nanosleep(const uint64_t (&a)[6]);
// (clockid, flags, const Timespec* req, Timespec* rem)
int64_t sys_clock_nanosleep(const uint64_t (&a)[6]);

}  // namespace pvk
