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
//    caller's space, which also needs only its lock where it suffices);
//  - read and write of a pipe end: the descriptor looked up under its
//    table's lock with a reference of the call's own
//    (kernel/proc/fd_table.h), the bytes and the sleeps under the pipe's
//    lock (kernel/proc/pipe.h); SIGPIPE takes the kernel lock for just
//    that. Any other kind of file takes the locked path. Only where the
//    space's lock suffices (the copies may fault);
//  - close of a pipe end: its slot cleared under the table's lock, its
//    last put under the pipe's;
//  - uname, the uid/gid calls, getrlimit/prlimit64, set_robust_list,
//    getrandom, sysinfo (kernel/proc/linux_calls.cpp) and
//    set_tid_address: constants, the calling thread's own fields, its
//    memory, and words read or advanced whole (the random stream's
//    position, the frame counts, each process slot's state). Only where
//    the space's lock suffices (the copies may fault).
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
#include "kernel/proc/fd_table.h"
#include "kernel/proc/futex.h"
#include "kernel/proc/linux_calls.h"
#include "kernel/kernel_lock.h"
#include "kernel/proc/mm_calls.h"
#include "kernel/proc/process.h"
#include "kernel/proc/unlocked_return.h"

extern "C" void syscall_dispatch(pvk::TrapFrame* f);  // kernel/proc/syscalls.cpp: under the kernel lock

namespace pvk {
namespace {

// The call's arguments, read from the frame only by the calls that take
// any.
struct Args {
  uint64_t v[6];
};
Args args_of(const TrapFrame& f) { return Args{{f.rdi, f.rsi, f.rdx, f.r10, f.r8, f.r9}}; }

// read or write on a pipe end; false (nothing done) for any other
// descriptor, which the locked path handles (or finds bad).
bool pipe_call(uint64_t nr, const Args& a, int64_t& ret) {
  const FileRef f = fd_get_pipe_end(a.v[0]);
  if (!f) return false;
  const ErrorOr<uint64_t> r =
      nr == abi::SYS_read ? file_read(f.get(), a.v[1], a.v[2]) : file_write(f.get(), a.v[1], a.v[2]);
  ret = r.is_error() ? -static_cast<int64_t>(r.error()) : static_cast<int64_t>(r.value());
  return true;
}

// True if it ran the call in f (its result in f.rax, ready to return to
// user mode); false if the call needs the kernel lock. Inline in
// syscall_other, so a false is a jump to the locked call.
[[gnu::always_inline]] inline bool unlocked_call(TrapFrame& f) {
  Process* p = current();
  int64_t ret;
  switch (f.rax) {
    case abi::SYS_mprotect:
      if (!p->as || !space_lock_suffices()) return false;
      ret = mprotect_call(*p->as, f.rdi, f.rsi, f.rdx);
      break;
    case abi::SYS_munmap:
      if (!p->as || !space_lock_suffices()) return false;
      ret = munmap_call(*p->as, f.rdi, f.rsi);
      break;
    case abi::SYS_mmap:
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
    case abi::SYS_read:
    case abi::SYS_write:
      if (!p->as || !space_lock_suffices() || !pipe_call(f.rax, args_of(f), ret)) return false;
      break;
    case abi::SYS_close:
      // A pipe end's last put takes the pipe's lock alone; any other
      // kind's takes the kernel lock's (the locked path).
      if (!fd_close_pipe_end(f.rdi)) return false;
      ret = 0;
      break;
    case abi::SYS_clock_gettime:
    case abi::SYS_gettimeofday:
    case abi::SYS_time:
      if (!space_lock_suffices() || !clock_call(f.rax, args_of(f).v, ret)) return false;
      break;
    case abi::SYS_uname:
    case abi::SYS_getuid:
    case abi::SYS_getgid:
    case abi::SYS_geteuid:
    case abi::SYS_getegid:
    case abi::SYS_getrlimit:
    case abi::SYS_prlimit64:
    case abi::SYS_set_robust_list:
    case abi::SYS_getrandom:
    case abi::SYS_sysinfo:
      if (!p->as || !space_lock_suffices() || !linux_own_call(f.rax, args_of(f).v, ret)) return false;
      break;
    case abi::SYS_set_tid_address:
      // The thread's own word, read by its own exit alone.
      p->clear_child_tid = f.rdi;
      ret = p->pid;
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

// Out of line: only the calls unlocked_call leaves take its saves.
[[gnu::noinline]] void locked_call(TrapFrame& f) {
  kernel_lock();
  syscall_dispatch(&f);
  kernel_unlock();
}

}  // namespace

void syscall_other(TrapFrame& f) {
  if (!unlocked_call(f)) locked_call(f);
}

void return_under_kernel_lock(TrapFrame& f) {
  kernel_lock();
  fs::run_deferred_puts();
  prepare_return_to_user(f);
  kernel_unlock();
}

}  // namespace pvk
