// The process table, the scheduler, fork/exit/wait and signal delivery.
#include "guest/proc/process.h"

#include "base/arch/cpu.h"
#include "base/arch/platform.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "base/lib/fault_inject.h"
#include "base/lib/kstring.h"
#include "guest/proc/exec.h"
#include "guest/proc/file.h"
#include "guest/proc/futex.h"
#include "guest/proc/thread.h"
#include "guest/proc/user_copy.h"
#include "mm/kernel_space.h"
#include "pvops/pvop.h"

extern "C" void switch_context(uint64_t* save_rsp, uint64_t new_rsp);
extern "C" char process_first_return[];
// The platform's way back to user mode from a TrapFrame on the stack.
extern "C" void* pvk_ret_to_user;
void* pvk_ret_to_user = nullptr;

namespace pvk {
namespace {

constexpr unsigned kMaxProcs = 64;
Process g_procs[kMaxProcs];
alignas(16) uint8_t g_kstacks[kMaxProcs][Process::kStackSize];
Process* g_current = nullptr;
int g_next_pid = 1;
int g_init_status = 0;
bool g_init_exited = false;
uint64_t g_scheduler_rsp = 0;  // the boot stack, parked while processes run
uint64_t g_slice_start_tsc = 0;  // when the current process was last switched to
constexpr uint64_t kSliceMs = 10;  // the same as the timer tick

uint64_t sig_bit(int sig) { return uint64_t{1} << (sig - 1); }

// A thread that exited while others of its group live on: nobody waits
// for it, so its slot is free once it no longer runs (on one CPU: once
// it is not the current one; it switched away for good).
bool dead_thread(const Process& p) { return p.state == ProcState::Zombie && p.tgid != p.pid && &p != g_current; }

}  // namespace

Process* alloc_process() {
  for (Process& p : g_procs) {
    if (p.state != ProcState::Free && !dead_thread(p)) continue;
    p = Process{};
    p.pid = g_next_pid++;
    p.tgid = p.pid;
    p.leader = &p;
    p.live_threads = 1;
    return &p;
  }
  return nullptr;
}

void free_unstarted(Process& p) { p.state = ProcState::Free; }

Process* process_at(unsigned i) { return i < kMaxProcs ? &g_procs[i] : nullptr; }

// Lays out a fresh kernel stack so that switching to it returns to user
// mode through the TrapFrame at its top.
void prepare_first_switch(Process& p) {
  auto* sp = reinterpret_cast<uint64_t*>(p.frame());
  *--sp = reinterpret_cast<uint64_t>(process_first_return);
  for (int i = 0; i < 6; ++i) *--sp = 0;  // rbp rbx r12 r13 r14 r15
  p.saved_rsp = reinterpret_cast<uint64_t>(sp);
}

namespace {

void switch_to(Process* next) {
  Process* prev = g_current;
  if (next == prev) return;
  g_current = next;
  g_slice_start_tsc = cpu::rdtsc();
  g_platform->set_kernel_stack(next->stack_top());
  switch_fs_base(prev, *next);
  must(switch_mm(next->as), "switch_mm");  // null: a lazy switch (the loaded root stays)
  switch_context(prev ? &prev->saved_rsp : &g_scheduler_rsp, next->saved_rsp);
}

Process* pick_next() {
  const unsigned start = g_current ? static_cast<unsigned>(g_current - g_procs) + 1 : 0;
  for (unsigned n = 0; n < kMaxProcs; ++n) {
    Process& p = g_procs[(start + n) % kMaxProcs];
    if (p.state == ProcState::Runnable) return &p;
  }
  return nullptr;
}

void release_files(Process& p) {
  for (File*& f : p.fds)
    if (f) file_put(f), f = nullptr;
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
  if (p.as) {
    if (g_current_root == p.as->root()) must(PVOP(load_root)(kernel_root()), "load kernel root");
    must(p.as->destroy(), "destroy address space");
    p.as = nullptr;
  }
}

// Signals whose default action is to do nothing (as on Linux; SIGCONT
// would also resume a stopped process, and pvk has no stopped state).
bool default_ignored(int sig) {
  return sig == abi::SIGCHLD || sig == abi::SIGCONT || sig == abi::SIGURG || sig == abi::SIGWINCH;
}

}  // namespace

uint8_t* Process::stack_base() const { return g_kstacks[this - g_procs]; }
Process* current() { return g_current; }

Process* find_process(int pid) {
  for (Process& p : g_procs)
    if (p.state != ProcState::Free && p.pid == pid) return &p;
  return nullptr;
}

void sleep_on(const void* channel) {
  g_current->state = ProcState::Blocked;
  g_current->wait_on = channel;
  schedule();
}

void wake_all(const void* channel) {
  for (Process& p : g_procs)
    if (p.state == ProcState::Blocked && p.wait_on == channel) p.state = ProcState::Runnable, p.wait_on = nullptr;
}

void schedule() {
  Process* next = pick_next();
  if (!next) {
    // Nothing can run and nothing (no sleeps, no I/O) will wake anyone.
    kprintf("pvk: every process is blocked: deadlock\n");
    Record("error").str("message", "every process is blocked");
    panic("deadlock");
  }
  switch_to(next);
}

void on_timer_tick(bool from_user) {
  if (from_user && g_current && g_current->state == ProcState::Runnable) schedule();
}

void cond_resched() {
  const uint64_t slice = kSliceMs * g_platform->tsc_khz;
  if (g_current && g_current->state == ProcState::Runnable && cpu::rdtsc() - g_slice_start_tsc >= slice) schedule();
}

namespace {
// Would delivering sig do anything (run a handler or kill)?
bool acts(const Process& p, int sig) {
  if (sig == abi::SIGKILL) return true;
  if (p.blocked & sig_bit(sig)) return false;
  const uint64_t h = p.leader->actions[sig].handler;
  return h != abi::SIG_IGN && !(h == abi::SIG_DFL && default_ignored(sig));
}
}  // namespace

bool signal_interrupts(const Process& p) {
  for (uint64_t pending = p.pending; pending; pending &= pending - 1)
    if (acts(p, __builtin_ctzll(pending) + 1)) return true;
  return false;
}

void send_signal(Process& p, int sig) {
  if (sig <= 0 || sig > abi::kNumSignals) return;
  p.pending |= sig_bit(sig);
  // A blocked call returns EINTR so the signal is seen on the way out.
  if (p.state == ProcState::Blocked && acts(p, sig)) p.state = ProcState::Runnable, p.wait_on = nullptr;
}

void raise_fault_signal(int sig) {
  Process& p = *g_current;
  const abi::KernelSigaction& a = p.leader->actions[sig];
  // A fault that cannot be handled kills, whatever the disposition says.
  if (a.handler == abi::SIG_DFL || a.handler == abi::SIG_IGN || (p.blocked & sig_bit(sig)))
    do_exit(abi::wait_signaled(sig));
  p.pending |= sig_bit(sig);
}

// Signal frame on the user stack: the interrupted state, restored by
// rt_sigreturn. Below it, the return address (the restorer).
struct SigFrame {
  TrapFrame saved;
  uint64_t blocked;
};

void prepare_return_to_user(TrapFrame& f) {
  Process& p = *g_current;
  while (uint64_t deliverable = p.pending & ~p.blocked) {
    const int sig = __builtin_ctzll(deliverable) + 1;
    p.pending &= ~sig_bit(sig);
    abi::KernelSigaction* actions = p.leader->actions;
    const abi::KernelSigaction& a = actions[sig];
    if (sig == abi::SIGKILL || a.handler == abi::SIG_DFL) {
      if (default_ignored(sig)) continue;
      do_exit(abi::wait_signaled(sig));
    }
    if (a.handler == abi::SIG_IGN) continue;
    // The handler address is the program's choice: one outside user space
    // would make the return to user mode fault in the kernel.
    if (a.handler >= abi::kUserTop) do_exit(abi::wait_signaled(abi::SIGSEGV));
    SigFrame sf{f, p.blocked};
    const abi::KernelSigaction action = a;
    if (a.flags & abi::SA_RESETHAND) actions[sig].handler = abi::SIG_DFL;
    const uint64_t frame_at = align_down(f.rsp - 128 - sizeof(SigFrame), 16) - 8;  // skip the red zone
    const uint64_t restorer = action.restorer;
    if (copy_to_user(frame_at + 8, &sf, sizeof sf).is_error() || copy_to_user(frame_at, &restorer, 8).is_error())
      do_exit(abi::wait_signaled(abi::SIGSEGV));
    p.blocked |= action.mask | ((action.flags & abi::SA_NODEFER) ? 0 : sig_bit(sig));
    p.blocked &= ~sig_bit(abi::SIGKILL);
    f.rsp = frame_at;
    f.rip = action.handler;
    f.cs = g_platform->user_cs;  // the handler runs in 64-bit user mode, whatever was interrupted
    f.ss = g_platform->user_ss;
    // The ABI's state at a function entry: DF clear; no single-stepping into
    // the handler (the interrupted code's flags come back with rt_sigreturn).
    f.rflags &= ~(rflags::DF | rflags::TF | rflags::RF);
    f.rdi = static_cast<uint64_t>(sig);
    f.rax = 0;
    break;  // one handler at a time; the rest wait for its sigreturn
  }
  // Last line of defence before iret: never return to a kernel or
  // non-canonical address (the iret itself would fault in kernel mode).
  if (f.rip >= abi::kUserTop) do_exit(abi::wait_signaled(abi::SIGSEGV));
}

int64_t do_sigreturn(TrapFrame& f) {
  SigFrame sf;
  // The handler's ret popped the restorer address: the frame is at rsp.
  if (copy_from_user(&sf, f.rsp, sizeof sf).is_error()) do_exit(abi::wait_signaled(abi::SIGSEGV));
  // Only a user address may be returned to: a kernel or non-canonical rip
  // would fault in the kernel's own return path.
  if (sf.saved.rip >= abi::kUserTop || sf.saved.rsp >= abi::kUserTop) do_exit(abi::wait_signaled(abi::SIGSEGV));
  const TrapFrame kernel_owned = f;
  f = sf.saved;
  // The user may not forge privilege: segments and flags are the kernel's.
  f.cs = kernel_owned.cs;
  f.ss = kernel_owned.ss;
  f.rflags = (sf.saved.rflags & 0xcd5) | 0x202;  // arithmetic flags, DF, TF cleared; IF on
  f.vector = kernel_owned.vector;
  g_current->blocked = sf.blocked & ~sig_bit(abi::SIGKILL);
  return static_cast<int64_t>(f.rax);
}

ErrorOr<int> do_fork() {
  Process& parent = *g_current;
  Process* child = alloc_process();
  if (!child) return Errno::EAGAIN;
  auto as = parent.as->try_fork();
  if (as.is_error()) {
    child->state = ProcState::Free;
    return as.error();
  }
  // A fork from a thread copies that thread alone: its registers, mask and
  // TLS; the group's files and actions.
  const Process& group = *parent.leader;
  child->as = as.value();
  child->ppid = parent.tgid;
  memcpy(child->actions, group.actions, sizeof group.actions);
  child->blocked = parent.blocked;
  child->fs_base = parent.fs_base;
  memcpy(child->name, parent.name, sizeof parent.name);
  for (unsigned i = 0; i < Process::kMaxFds; ++i)
    if (group.fds[i]) child->fds[i] = file_get(group.fds[i]);
  *child->frame() = *parent.frame();
  child->frame()->rax = 0;
  prepare_first_switch(*child);
  child->state = ProcState::Runnable;
  return child->pid;
}

void do_exit(int wait_status) {
  Process& p = *g_current;
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
  Process& p = *g_current;
  Process& group = *p.leader;
  // CLONE_CHILD_CLEARTID: the joiner's word, while the space is still there.
  clear_child_tid(p);
  p.wait_status = wait_status;
  if (--group.live_threads > 0) {
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
  release_resources(group);
  release_resources(p);
  p.state = ProcState::Zombie;
  group.wait_status = status;
  group.state = ProcState::Zombie;
  // Orphans go to init, which reaps them.
  for (Process& c : g_procs)
    if (c.state != ProcState::Free && c.ppid == group.pid) c.ppid = 1;
  if (group.pid == 1) {
    g_init_exited = true;
    g_init_status = status;
    g_current = nullptr;
    g_platform->set_kernel_stack(0);
    uint64_t dead_rsp;
    switch_context(&dead_rsp, g_scheduler_rsp);  // back into start_init
  }
  if (Process* parent = find_process(group.ppid)) wake_all(parent);
  schedule();
  panic("a zombie was scheduled");
}

ErrorOr<int> do_wait(int pid, uint64_t user_status, int options) {
  Process& self = *g_current;
  for (;;) {
    bool have_child = false;
    for (Process& c : g_procs) {
      // Children are processes (their leaders), never threads.
      if (c.state == ProcState::Free || c.tgid != c.pid || c.ppid != self.tgid || (pid > 0 && c.pid != pid)) continue;
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

ErrorOr<int> start_init(const char* const* argv) {
  const char* envp[] = {nullptr};
  Process* p = alloc_process();
  if (!p) return Errno::EAGAIN;
  for (int fd = 0; fd < 3; ++fd) p->fds[fd] = console_file();
  g_current = p;  // exec works on the current process
  if (auto r = exec_program(*p, argv[0], argv, envp); r.is_error()) {
    release_resources(*p);
    p->state = ProcState::Free;
    g_current = nullptr;
    return r.error();
  }
  prepare_first_switch(*p);
  p->state = ProcState::Runnable;
  g_current = nullptr;
  fault_inject_arm(true);  // fail= (if configured) concerns what the processes do
  switch_to(p);  // returns when init exits
  fault_inject_arm(false);
  // Init is gone: whatever is left dies with it, without running again.
  for (Process& q : g_procs) {
    if (q.state == ProcState::Free) continue;
    release_resources(q);
    q.state = ProcState::Free;
  }
  futex_forget_all();
  return g_init_status;
}

}  // namespace pvk
