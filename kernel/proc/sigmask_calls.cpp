// rt_sigprocmask and rt_sigsuspend, with Linux's semantics: one 64-bit
// mask per thread (sigsetsize must be 8), SIGKILL and SIGSTOP never
// blocked, and rt_sigsuspend waiting under a temporary mask until a
// signal that does something arrives, returning EINTR with the caller's
// own mask saved in the handler's frame (so sigreturn restores it).
#include "kernel/proc/sigmask_calls.h"

#include "kernel/proc/process.h"
#include "kernel/proc/process_parts.h"
#include "kernel/proc/syscall_result.h"
#include "kernel/proc/user_copy.h"

namespace pvk {
namespace {

constexpr uint64_t kSigBlock = 0, kSigUnblock = 1, kSigSetmask = 2;
constexpr uint64_t kUnblockable = (uint64_t{1} << (abi::SIGKILL - 1)) | (uint64_t{1} << (abi::SIGSTOP - 1));

int64_t sys_rt_sigprocmask(uint64_t how, uint64_t user_set, uint64_t user_old, uint64_t size) {
  if (size != sizeof(uint64_t)) return syscall_result(Errno::EINVAL);
  Process& p = *current();
  uint64_t set = 0;
  if (user_set) {
    if (how != kSigBlock && how != kSigUnblock && how != kSigSetmask) return syscall_result(Errno::EINVAL);
    if (auto r = copy_from_user(&set, user_set, sizeof set); r.is_error()) return syscall_result(r);
  }
  if (user_old)
    if (auto r = copy_to_user(user_old, &p.blocked, sizeof p.blocked); r.is_error()) return syscall_result(r);
  if (!user_set) return 0;
  // A signal unblocked here and already pending is delivered on the way
  // out, like every pending signal.
  if (how == kSigBlock) p.blocked |= set;
  if (how == kSigUnblock) p.blocked &= ~set;
  if (how == kSigSetmask) p.blocked = set;
  p.blocked &= ~kUnblockable;
  return 0;
}

int64_t sys_rt_sigsuspend(uint64_t user_mask, uint64_t size) {
  if (size != sizeof(uint64_t)) return syscall_result(Errno::EINVAL);
  uint64_t mask;
  if (auto r = copy_from_user(&mask, user_mask, sizeof mask); r.is_error()) return syscall_result(r);
  Process& p = *current();
  p.suspend_saved_mask = p.blocked;
  p.suspend_mask_pending = true;
  p.blocked = mask & ~kUnblockable;
  // send_signal makes a blocked thread runnable when the signal acts.
  while (!signal_interrupts(p)) sleep_on(&p.suspend_saved_mask);
  return syscall_result(Errno::EINTR);
}

}  // namespace

bool signal_mask_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret) {
  switch (nr) {
    case abi::SYS_rt_sigprocmask: ret = sys_rt_sigprocmask(a[0], a[1], a[2], a[3]); return true;
    case abi::SYS_rt_sigsuspend: ret = sys_rt_sigsuspend(a[0], a[1]); return true;
    default: return false;
  }
}

}  // namespace pvk
