// The process table, the scheduler, fork/exit/wait and signal delivery.
#include "kernel/proc/process.h"

#include "base/arch/cpu.h"
#include "base/arch/cross_cpu.h"
#include "base/arch/platform.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "base/lib/fault_inject.h"
#include "base/lib/format.h"
#include "base/lib/kstring.h"
#include "kernel/kernel_lock.h"
#include "kernel/proc/exec.h"
#include "kernel/proc/file.h"
#include "kernel/proc/futex.h"
#include "kernel/proc/thread.h"
#include "kernel/proc/user_copy.h"
#include "arch/smp/percpu.h"
#include "arch/switch.h"
#include "mm/kernel_space.h"
#include "pvops/call/pvop.h"

namespace pvk {
namespace {

// Everything here is under the kernel lock (kernel/kernel_lock.h),
// except the flags idle loops and parked CPUs read with atomics.
constexpr unsigned kMaxProcs = 64;
Process g_procs[kMaxProcs];
alignas(16) uint8_t g_kstacks[kMaxProcs][Process::kStackSize];
int g_next_pid = 1;
int g_init_status = 0;
bool g_init_exited = false;    // every CPU stops running processes
bool g_sched_started = false;  // processes exist: parked CPUs join in
// Set (under the lock) whenever a process may have become pickable; cleared
// by an idle CPU that looked and found nothing. Idle CPUs read it without
// the lock: a tick that finds it clear halts again without taking the
// lock (which would stall the CPU that works in the kernel meanwhile).
bool g_work_hint = false;
bool g_sched_all_cpus = true;  // sched_cpus= (boot: only CPU 0 runs processes)
unsigned g_rr_next = 0;        // where the round-robin scan starts
constexpr uint64_t kSliceMs = 10;  // the same as the timer tick

// One run queue for every CPU: the process table itself, under the kernel
// lock. Per-CPU queues with stealing would only pay once CPUs can be in
// the kernel at the same time; under one lock a scan of 64 slots is no
// worse than a queue, and no process can be stranded on a busy CPU's queue.
struct CpuSched {
  uint64_t idle_rsp = 0;  // its idle context (boot CPU: start_init's stack; AP: its bring-up stack)
  uint64_t slice_start_tsc = 0;
  uint64_t switches = 0;    // switches into a process
  uint64_t processes = 0;   // distinct processes that ran here
  uint64_t idle_halts = 0;  // times its idle loop halted
  uint64_t ticks = 0;       // timer ticks from user mode
  uint64_t kicks_sent = 0;  // Reschedule IPIs sent to idle CPUs
  uint64_t signal_kicks = 0;  // SignalKick IPIs sent: signals for threads running on other CPUs
  bool idle = false;        // in its idle loop, about to halt or halted: a Reschedule wakes it
  // A SignalKick came in and no way back to user mode has delivered
  // signals since. Only this CPU reads or writes it (its handler runs here,
  // interrupts off), so no atomics.
  bool kicked = false;
};
CpuSched g_sched[smp::kMaxCpus];

unsigned me() { return this_cpu()->id; }
CpuSched& mine() { return g_sched[me()]; }
Process* running_here() { return static_cast<Process*>(this_cpu()->current); }

uint64_t sig_bit(int sig) { return uint64_t{1} << (sig - 1); }

// A thread that exited while others of its group live on: nobody waits
// for it, so its slot is free once it no longer runs (on one CPU: once
// it is not the current one; it switched away for good).
bool dead_thread(const Process& p) {
  return p.state == ProcState::Zombie && p.tgid != p.pid && p.on_cpu == Process::kNoCpu;
}

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

// The one place a CPU changes address space: mm's switch_mm keeps each
// space's CPU mask (which CPUs a shootdown must reach). A CPU going idle
// switches lazily: the old root stays loaded and the CPU stays in its
// space's mask, marked lazy — flushes that free no page tables skip it, it
// catches up (a full flush if behind) when it comes back to the space, and
// the space's teardown asks it to leave the root first
// (mm/address_space.cpp, pvops/tlb/tlb_shootdown.h).
void switch_space(const Process* next) {
  must(switch_mm(next ? next->as : nullptr), "switch_mm");
}

// User mode's data segment selectors, as this CPU holds them now.
struct Selectors {
  uint16_t ds, es, gs;
};
Selectors read_selectors() {
  Selectors s;
  asm volatile("mov %%ds, %0\n\tmov %%es, %1\n\tmov %%gs, %2" : "=r"(s.ds), "=r"(s.es), "=r"(s.gs));
  return s;
}

void save_user_segments(Process& p) {
  const Selectors s = read_selectors();
  p.user_ds = s.ds, p.user_es = s.es, p.user_gs = s.gs;
}

// Gives this CPU p's selectors (only those that differ: a %gs load costs a
// hypercall under Xen). Every selector was loaded by p's user mode before,
// so it loads again (the same GDT on every CPU, no LDT).
void restore_user_segments(const Process& p) {
  const Selectors s = read_selectors();
  if (s.ds != p.user_ds) asm volatile("mov %0, %%ds" : : "r"(p.user_ds));
  if (s.es != p.user_es) asm volatile("mov %0, %%es" : : "r"(p.user_es));
  // Not %fs: a selector load would reset the FS base, which is the user's
  // TLS pointer (set through the platform's FS base, not a selector).
  if (s.gs != p.user_gs && g_platform->load_user_gs) g_platform->load_user_gs(p.user_gs);
}

void work_appeared();

// Switches this CPU from what it runs (a process, or its idle loop) to
// `next`, which is runnable and on no CPU. The kernel lock stays held
// across: `next` releases it on its way back to user mode.
void switch_to(Process* next) {
  Process* prev = running_here();
  if (next == prev) return;
  const unsigned id = me();
  CpuSched& cs = g_sched[id];
  next->on_cpu = static_cast<int16_t>(id);
  if (!(next->ran_on & (1u << id))) next->ran_on |= 1u << id, ++cs.processes;
  ++cs.switches;
  if (prev) {
    prev->on_cpu = Process::kNoCpu;  // no one else looks before the lock is dropped, past the switch
    save_user_segments(*prev);
    if (prev->state == ProcState::Runnable) work_appeared();  // an idle CPU may take it
  }
  this_cpu()->current = next;
  if (!prev && g_platform->timer_resume) g_platform->timer_resume();  // from idle: the tick again
  cs.slice_start_tsc = cpu::rdtsc();
  g_platform->set_kernel_stack(next->stack_top());
  switch_space(next);
  // This CPU's FS base is prev's (loaded when prev came here) or, from
  // idle, whatever ran here last: switch_fs_base writes it from idle.
  switch_fs_base(prev, *next);
  switch_context(prev ? &prev->saved_rsp : &cs.idle_rsp, next->saved_rsp);
  // Back here, maybe on another CPU: this process's selectors again.
  if (prev) restore_user_segments(*prev);
}

// From the running process to this CPU's idle loop.
void switch_to_idle() {
  Process* prev = running_here();
  if (!prev) panic("switch to idle with no process running");
  prev->on_cpu = Process::kNoCpu;
  save_user_segments(*prev);
  this_cpu()->current = nullptr;
  switch_space(nullptr);
  switch_context(&prev->saved_rsp, mine().idle_rsp);
  restore_user_segments(*prev);  // resumed, maybe on another CPU
}

// The next runnable process that no CPU runs, round-robin over the table.
Process* pick_next() {
  if (!g_sched_all_cpus && me() != 0) return nullptr;
  for (unsigned n = 0; n < kMaxProcs; ++n) {
    const unsigned i = (g_rr_next + n) % kMaxProcs;
    Process& p = g_procs[i];
    if (p.state == ProcState::Runnable && p.on_cpu == Process::kNoCpu) {
      g_rr_next = i + 1;
      return &p;
    }
  }
  return nullptr;
}

// Something became runnable: wake one idle CPU to look (it may find the
// work taken already: then it halts again).
void kick_idle_cpu() {
  const unsigned self = me();
  for (unsigned c = 0; c < smp::kMaxCpus; ++c) {
    if (c == self || !g_sched[c].idle || !xcpu::online(c) || (!g_sched_all_cpus && c != 0)) continue;
    g_sched[c].idle = false;  // one kick each: the next wake-up goes to another CPU
    if (xcpu::send(c, xcpu::Ipi::Reschedule)) ++g_sched[self].kicks_sent;
    return;
  }
}

void work_appeared() {
  __atomic_store_n(&g_work_hint, true, __ATOMIC_SEQ_CST);
  kick_idle_cpu();
}

// A signal for p, which runs on another CPU, maybe in user mode where
// nothing makes it enter the kernel before its next tick: interrupt that
// CPU (Linux's kick_process), whose entry then delivers on its way back
// (return_after_kick). Were p in the kernel instead, it is waiting for the
// lock this CPU holds, and its own way back to user mode delivers anyway.
void kick_signal_target(const Process& p) {
  if (p.on_cpu == Process::kNoCpu || static_cast<unsigned>(p.on_cpu) == me()) return;
  if (xcpu::send(static_cast<unsigned>(p.on_cpu), xcpu::Ipi::SignalKick)) ++mine().signal_kicks;
}

// Ipi::SignalKick's handler (interrupts off, no lock): notes the kick for
// the entry that ran it, which delivers once it holds the lock.
void note_signal_kick() { mine().kicked = true; }

}  // namespace

void make_runnable(Process& p) {
  p.state = ProcState::Runnable;
  p.wait_on = nullptr;
  p.wake_deadline = 0;  // whoever woke it, its timer is done
  work_appeared();
}

namespace {

// Whether any process runs or can run, or will (a timed sleeper's timer
// wakes it); else every one is blocked for good: nothing (no I/O) would
// wake them.
bool anything_to_run() {
  for (const Process& p : g_procs)
    if (p.state == ProcState::Runnable || p.on_cpu != Process::kNoCpu ||
        (p.state == ProcState::Blocked && p.wake_deadline))
      return true;
  return false;
}

// A CPU's idle context: runs processes while there are any, halts while
// there are none. Kernel lock held on entry and on return (the boot CPU
// returns once init has exited; the others never do).
void idle_loop(bool boot_cpu) {
  CpuSched& cs = mine();
  for (;;) {
    expire_timed_sleeps();
    if (__atomic_load_n(&g_init_exited, __ATOMIC_ACQUIRE)) {
      if (boot_cpu) return;
    } else if (Process* next = pick_next()) {
      switch_to(next);
      continue;  // back when this CPU has nothing to run
    } else if (!anything_to_run()) {
      kprintf("pvk: every process is blocked: deadlock\n");
      Record("error").str("message", "every process is blocked");
      panic("deadlock");
    }
    __atomic_store_n(&g_work_hint, false, __ATOMIC_SEQ_CST);  // looked: nothing to pick
    cs.idle = true;
    kernel_unlock();
    do {
      ++cs.idle_halts;
      g_platform->idle_halt();
    } while (!__atomic_load_n(&g_work_hint, __ATOMIC_SEQ_CST) && !timed_sleep_due() &&
             !(boot_cpu && __atomic_load_n(&g_init_exited, __ATOMIC_SEQ_CST)));
    kernel_lock();
    cs.idle = false;
  }
}

// Per-CPU counts at shutdown: proof of which CPUs ran processes.
void report_sched() {
  Record r("sched");
  unsigned ran = 0;
  uint64_t switches = 0;
  for (unsigned c = 0; c < smp::kMaxCpus; ++c) {
    if (!xcpu::online(c)) continue;
    const CpuSched& cs = g_sched[c];
    if (cs.processes) ++ran;
    switches += cs.switches;
    auto per_cpu = [&](const char* what, uint64_t value) {
      char key[32];
      format(key, sizeof key, "cpu%u_%s", c, what);
      r.u64(key, value);
    };
    per_cpu("switches", cs.switches);
    per_cpu("processes", cs.processes);
    per_cpu("idle_halts", cs.idle_halts);
    per_cpu("ipis", __atomic_load_n(&smp::cpu(c).ipis_taken, __ATOMIC_RELAXED));
    per_cpu("ticks", cs.ticks);
    per_cpu("kicks", cs.kicks_sent);
    per_cpu("signal_kicks", cs.signal_kicks);
  }
  r.u64("cpus", xcpu::cpus_online()).u64("cpus_ran_processes", ran).u64("switches", switches);
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
Process* current() { return running_here(); }

Process* find_process(int pid) {
  for (Process& p : g_procs)
    if (p.state != ProcState::Free && p.pid == pid) return &p;
  return nullptr;
}

void sleep_on(const void* channel) {
  Process* self = running_here();
  self->state = ProcState::Blocked;
  self->wait_on = channel;
  schedule();
}

void wake_all(const void* channel) {
  for (Process& p : g_procs)
    if (p.state == ProcState::Blocked && p.wait_on == channel) make_runnable(p);
}

void schedule() {
  // Timers expire here too, not only at ticks from user mode and in idle
  // loops: processes that hand the CPU to each other inside the kernel
  // would otherwise keep every timed sleeper asleep past its deadline.
  expire_timed_sleeps();
  Process* prev = running_here();
  const bool stopping = __atomic_load_n(&g_init_exited, __ATOMIC_ACQUIRE);
  if (!stopping) {
    if (Process* next = pick_next()) {
      switch_to(next);
      return;
    }
    if (prev && prev->state == ProcState::Runnable) return;  // nothing else: keep running
  }
  switch_to_idle();
}

void on_timer_tick(bool from_user) {
  ++mine().ticks;
  expire_timed_sleeps();
  if (from_user && running_here() && running_here()->state == ProcState::Runnable) schedule();
}

void cond_resched() {
  kernel_lock_yield();
  const uint64_t slice = kSliceMs * g_platform->tsc_khz;
  Process* p = running_here();
  if (p && p->state == ProcState::Runnable && cpu::rdtsc() - mine().slice_start_tsc >= slice) schedule();
}

extern "C" void process_first_entry() {
  // A new process leaves for user mode for the first time on this CPU:
  // its selectors (fork: the parent's), then the kernel lock goes.
  restore_user_segments(*running_here());
  kernel_unlock();
}

void set_sched_all_cpus(bool all) { g_sched_all_cpus = all; }

void secondary_cpu_scheduler() {
  // Parked (halted, woken by the Reschedule start_init sends) until
  // processes exist.
  while (!__atomic_load_n(&g_sched_started, __ATOMIC_ACQUIRE)) g_platform->idle_halt();
  if (g_platform->start_cpu_timer) g_platform->start_cpu_timer();
  kernel_lock();
  idle_loop(false);
  panic("an idle loop returned on CPU %u", me());
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
  if (!acts(p, sig)) return;  // masked or ignored: nothing to hurry
  // A blocked call returns EINTR so the signal is seen on the way out; a
  // thread running elsewhere is interrupted so it sees it now.
  if (p.state == ProcState::Blocked)
    make_runnable(p);
  else
    kick_signal_target(p);
}

void raise_fault_signal(int sig) {
  Process& p = *running_here();
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

void return_after_kick(TrapFrame& f) {
  if (!mine().kicked) return;  // an IPI of another kind: nothing to deliver
  kernel_lock();
  prepare_return_to_user(f);
  kernel_unlock();
}

void prepare_return_to_user(TrapFrame& f) {
  Process& p = *running_here();
  mine().kicked = false;  // what a kick asked for happens here
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
  running_here()->blocked = sf.blocked & ~sig_bit(abi::SIGKILL);
  return static_cast<int64_t>(f.rax);
}

ErrorOr<int> do_fork() {
  Process& parent = *running_here();
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
    // Every CPU stops running processes; the boot CPU's idle loop returns
    // into start_init, which tears down what is left.
    g_init_status = status;
    __atomic_store_n(&g_init_exited, true, __ATOMIC_RELEASE);
    if (me() != 0) xcpu::send(0, xcpu::Ipi::Reschedule);
    switch_to_idle();
  }
  if (Process* parent = find_process(group.ppid)) wake_all(parent);
  schedule();
  panic("a zombie was scheduled");
}

ErrorOr<int> do_wait(int pid, uint64_t user_status, int options) {
  Process& self = *running_here();
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
  kernel_lock();  // the boot CPU's idle context holds it like any other
  Process* p = alloc_process();
  if (!p) {
    kernel_unlock();
    return Errno::EAGAIN;
  }
  for (int fd = 0; fd < 3; ++fd) p->fds[fd] = console_file();
  this_cpu()->current = p;  // exec works on the current process
  if (auto r = exec_program(*p, argv[0], argv, envp); r.is_error()) {
    release_resources(*p);
    p->state = ProcState::Free;
    this_cpu()->current = nullptr;
    kernel_unlock();
    return r.error();
  }
  this_cpu()->current = nullptr;
  switch_space(nullptr);
  prepare_first_switch(*p);
  p->state = ProcState::Runnable;
  fault_inject_arm(true);  // fail= (if configured) concerns what the processes do
  xcpu::set_handler(xcpu::Ipi::SignalKick, &note_signal_kick);
  // The other CPUs leave their park (secondary_cpu_scheduler).
  __atomic_store_n(&g_sched_started, true, __ATOMIC_RELEASE);
  for (unsigned c = 1; c < smp::kMaxCpus; ++c)
    if (xcpu::online(c)) xcpu::send(c, xcpu::Ipi::Reschedule);
  idle_loop(/*boot_cpu=*/true);  // returns when init has exited
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
  for (Process& q : g_procs) {
    if (q.state == ProcState::Free) continue;
    release_resources(q);
    q.state = ProcState::Free;
  }
  futex_forget_all();
  report_sched();
  kernel_unlock();
  return g_init_status;
}

}  // namespace pvk
