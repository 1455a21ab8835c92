// The system calls about CPUs (kernel/proc/cpu_calls.cpp): which CPUs a
// thread may run on (sched_setaffinity, sched_getaffinity) and which one
// it runs on now (getcpu), with Linux x86-64 numbers and errno values.
#pragma once
#include <stdint.h>

namespace pvk {

// The call's result as rax, or false if `nr` is none of these calls.
bool cpu_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret);

}  // namespace pvk
