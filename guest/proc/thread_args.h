// The pure checks of the thread calls' arguments (no process state), so
// the host tests can drive them: which clone flag sets pvk honours, and a
// futex timeout's validity.
#pragma once
#include <stdint.h>

#include "base/abi.h"
#include "base/lib/error_or.h"

namespace pvk {

// What kind of child a clone with these flags makes.
enum class CloneKind : uint8_t { Thread, Process };

// EINVAL for flag sets pvk cannot honour (Linux's own rules first: a
// thread shares the signal actions, which need the same memory) and for a
// stack outside user space; EPERM for a TLS base arch_prctl would refuse.
ErrorOr<CloneKind> check_clone_args(uint64_t flags, uint64_t newsp, uint64_t tls);

// A relative futex timeout in ns (at least 1; capped where the sum would
// overflow); EINVAL for a negative or unnormalised timespec.
ErrorOr<uint64_t> futex_timeout_ns(const abi::Timespec& ts);

}  // namespace pvk
