// The descriptor tables' locks (kernel/proc/fd_table.h). A group's table
// lives in its leader's process slot, and Process is reset by assignment
// (a lock cannot be), so the locks are an array beside the table of slots,
// one per slot, that of the leader's slot guarding the group's table.
#include "kernel/proc/fd_table.h"

#include "kernel/proc/process_parts.h"

namespace pvk {

namespace {

constexpr LockClass kFdTableClass{"fd_table", LockRank::FdTable, LockStat::fd_table};

struct FdTableLock {
  Spinlock lock{kFdTableClass};
};
FdTableLock g_fd_locks[proc::kMaxProcs];

Spinlock& lock_of(const Process& leader) {
  const auto slot = &leader - proc::g_procs;
  if (slot < 0 || slot >= static_cast<long>(proc::kMaxProcs)) panic("descriptor table of no process slot (%p)", &leader);
  return g_fd_locks[slot].lock;
}

bool is_pipe_end(const File* f) { return f && (f->kind == File::Kind::PipeRead || f->kind == File::Kind::PipeWrite); }

// The close-on-exec bits are also set alone (fcntl F_SETFD, under the
// kernel lock): atomic, so neither change loses the other's.
void set_cloexec_bit(Process& leader, unsigned fd, bool on) {
  if (on)
    __atomic_fetch_or(&leader.cloexec, 1u << fd, __ATOMIC_RELAXED);
  else
    __atomic_fetch_and(&leader.cloexec, ~(1u << fd), __ATOMIC_RELAXED);
}

}  // namespace

File* fd_swap(Process& leader, unsigned fd, File* f, bool cloexec) {
  Spinlock& l = lock_of(leader);
  l.lock_irqs_off();
  File* old = leader.fds[fd];
  __atomic_store_n(&leader.fds[fd], f, __ATOMIC_RELAXED);
  set_cloexec_bit(leader, fd, f && cloexec);
  l.unlock_irqs_off();
  return old;
}

File* fd_hold(const Process& leader, uint64_t fd) {
  if (fd >= Process::kMaxFds) return nullptr;
  Spinlock& l = lock_of(leader);
  l.lock_irqs_off();
  File* f = leader.fds[fd];
  if (f) file_get(f);  // the slot's reference keeps it while the lock is held
  l.unlock_irqs_off();
  return f;
}

static_assert(kMaxFdSlots == Process::kMaxFds, "fd_table.h's slot count is the process's");

uint32_t fd_hold_all(const Process& leader, File* (&out)[kMaxFdSlots]) {
  Spinlock& l = lock_of(leader);
  l.lock_irqs_off();
  for (unsigned fd = 0; fd < kMaxFdSlots; ++fd)
    if ((out[fd] = leader.fds[fd])) file_get(out[fd]);
  const uint32_t cloexec = __atomic_load_n(&leader.cloexec, __ATOMIC_RELAXED);
  l.unlock_irqs_off();
  return cloexec;
}

void fd_take_all(Process& leader, File* (&out)[kMaxFdSlots]) {
  Spinlock& l = lock_of(leader);
  l.lock_irqs_off();
  for (unsigned fd = 0; fd < kMaxFdSlots; ++fd) {
    out[fd] = leader.fds[fd];
    __atomic_store_n(&leader.fds[fd], static_cast<File*>(nullptr), __ATOMIC_RELAXED);
  }
  __atomic_store_n(&leader.cloexec, 0u, __ATOMIC_RELAXED);
  l.unlock_irqs_off();
}

bool fd_close_pipe_end(uint64_t fd) {
  if (fd >= Process::kMaxFds) return false;
  Process& leader = *current()->leader;
  Spinlock& l = lock_of(leader);
  l.lock_irqs_off();
  File* f = leader.fds[fd];
  const bool pipe_end = is_pipe_end(f);
  if (pipe_end) {
    __atomic_store_n(&leader.fds[fd], static_cast<File*>(nullptr), __ATOMIC_RELAXED);
    set_cloexec_bit(leader, static_cast<unsigned>(fd), false);
  }
  l.unlock_irqs_off();
  if (pipe_end) file_put(f);  // the table's reference; a call using f holds its own
  return pipe_end;
}

FileRef fd_get_pipe_end(uint64_t fd) {
  if (fd >= Process::kMaxFds) return FileRef();
  Process& leader = *current()->leader;
  Spinlock& l = lock_of(leader);
  l.lock_irqs_off();
  File* f = __atomic_load_n(&leader.fds[fd], __ATOMIC_RELAXED);
  // The slot's reference keeps f (and its kind) while the lock is held.
  FileRef ref(is_pipe_end(f) ? f : nullptr);
  l.unlock_irqs_off();
  return ref;
}

}  // namespace pvk
