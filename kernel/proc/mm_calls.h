// The system calls that change the caller's address space
// (kernel/proc/mm_calls.cpp): mmap, munmap, mprotect and brk, with Linux
// x86-64 numbers and errno values. Anonymous memory needs only the space's
// own lock (mm/address_space.h), so these also run without the kernel lock
// (kernel/proc/unlocked_calls.cpp); a file mapping needs it for the file
// table.
#pragma once
#include <stdint.h>

namespace pvk {

// The call's result as rax, or false if `nr` is none of these calls.
// With `unlocked`, also false for a call that needs the kernel lock (a
// file mapping), which the caller then makes under it.
bool mm_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret, bool unlocked = false);

}  // namespace pvk
