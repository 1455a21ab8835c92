// Small Linux system calls every glibc program makes at startup or on its
// way (kernel/proc/linux_calls.cpp), and the record of the ones pvk lacks.
#pragma once
#include <stdint.h>

namespace pvk {

// The call's result as rax, or false if `nr` is none of these calls.
bool linux_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret);
// The subset that reads only constants or words read whole and writes only
// the caller's own memory (uname, the uid/gid calls, getrlimit/prlimit64,
// set_robust_list; getrandom, whose generator is one atomic word; sysinfo,
// a snapshot of atomic counters and slot states): they need no lock of the
// kernel's, and run on the unlocked path.
bool linux_own_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret);

// An unimplemented system call: ENOSYS for the caller, and an `enosys`
// record the first time each number is asked for, so a user sees what a
// program needed.
int64_t unimplemented_call(uint64_t nr);

}  // namespace pvk
