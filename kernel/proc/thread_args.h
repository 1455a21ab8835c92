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
// FUTEX_WAIT_BITSET's timeout is an absolute time of the clock (pvk's
// CLOCK_MONOTONIC and CLOCK_REALTIME are the same, boot-relative): the
// relative timeout left from now_ns, at least 1 (a time already past still
// expires, once the futex word has been checked, as on Linux). The same
// refusals as futex_timeout_ns.
ErrorOr<uint64_t> futex_deadline_timeout_ns(const abi::Timespec& at, uint64_t now_ns);

// ns of time as TSC cycles at tsc_khz, without overflow: whole seconds and
// the rest are converted apart (ns/1000 * khz/1000 would overflow 64 bits
// past ~79 days at 2.7 GHz), and a product past 64 bits saturates at
// UINT64_MAX, which a deadline treats as "never".
uint64_t ns_to_tsc_cycles(uint64_t ns, uint64_t tsc_khz);
// A deadline `cycles` after `now`, saturating instead of wrapping.
uint64_t deadline_after(uint64_t now, uint64_t cycles);

}  // namespace pvk
