// The system calls that run without the kernel lock. A call belongs here
// when everything it touches has a lock of its own, or is the calling
// thread's own:
//  - getpid, gettid, getppid: the thread's ids (a parent's exit rewrites
//    ppid under the kernel lock: one aligned word, read whole), answered
//    before this file by the entry itself (kernel/proc/syscall_entry.cpp);
//  - sched_yield: the run queues have locks of their own, and a thread
//    switched away without the kernel lock comes back without it;
//  - mmap of anonymous memory, munmap, mprotect, brk (kernel/proc/
//    mm_calls.cpp): the caller's address space under its own lock, with
//    frames, shootdowns and file mappings' references each under their own
//    (a file's last mapping dropped here is put later, under the kernel
//    lock: kernel/fs/file_pages.cpp). Only where that lock suffices
//    (space_lock_suffices: the backend, ptshare, fault injection);
//  - futex (WAIT, WAKE and their _BITSET forms): a lock per hash bucket,
//    and sleeps and wake-ups that need no common lock (kernel/proc/wake.h);
//    only where the space's lock suffices (a fault in its copies);
//  - clock_gettime, gettimeofday, time (kernel/proc/clock_calls.cpp): the
//    TSC and the caller's memory (a copy that faults is a fault of the
//    caller's space, which also needs only its lock where it suffices).
// The space lives while this thread does: its last thread's exit, and
// exec's ending of the other threads, wait for this one to come back
// through the kernel lock.
//
// The way back to user mode takes the kernel lock only when it has work
// for it: a deliverable signal, deferred file puts
// (kernel/proc/unlocked_return.h).
#include "base/abi.h"
#include "kernel/fs/file_pages.h"
#include "kernel/proc/clock_calls.h"
#include "kernel/proc/futex.h"
#include "kernel/kernel_lock.h"
#include "kernel/proc/mm_calls.h"
#include "kernel/proc/process.h"
#include "kernel/proc/unlocked_return.h"

namespace pvk {
namespace {

// The call's arguments, read from the frame only by the calls that take
// any.
struct Args {
  uint64_t v[6];
};
Args args_of(const TrapFrame& f) { return Args{{f.rdi, f.rsi, f.rdx, f.r10, f.r8, f.r9}}; }

}  // namespace

bool syscall_unlocked(TrapFrame& f) {
  Process* p = current();
  int64_t ret;
  switch (f.rax) {
    case abi::SYS_mmap:
    case abi::SYS_munmap:
    case abi::SYS_mprotect:
    case abi::SYS_brk:
      if (!p->as || !space_lock_suffices() || !mm_call(f.rax, args_of(f).v, ret, /*unlocked=*/true)) return false;
      break;
    case abi::SYS_futex:
      // Its own hash buckets' locks (kernel/proc/futex.cpp) and the wake
      // protocol of kernel/proc/wake.h; faults in its copies need only the
      // space's lock where that suffices.
      if (!p->as || !space_lock_suffices()) return false;
      ret = sys_futex(args_of(f).v);
      break;
    case abi::SYS_clock_gettime:
    case abi::SYS_gettimeofday:
    case abi::SYS_time:
      if (!space_lock_suffices() || !clock_call(f.rax, args_of(f).v, ret)) return false;
      break;
    case abi::SYS_sched_yield:
      schedule();  // the run queues have locks of their own
      ret = 0;
      break;
    default:
      return false;
  }
  f.rax = static_cast<uint64_t>(ret);
  finish_unlocked_call(*p, f);
  return true;
}

void return_under_kernel_lock(TrapFrame& f) {
  kernel_lock();
  fs::run_deferred_puts();
  prepare_return_to_user(f);
  kernel_unlock();
}

}  // namespace pvk
