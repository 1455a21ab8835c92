// Threads: clone of a thread (CLONE_THREAD and its companions) or of a
// process, the thread-group calls (gettid, set_tid_address, tgkill, exit's
// CLONE_CHILD_CLEARTID), signals sent to a whole process, and each thread's
// FS base (arch_prctl, CLONE_SETTLS) loaded on every switch.
#pragma once
#include <stdint.h>

#include "base/lib/error_or.h"

namespace pvk {

struct Process;

// (flags, newsp, parent_tid, child_tid, tls): the new thread's or child's id.
ErrorOr<int> do_clone(uint64_t flags, uint64_t newsp, uint64_t parent_tid, uint64_t child_tid, uint64_t tls);
ErrorOr<int> do_tgkill(int64_t tgid, int64_t tid, uint64_t sig);
// kill(pid): to the process pid belongs to, delivered to one of its threads
// that does not block it.
ErrorOr<int> do_kill(int64_t pid, uint64_t sig);
ErrorOr<uint64_t> do_arch_prctl(uint64_t code, uint64_t addr);
// execve from a thread group (Linux's de_thread): every other thread is
// killed and waited for, and the caller becomes the group's only thread
// and its leader, with the process' pid. EINTR if the caller is killed
// meanwhile.
ErrorOr<void> become_single_threaded(Process& self);
// After a successful exec: no TLS, no tid word of the old image.
void reset_thread_state_after_exec(Process& p);

// The exit path: CLONE_CHILD_CLEARTID's word zeroed and its waiter woken,
// while the address space is still live.
void clear_child_tid(Process& p);
// On every switch: load next's FS base unless prev's (which the CPU
// holds) is the same.
void switch_fs_base(const Process* prev, const Process& next);

}  // namespace pvk
