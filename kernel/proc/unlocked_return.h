// When a system call that ran without the kernel lock needs it on its way
// back to user mode: a signal is deliverable, a file's last mapping was
// dropped and its put waits (kernel/fs/file_pages.h), or the frame would
// leave for an address outside user space (prepare_return_to_user's last
// line of defence kills the caller). Inline: the null calls of
// syscall_entry.cpp ask it on every return, and the answer is almost
// always no (a few loads).
#pragma once
#include "base/abi.h"
#include "kernel/fs/file_pages.h"
#include "kernel/proc/process.h"

namespace pvk {

inline bool return_needs_kernel_lock(const Process& p, const TrapFrame& f) {
  return (__atomic_load_n(&p.pending, __ATOMIC_RELAXED) & ~p.blocked) || fs::puts_deferred() ||
         f.rip >= abi::kUserTop;
}

// The lock taken for that work and dropped (process.h:
// return_under_kernel_lock), after the call's result is in f.rax.
inline void finish_unlocked_call(const Process& p, TrapFrame& f) {
  if (__builtin_expect(return_needs_kernel_lock(p, f), 0)) return_under_kernel_lock(f);
}

}  // namespace pvk
