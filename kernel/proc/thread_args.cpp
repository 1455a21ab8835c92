#include "kernel/proc/thread_args.h"

namespace pvk {
namespace {

using abi::CLONE_VM, abi::CLONE_FS, abi::CLONE_FILES, abi::CLONE_SIGHAND, abi::CLONE_THREAD, abi::CLONE_SYSVSEM,
    abi::CLONE_SETTLS, abi::CLONE_PARENT_SETTID, abi::CLONE_CHILD_CLEARTID, abi::CLONE_CHILD_SETTID, abi::CSIGNAL;

// What clone understands. The rest (CLONE_VFORK, CLONE_PARENT, namespaces,
// pidfds, ptrace) pvk cannot honour: EINVAL, never a silent half-clone.
// CLONE_FS and CLONE_SYSVSEM are accepted: pvk has no working directory,
// umask or System V semaphores, so there is nothing to share or copy.
constexpr uint64_t kKnownCloneFlags = CSIGNAL | CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                                      CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID |
                                      CLONE_CHILD_SETTID;

}  // namespace

ErrorOr<CloneKind> check_clone_args(uint64_t flags, uint64_t newsp, uint64_t tls) {
  if (flags & ~kKnownCloneFlags) return Errno::EINVAL;
  if ((flags & CLONE_THREAD) && !(flags & CLONE_SIGHAND)) return Errno::EINVAL;
  if ((flags & CLONE_SIGHAND) && !(flags & CLONE_VM)) return Errno::EINVAL;
  // pvk shares a space only within a thread group, and the group's file
  // table with it; it shares no file table between processes. (A new
  // process' CLONE_CHILD_SETTID word is written by the child itself, on
  // its way to user mode: glibc's fork asks for it.)
  if ((flags & CLONE_VM) && !((flags & CLONE_THREAD) && (flags & CLONE_FILES))) return Errno::EINVAL;
  if (!(flags & CLONE_VM) && (flags & CLONE_FILES)) return Errno::EINVAL;
  // A stack the child could never use; the TLS base as arch_prctl checks it
  // (Linux's TASK_SIZE_MAX bound: no kernel or non-canonical base).
  if (newsp >= abi::kUserTop) return Errno::EINVAL;
  if ((flags & CLONE_SETTLS) && tls >= abi::kUserTop) return Errno::EPERM;
  return (flags & CLONE_VM) ? CloneKind::Thread : CloneKind::Process;
}

ErrorOr<uint64_t> futex_timeout_ns(const abi::Timespec& ts) {
  if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return Errno::EINVAL;
  constexpr int64_t kMaxSec = 1000000000;  // ~31 years: far below where ns overflow
  const int64_t sec = ts.tv_sec > kMaxSec ? kMaxSec : ts.tv_sec;
  const uint64_t ns = static_cast<uint64_t>(sec) * 1000000000 + static_cast<uint64_t>(ts.tv_nsec);
  return ns ? ns : 1;  // 0 means "no timeout" to futex_wait
}

ErrorOr<uint64_t> futex_deadline_timeout_ns(const abi::Timespec& at, uint64_t now_ns) {
  const uint64_t at_ns = TRY(futex_timeout_ns(at));  // validated, capped (1 for the epoch itself: past anyway)
  return at_ns > now_ns ? at_ns - now_ns : 1;
}

uint64_t ns_to_tsc_cycles(uint64_t ns, uint64_t tsc_khz) {
  constexpr uint64_t kNsPerSec = 1000000000;
  uint64_t whole;
  // tsc_khz * 1000 is the TSC's Hz; a second's worth per whole second.
  if (__builtin_mul_overflow(ns / kNsPerSec, tsc_khz * 1000, &whole)) return UINT64_MAX;
  // The rest is below a second: (ns % 1e9) * khz < 1e9 * 2^32 fits 64 bits for any khz below 2^32 (4 THz).
  const uint64_t rest = (ns % kNsPerSec) * tsc_khz / 1000000;
  uint64_t sum;
  if (__builtin_add_overflow(whole, rest, &sum)) return UINT64_MAX;
  return sum;
}

uint64_t deadline_after(uint64_t now, uint64_t cycles) {
  uint64_t at;
  return __builtin_add_overflow(now, cycles, &at) ? UINT64_MAX : at;
}

}  // namespace pvk
