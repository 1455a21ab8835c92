// The system calls that change the caller's address space
// (kernel/proc/mm_calls.cpp): mmap, munmap, mprotect and brk, with Linux
// x86-64 numbers and errno values. Anonymous memory needs only the space's
// own lock (mm/address_space.h), so these also run without the kernel lock
// (kernel/proc/unlocked_calls.cpp); a file mapping needs it for the file
// table.
#pragma once
#include <stdint.h>

#include "base/abi.h"
#include "kernel/proc/syscall_result.h"
#include "mm/address_space.h"

namespace pvk {

// mprotect and munmap straight from their registers, inline: the unlocked
// path's most frequent mm calls, without an argument array or mm_call's
// switch and register saves (together 40 instructions of a one-page
// mprotect's 1,125).
inline int64_t mprotect_call(AddressSpace& as, uint64_t addr, uint64_t len, uint64_t prot) {
  if (prot & ~uint64_t{abi::PROT_READ | abi::PROT_WRITE | abi::PROT_EXEC}) return syscall_result(Errno::EINVAL);
  return syscall_result(as.mprotect(VirtAddr{addr}, len, static_cast<uint32_t>(prot)));
}
inline int64_t munmap_call(AddressSpace& as, uint64_t addr, uint64_t len) {
  return syscall_result(as.munmap(VirtAddr{addr}, len));
}

// The call's result as rax, or false if `nr` is none of these calls.
// With `unlocked`, also false for a call that needs the kernel lock (a
// file mapping), which the caller then makes under it.
bool mm_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret, bool unlocked = false);

}  // namespace pvk
