// futex(2): FUTEX_WAIT and FUTEX_WAKE, and their _BITSET forms (glibc's
// pthread_join, condition variables and timed locks wait with
// FUTEX_WAIT_BITSET), keyed on (address space, user address,
// FUTEX_PRIVATE_FLAG). As on Linux a private wake does not reach a
// shared wait on the same word; unlike Linux, a shared futex in a
// MAP_SHARED page is only seen within one process (no page-based keys).
#pragma once
#include <stdint.h>

#include "base/abi.h"
#include "base/lib/error_or.h"

namespace pvk {

class AddressSpace;

// Sleeps while *uaddr == expected: 0 when woken, EAGAIN if the value
// differs, EFAULT / EINVAL for a bad address, EINTR for a signal,
// ETIMEDOUT once timeout_ns (0: none) has passed. Only a wake whose bitset
// shares a bit with `bitset` (never 0) reaches it.
enum class FutexScope : uint8_t { Shared, Private };
ErrorOr<int> futex_wait(uint64_t uaddr, FutexScope scope, uint32_t expected, uint64_t timeout_ns,
                        uint32_t bitset = abi::FUTEX_BITSET_MATCH_ANY);
// Wakes up to n waiters on (as, uaddr) whose bitset meets `bitset`;
// returns how many.
int futex_wake(const AddressSpace* as, uint64_t uaddr, FutexScope scope, int n,
               uint32_t bitset = abi::FUTEX_BITSET_MATCH_ANY);

// Init has exited and every process slot was freed without running
// again: their waiters (entries on their kernel stacks) are gone too.
void futex_forget_all();

// The system call: (uaddr, op, val, timeout, uaddr2, val3).
int64_t sys_futex(const uint64_t (&a)[6]);

}  // namespace pvk
