// A process's life: fork, exit (of a thread, of the whole group), wait,
// and init's (start_init: pid 1 on the boot CPU's idle context, and the
// teardown once it has exited).
#include "kernel/proc/process.h"

#include "base/arch/cpu.h"
#include "base/arch/cross_cpu.h"
#include "base/frames/frame_allocator.h"
#include "base/lib/fault_inject.h"
#include "base/lib/kstring.h"
#include "kernel/kernel_lock.h"
#include "kernel/proc/exec.h"
#include "kernel/proc/exec_args.h"
#include "kernel/proc/file.h"
#include "kernel/proc/fpu_state.h"
#include "kernel/proc/futex.h"
#include "kernel/proc/process_parts.h"
#include "kernel/fs/file_pages.h"
#include "kernel/fs/ramfs.h"
#include "kernel/proc/fd_table.h"
#include "kernel/proc/thread.h"
#include "kernel/proc/user_copy.h"
#include "kernel/proc/without_kernel_lock.h"
#include "mm/kernel_space.h"
#include "pvops/call/pvop.h"

namespace pvk {

using namespace proc;

namespace {

void release_files(Process& p) {
  File* files[kMaxFdSlots];
  fd_take_all(p, files);
  for (File* f : files)
    if (f) file_put(f);
  if (p.cwd) fs::inode_put(p.cwd), p.cwd = nullptr;
  if (p.exe) fs::inode_put(p.exe), p.exe = nullptr;
}

// Tears down what a dead process holds (not its kernel stack, which may be
// the one we are running on).
void release_resources(Process& p) {
  // A thread other than the leader owns nothing of the group's.
  if (p.leader != &p) {
    p.as = nullptr;
    return;
  }
  release_files(p);
  if (AddressSpace* as = p.as) {
    if (g_current_root == as->root()) must(PVOP(load_root)(kernel_root()), "load kernel root");
    p.as = nullptr;
    // The teardown under the space's lock alone where that suffices (no
    // thread runs in it any more, and nobody finds it: p.as is gone).
    without_kernel_lock([as] { must(as->destroy(), "destroy address space"); });
  }
}

}  // namespace

ErrorOr<int> do_fork() {
  Process& parent = *running_here();
  // The copy of the space, which is most of a fork's work, under the
  // parent space's lock alone where that suffices: other CPUs' system
  // calls go on meanwhile. Nothing here relies on the kernel lock across
  // it (the parent may be sent a signal meanwhile: it is delivered on the
  // way out, after the fork, as if it came a moment later).
  ErrorOr<AddressSpace*> as = Errno::ENOMEM;
  without_kernel_lock([&] { as = parent.as->try_fork(); });
  if (as.is_error()) return as.error();
  Process* child = alloc_process();
  if (!child) {
    must(as.value()->destroy(), "destroy the unused fork's space");
    return Errno::EAGAIN;
  }
  // A fork from a thread copies that thread alone: its registers, mask and
  // TLS; the group's files and actions.
  const Process& group = *parent.leader;
  child->as = as.value();
  child->ppid = parent.tgid;
  child->pgid = group.pgid;
  child->sid = group.sid;
  memcpy(child->actions, group.actions, sizeof group.actions);
  child->blocked = parent.blocked;
  child->fs_base = parent.fs_base;
  child->affinity = parent.affinity;
  memcpy(child->name, parent.name, sizeof parent.name);
  // Under the table's lock: another thread may close a pipe end meanwhile.
  child->cloexec = fd_hold_all(group, child->fds);
  if (group.cwd) fs::inode_get(child->cwd = group.cwd);
  if (group.exe) fs::inode_get(child->exe = group.exe);
  *child->frame() = *parent.frame();
  child->frame()->rax = 0;
  fpu_copy_running(*child, parent);
  save_user_segments(*child);  // the parent's, as fork returns in both
  prepare_first_switch(*child);
  make_runnable(*child);
  return child->pid;
}

void do_exit(int wait_status) {
  Process& p = *running_here();
  Process& group = *p.leader;
  // (While an execve ends the other threads, their deaths end only them.)
  if (group.live_threads > 1 && !group.exec_thread) {
    // Every other thread dies as if by SIGKILL (woken if blocked) the next
    // time it is on its way to user mode; the last one out ends the process.
    if (!group.group_exiting) group.group_exiting = true, group.group_exit_status = wait_status;
    for (Process& t : g_procs)
      if (&t != &p && t.leader == &group && t.state != ProcState::Free && t.state != ProcState::Zombie)
        send_signal(t, abi::SIGKILL);
  }
  do_thread_exit(wait_status);
}

void do_thread_exit(int wait_status) {
  Process& p = *running_here();
  Process& group = *p.leader;
  // CLONE_CHILD_CLEARTID: the joiner's word, while the space is still there.
  clear_child_tid(p);
  fpu_release(p);  // it never returns to user mode: nothing to save at the switch
  p.wait_status = wait_status;
  if (group.live_threads > 1) {
    --group.live_threads;
    // The others keep the group's space, files and actions. A leader stays
    // (as a zombie nobody reaps yet) to hold them and the process' pid.
    if (&p != &group) p.as = nullptr;
    p.state = ProcState::Zombie;
    wake_all(&group.live_threads);  // an exec waiting for the others to go
    schedule();
    panic("an exited thread was scheduled");
  }
  // The last thread: the process ends, with the group exit's status if
  // there was one, else the last thread's own (what Linux reports).
  const int status = group.group_exiting ? group.group_exit_status : wait_status;
  // This thread still counts as live while the space is torn down (which
  // may give up the kernel lock): a parent's wait must not find the group
  // a zombie with nobody live, and reap it, before it has ended.
  release_resources(group);
  release_resources(p);
  group.live_threads = 0;
  p.state = ProcState::Zombie;
  group.wait_status = status;
  group.state = ProcState::Zombie;
  // Orphans go to init, which reaps them.
  for (Process& c : g_procs)
    if (c.state != ProcState::Free && c.ppid == group.pid) c.ppid = 1;
  if (group.pid == 1) {
    // Every CPU stops running processes; the boot CPU's idle loop returns
    // into start_init, which tears down what is left.
    g_init_status = status;
    __atomic_store_n(&g_init_exited, true, __ATOMIC_RELEASE);
    if (me() != 0) xcpu::send(0, xcpu::Ipi::Reschedule);
    switch_to_idle();
  }
  if (Process* parent = find_process(group.ppid)) {
    send_signal(*parent, abi::SIGCHLD);  // ignored unless it has a handler (the default)
    wake_all(parent);
  }
  schedule();
  panic("a zombie was scheduled");
}

ErrorOr<int> do_wait(int pid, uint64_t user_status, int options) {
  Process& self = *running_here();
  if (pid == INT32_MIN) return Errno::ESRCH;  // no group -INT_MIN (Linux)
  for (;;) {
    bool have_child = false;
    for (Process& c : g_procs) {
      // Children are processes (their leaders), never threads.
      if (c.state == ProcState::Free || c.tgid != c.pid || c.ppid != self.tgid || (pid > 0 && c.pid != pid)) continue;
      // 0: a child of the caller's process group; -g: of group g.
      if ((pid == 0 && c.pgid != self.leader->pgid) || (pid < -1 && c.pgid != -pid)) continue;
      have_child = true;
      if (c.state != ProcState::Zombie || c.live_threads > 0) continue;
      if (user_status) TRY(copy_to_user(user_status, &c.wait_status, sizeof c.wait_status));
      const int found = c.pid;
      c.state = ProcState::Free;
      return found;
    }
    if (!have_child) return Errno::ECHILD;
    if (options & abi::WNOHANG) return 0;
    if (signal_interrupts(self)) return Errno::EINTR;
    sleep_on(self.leader);  // what an exiting child wakes: any thread of ours may wait
  }
}

// /proc/self/exe of whoever asks (the file system below cannot see processes).
fs::Inode* current_exe() {
  Process* p = current();
  return p && p->leader ? p->leader->exe : nullptr;
}

ErrorOr<int> start_init(const char* const* argv) {
  const char* envp[] = {nullptr};
  fs::set_self_exe_hook(&current_exe);
  // A machine with one CPU: its locks need no tickets (nothing is held yet),
  // and its frames go to and from the bitmap directly (what boot left in
  // its magazine goes back there).
  if (smp::counts().found() == 1) {
    xcpu::set_one_cpu();
    frames().drain_magazines();
  }
  note_space_locking();  // the backend and mm's switches are set by now
  kernel_lock();  // the boot CPU's idle context holds it like any other
  Process* p = alloc_process();
  if (!p) {
    kernel_unlock();
    return Errno::EAGAIN;
  }
  for (int fd = 0; fd < 3; ++fd) p->fds[fd] = console_file();
  p->pgid = p->sid = p->pid;  // init leads its own group and session
  this_cpu()->current = p;  // exec works on the current process
  // The strings' frames go back as soon as they are on init's stack.
  auto r = [&]() -> ErrorOr<void> {
    ExecArgs args;
    TRY(args.from_kernel(argv, envp, strlen(argv[0]) + 1));
    return exec_program(*p, argv[0], args);
  }();
  if (r.is_error()) {
    release_resources(*p);
    fpu_release(*p);
    p->state = ProcState::Free;
    this_cpu()->current = nullptr;
    kernel_unlock();
    return r.error();
  }
  this_cpu()->current = nullptr;
  switch_space(nullptr);
  prepare_first_switch(*p);
  make_runnable(*p);  // on this CPU's queue: its idle loop starts it
  fault_inject_arm(true);  // fail= (if configured) concerns what the processes do
  xcpu::set_handler(xcpu::Ipi::SignalKick, &note_signal_kick);
  // The other CPUs leave their park (secondary_cpu_scheduler).
  __atomic_store_n(&g_sched_started, true, __ATOMIC_RELEASE);
  for (unsigned c = 1; c < smp::kMaxCpus; ++c)
    if (xcpu::online(c)) xcpu::send(c, xcpu::Ipi::Reschedule);
  kernel_unlock();  // idle loops look for work without it
  idle_loop(/*boot_cpu=*/true);  // returns when init has exited, the kernel lock held
  fault_inject_arm(false);
  // The other CPUs drop their processes at their next tick or kernel entry
  // (schedule() sends them idle once init has exited); wait for that
  // before freeing anything they might still run on.
  for (;;) {
    bool busy = false;
    for (const Process& q : g_procs) busy |= q.on_cpu != Process::kNoCpu;
    if (!busy) break;
    kernel_unlock();
    for (unsigned i = 0; i < 1000; ++i) cpu::relax();
    kernel_lock();
  }
  // Init is gone: whatever is left dies with it, without running again.
  clear_run_queues();
  for (Process& q : g_procs) {
    if (q.state == ProcState::Free) continue;
    release_resources(q);
    fpu_release(q);
    q.state = ProcState::Free;
  }
  futex_forget_all();
  report_sched();
  kernel_unlock();
  return g_init_status;
}

}  // namespace pvk
