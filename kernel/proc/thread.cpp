// Threads on pvk: a thread is a Process slot of its leader's group
// (kernel/proc/process.h says what the leader owns for the group).
#include "kernel/proc/thread.h"

#include "base/abi.h"
#include "base/arch/platform.h"
#include "base/lib/kstring.h"
#include "kernel/proc/fpu_state.h"
#include "kernel/proc/futex.h"
#include "kernel/proc/process.h"
#include "kernel/proc/thread_args.h"
#include "kernel/proc/user_copy.h"

namespace pvk {
namespace {

using abi::ARCH_GET_FS, abi::ARCH_SET_FS, abi::kNumSignals, abi::kUserTop;
using abi::CLONE_SETTLS, abi::CLONE_PARENT_SETTID, abi::CLONE_CHILD_CLEARTID, abi::CLONE_CHILD_SETTID;

bool live(const Process& t) { return t.state != ProcState::Free && t.state != ProcState::Zombie; }

uint64_t sig_bit(uint64_t sig) { return uint64_t{1} << (sig - 1); }

ErrorOr<int> clone_thread(uint64_t flags, uint64_t newsp, uint64_t parent_tid, uint64_t child_tid, uint64_t tls) {
  Process& self = *current();
  Process& group = *self.leader;
  // The group is dying, or an execve is ending its other threads: no new member.
  if (group.group_exiting || group.exec_thread) return Errno::EAGAIN;
  Process* t = alloc_process();
  if (!t) return Errno::EAGAIN;
  t->tgid = group.tgid;
  t->leader = &group;
  t->live_threads = 0;
  t->ppid = group.ppid;
  t->as = self.as;
  t->blocked = self.blocked;
  t->fs_base = (flags & CLONE_SETTLS) ? tls : self.fs_base;
  t->affinity = self.affinity;
  memcpy(t->name, self.name, sizeof t->name);
  *t->frame() = *self.frame();
  t->frame()->rax = 0;
  fpu_copy_running(*t, self);
  if (newsp) t->frame()->rsp = newsp;
  if (flags & CLONE_CHILD_CLEARTID) t->clear_child_tid = child_tid;
  // pid_t words written before the thread can run: a bad pointer undoes it.
  const int32_t tid = t->pid;
  if (flags & CLONE_PARENT_SETTID)
    if (auto r = copy_to_user(parent_tid, &tid, sizeof tid); r.is_error()) return free_unstarted(*t), r.error();
  if (flags & CLONE_CHILD_SETTID)
    if (auto r = copy_to_user(child_tid, &tid, sizeof tid); r.is_error()) return free_unstarted(*t), r.error();
  prepare_first_switch(*t);
  ++group.live_threads;
  make_runnable(*t);
  return tid;
}

ErrorOr<int> clone_process(uint64_t flags, uint64_t newsp, uint64_t parent_tid, uint64_t child_tid, uint64_t tls) {
  if ((flags & CLONE_PARENT_SETTID) && !user_range_ok(parent_tid, sizeof(int32_t))) return Errno::EFAULT;
  const int pid = TRY(do_fork());
  Process& child = *find_process(pid);
  if (newsp) child.frame()->rsp = newsp;
  if (flags & CLONE_SETTLS) child.fs_base = tls;
  if (flags & CLONE_CHILD_CLEARTID) child.clear_child_tid = child_tid;
  if (flags & CLONE_CHILD_SETTID) child.set_child_tid = child_tid;  // in its own space: written as it first runs
  // As Linux, a parent_tid that faults now does not undo the fork.
  const int32_t id = pid;
  if (flags & CLONE_PARENT_SETTID) (void)copy_to_user(parent_tid, &id, sizeof id);
  return pid;
}

// The thread of `group` a process-directed signal goes to: the leader if
// it takes it, else another thread that does not block it, else (all
// block it) a live one, where it waits until unblocked.
Process* signal_target(Process& group, uint64_t sig) {
  Process* fallback = live(group) ? &group : nullptr;
  if (fallback && !(group.blocked & sig_bit(sig))) return &group;
  for (unsigned i = 0; Process* t = process_at(i); ++i) {
    if (t->leader != &group || !live(*t)) continue;
    if (!(t->blocked & sig_bit(sig))) return t;
    if (!fallback) fallback = t;
  }
  return fallback;
}

// kill(0), kill(-g), kill(-1): every process of the caller's group, of
// group g, or every process but init and the caller. ESRCH if there is
// none; init is left out unless it asks (EPERM if nobody else was there).
ErrorOr<int> kill_many(int pid, uint64_t sig) {
  if (pid == INT32_MIN) return Errno::ESRCH;
  const Process& self = *current()->leader;
  const int group = pid == 0 ? self.pgid : -pid;
  bool found = false, refused = false;
  for (Process& q : process_table()) {
    if (q.state == ProcState::Free || q.leader != &q || q.live_threads == 0) continue;
    if (pid == -1 ? (q.pid == 1 || &q == &self) : q.pgid != group) continue;
    if (q.pid == 1 && self.pid != 1) {
      refused = true;
      continue;
    }
    found = true;
    if (sig)
      if (Process* t = signal_target(q, sig)) send_signal(*t, static_cast<int>(sig));
  }
  if (found) return 0;
  return refused ? Errno::EPERM : Errno::ESRCH;
}

}  // namespace

ErrorOr<int> do_clone(uint64_t flags, uint64_t newsp, uint64_t parent_tid, uint64_t child_tid, uint64_t tls) {
  if (TRY(check_clone_args(flags, newsp, tls)) == CloneKind::Thread)
    return clone_thread(flags, newsp, parent_tid, child_tid, tls);
  return clone_process(flags, newsp, parent_tid, child_tid, tls);
}

ErrorOr<int> do_kill(int64_t pid, uint64_t sig) {
  // pid and signal are ints in the ABI: a value that only fits the
  // register is invalid, not a truncated other one.
  if (sig != 0 && !(sig >= 1 && sig <= uint64_t{kNumSignals})) return Errno::EINVAL;
  if (pid < INT32_MIN || pid > INT32_MAX) return Errno::EINVAL;
  if (pid <= 0) return kill_many(static_cast<int>(pid), sig);
  Process* target = find_process(static_cast<int>(pid));
  // A thread that exited is gone (its leader pointer may be stale by now).
  if (!target || (target->state == ProcState::Zombie && target->tgid != target->pid)) return Errno::ESRCH;
  Process& group = *target->leader;
  // A process that has exited but is not reaped yet still exists (Linux:
  // kill succeeds and the signal is dropped): its parent may signal a
  // child that just died without having to tell the two apart.
  if (group.live_threads == 0) return 0;
  // init is the one process whose death ends the run: only it may signal itself.
  if (group.pid == 1 && current()->tgid != 1) return Errno::EPERM;
  if (sig)
    if (Process* t = signal_target(group, sig)) send_signal(*t, static_cast<int>(sig));
  return 0;
}

ErrorOr<int> do_tgkill(int64_t tgid, int64_t tid, uint64_t sig) {
  if (tgid <= 0 || tid <= 0 || tgid > INT32_MAX || tid > INT32_MAX) return Errno::EINVAL;
  if (sig != 0 && !(sig >= 1 && sig <= uint64_t{kNumSignals})) return Errno::EINVAL;
  Process* t = find_process(static_cast<int>(tid));
  if (!t || t->tgid != tgid || !live(*t)) return Errno::ESRCH;
  if (t->tgid == 1 && current()->tgid != 1) return Errno::EPERM;
  if (sig) send_signal(*t, static_cast<int>(sig));
  return 0;
}

ErrorOr<uint64_t> do_arch_prctl(uint64_t code, uint64_t addr) {
  Process& p = *current();
  switch (code) {
    case ARCH_SET_FS:
      // Linux's bound (TASK_SIZE_MAX): no kernel or non-canonical base.
      if (addr >= kUserTop) return Errno::EPERM;
      TRY(g_platform->set_user_fs_base(addr));
      p.fs_base = addr;
      return uint64_t{0};
    case ARCH_GET_FS: TRY(copy_to_user(addr, &p.fs_base, sizeof p.fs_base)); return uint64_t{0};
    default: return Errno::EINVAL;  // GS belongs to the kernel (swapgs) natively: not offered
  }
}

namespace {

// After the others are gone: a thread that is not the leader takes the
// leader's place (its pid, files, actions); the leader's slot is freed.
void take_over_leader(Process& self, Process& old) {
  memcpy(self.fds, old.fds, sizeof self.fds);  // moved: the references go with them
  memset(old.fds, 0, sizeof old.fds);
  self.cloexec = old.cloexec, old.cloexec = 0;
  self.cwd = old.cwd, old.cwd = nullptr;
  self.exe = old.exe, old.exe = nullptr;
  memcpy(self.actions, old.actions, sizeof self.actions);
  self.pid = old.pid;
  self.tgid = old.pid;
  self.ppid = old.ppid;
  self.pgid = old.pgid;
  self.sid = old.sid;
  self.leader = &self;
  self.live_threads = 1;
  old.as = nullptr;
  free_unstarted(old);  // a zombie that never runs again: its slot is free
}

}  // namespace

ErrorOr<void> become_single_threaded(Process& self) {
  Process& group = *self.leader;
  // Killed already (by exit_group, or by a sibling's exec that won): this
  // exec loses, and the SIGKILL ends this thread on its way out.
  if (self.pending & sig_bit(abi::SIGKILL)) return Errno::EINTR;
  if (group.live_threads > 1) {
    if (group.group_exiting) return Errno::EINTR;  // the whole group is dying anyway
    // Another thread's exec is ending the others (it sent this one its
    // SIGKILL, maybe not yet seen): that exec wins, as Linux's de_thread
    // lets only one through. Its SIGKILL ends this thread alone.
    if (group.exec_thread && group.exec_thread != &self) return Errno::EINTR;
    group.exec_thread = &self;
    for (unsigned i = 0; Process* t = process_at(i); ++i)
      if (t != &self && t->leader == &group && live(*t)) send_signal(*t, abi::SIGKILL);
    while (group.live_threads > 1) {
      if (self.pending & sig_bit(abi::SIGKILL)) {
        group.exec_thread = nullptr;
        return Errno::EINTR;
      }
      sleep_on(&group.live_threads);  // each exit wakes it
    }
    group.exec_thread = nullptr;
  }
  if (&self != &group) take_over_leader(self, group);
  return {};
}

void reset_thread_state_after_exec(Process& p) {
  p.clear_child_tid = 0;
  if (p.fs_base) {
    p.fs_base = 0;
    must(g_platform->set_user_fs_base(0), "clear the FS base");
  }
}

void clear_child_tid(Process& p) {
  const uint64_t at = p.clear_child_tid;
  if (!at || !p.as) return;
  p.clear_child_tid = 0;
  const uint32_t zero = 0;
  // A bad address is the program's loss, as on Linux: nothing to wake.
  // Linux wakes a shared futex here, which thread libraries wait on.
  if (copy_to_user(at, &zero, sizeof zero).is_error()) return;
  futex_wake(p.as, at, FutexScope::Shared, 1);
}

void switch_fs_base(const Process* prev, const Process& next) {
  if (prev && prev->fs_base == next.fs_base) return;
  // Checked when set (arch_prctl, clone): a refusal now is a kernel bug.
  must(g_platform->set_user_fs_base(next.fs_base), "load the FS base");
}

}  // namespace pvk
