// The scheduler: a run queue per CPU (kernel/proc/run_queue.h) with idle
// CPUs pulling from the others, wake-ups sent to the CPU that should run
// the woken process, each CPU's switches between processes and its idle
// loop, waking (the sleep side is kernel/proc/sleep.cpp), ticks, and the
// secondary CPUs' entry into it.
//
// The kernel lock is a process's, not the scheduler's: a process that
// sleeps in a system call holds it until its switch away is complete, and
// holds it again when it runs on; one that yields without it (sched_yield)
// neither gives nor takes it. Between two holders it passes as a baton
// (finish_switch). Queues, switches and idle CPUs' searches need only the
// run-queue locks.
#include "kernel/proc/process.h"

#include "base/arch/cpu.h"
#include "base/arch/cross_cpu.h"
#include "base/arch/platform.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "kernel/proc/user_copy.h"
#include "base/lib/format.h"
#include "kernel/kernel_lock.h"
#include "kernel/proc/fpu_state.h"
#include "kernel/proc/process_parts.h"
#include "kernel/proc/thread.h"
#include "kernel/proc/wake.h"
#include "arch/smp/percpu.h"
#include "arch/switch.h"

namespace pvk {

namespace proc {

int g_init_status = 0;
bool g_init_exited = false;
bool g_sched_started = false;
CpuSched g_sched[smp::kMaxCpus];

}  // namespace proc

using namespace proc;

// File-local: the scheduler's own state and steps.
namespace {

bool g_sched_all_cpus = true;  // sched_cpus= (boot: only CPU 0 runs processes)
constexpr uint64_t kSliceMs = 10;  // the same as the timer tick
constexpr uint64_t kMinRunMs = 1;  // what a process runs before a tick may take the CPU from it

// User mode's data segment selectors, as this CPU holds them now.
struct Selectors {
  uint16_t ds, es, gs;
};
Selectors read_selectors() {
  Selectors s;
  asm volatile("mov %%ds, %0\n\tmov %%es, %1\n\tmov %%gs, %2" : "=r"(s.ds), "=r"(s.es), "=r"(s.gs));
  return s;
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

bool stopping() { return __atomic_load_n(&g_init_exited, __ATOMIC_ACQUIRE); }
bool is_idle(unsigned c) { return __atomic_load_n(&g_sched[c].idle, __ATOMIC_SEQ_CST); }

// Where a runnable process waits: its last CPU if that one is idle (its
// caches, and no other CPU disturbed), else any idle CPU it may run on,
// else its last CPU again (or, if it may no longer run there, the first it
// may run on). So a wake-up never leaves a CPU idle while the process
// waits behind another on a busy one.
unsigned place(const Process& p) {
  if (xcpu::one_cpu()) return 0;
  uint64_t allowed = p.affinity & schedulable_cpus();
  if (!allowed) allowed = schedulable_cpus();  // its CPUs went away: any
  const unsigned last = static_cast<unsigned>(p.last_cpu);
  const bool last_allowed = allowed >> last & 1;
  if (last_allowed && is_idle(last)) return last;
  for (uint64_t m = allowed; m; m &= m - 1) {
    const unsigned c = static_cast<unsigned>(__builtin_ctzll(m));
    if (is_idle(c)) return c;
  }
  return last_allowed ? last : static_cast<unsigned>(__builtin_ctzll(allowed));
}

// Queues p (runnable, on no CPU, on no queue) where place() says, and
// wakes that CPU if it idles. The hint is set before the idle flag is
// read, and an idle loop sets its flag before it reads the hint: one of
// the two sees the other (both sequentially consistent).
void enqueue(Process& p) {
  const unsigned c = place(p);
  CpuSched& cs = g_sched[c];
  cs.rq.lock();
  cs.rq.push(p, static_cast<int16_t>(c));
  cs.rq.unlock();
  __atomic_store_n(&cs.work_hint, true, __ATOMIC_SEQ_CST);
  if (c == me()) return;
  // One kick per idle spell: whoever clears the flag sends it.
  if (__atomic_exchange_n(&cs.idle, false, __ATOMIC_SEQ_CST) && xcpu::send(c, xcpu::Ipi::Reschedule))
    ++mine().kicks_sent;
}

// Completes a switch on the side switched to (a process resumed in
// switch_to or switch_to_idle, an idle loop, a new process's first entry),
// with this CPU's run-queue lock still held from the switcher: the
// process switched away from is now off this CPU (its registers saved),
// so it may be queued again or reaped; then the kernel lock goes from the
// old context's holding to the new one's (`resumed_holds`) — kept, as a
// baton, when both hold it.
void finish_switch(bool resumed_holds) {
  CpuSched& cs = mine();
  const PendingSwitch s = cs.pending;
  cs.pending = PendingSwitch{};
  if (s.prev) __atomic_store_n(&s.prev->on_cpu, Process::kNoCpu, __ATOMIC_RELEASE);
  cs.rq.unlock();
  if (s.requeue_prev && !stopping()) enqueue(*s.prev);
  if (s.prev_held_kernel_lock && !resumed_holds) kernel_unlock();
  if (!s.prev_held_kernel_lock && resumed_holds) kernel_lock();
}

// The process this CPU switches away from (held: whether it holds the
// kernel lock): what finish_switch, on the other side, needs of it — and
// whether it goes back on a queue (still runnable: preempted, yielded, no
// longer allowed here, or woken before this decision: wake.h's switch_out)
// — then its registers that are not the switch's.
void leave(CpuSched& cs, Process& prev, bool held) {
  cs.pending = PendingSwitch{&prev, held, switch_out(prev)};
  prev.holds_kernel_lock = held;
  save_user_segments(prev);
  fpu_switch_out(prev);
}

// Switches this CPU from what it runs (a process, or its idle loop) to
// `next`, which was just taken off a run queue, with this CPU's run-queue
// lock held (finish_switch, on the other side, drops it). `held`: whether
// the context switched away from holds the kernel lock.
void switch_to(Process* next, bool held) {
  Process* prev = running_here();
  const unsigned id = me();
  CpuSched& cs = g_sched[id];
  next->on_cpu = static_cast<int16_t>(id);
  next->last_cpu = static_cast<int16_t>(id);
  if (!(next->ran_on & (1u << id))) next->ran_on |= 1u << id, ++cs.processes;
  ++cs.switches;
  if (prev) leave(cs, *prev, held);  // (from idle: pending is empty, as every finish_switch leaves it)
  this_cpu()->current = next;
  if (!prev && g_platform->timer_resume) g_platform->timer_resume();  // from idle: the tick again
  cs.slice_start_tsc = cpu::rdtsc();
  g_platform->set_kernel_stack(next->stack_top());
  switch_space(next);
  // This CPU's FS base is prev's (loaded when prev came here) or, from
  // idle, whatever ran here last: switch_fs_base writes it from idle.
  switch_fs_base(prev, *next);
  fpu_switch_in(*next);  // the kernel uses no FP registers: next's from here on
  switch_context(prev ? &prev->saved_rsp : &cs.idle_rsp, next->saved_rsp);
  // Back here, maybe on another CPU: as the process (or idle loop) that
  // was switched away from.
  finish_switch(prev ? prev->holds_kernel_lock : false);
  if (prev) restore_user_segments(*prev);
}

// From the running process to this CPU's idle loop, this CPU's run-queue
// lock held (as for switch_to).
void switch_to_idle_locked(bool held) {
  Process* prev = running_here();
  if (!prev) panic("switch to idle with no process running");
  CpuSched& cs = mine();
  leave(cs, *prev, held);
  this_cpu()->current = nullptr;
  switch_space(nullptr);
  switch_context(&prev->saved_rsp, cs.idle_rsp);
  finish_switch(prev->holds_kernel_lock);
  restore_user_segments(*prev);  // resumed, maybe on another CPU
}

// Work for this CPU, with its run-queue lock held on return if there is
// any: the first process of its own queue that may run here, else one
// taken from another CPU's queue (a CPU that would otherwise idle or
// spin in sched_yield pulls; each queue is locked alone, never two at
// once). Null (and no lock held) if there is none.
Process* take_work() {
  const unsigned self = me();
  const uint64_t bit = uint64_t{1} << self;
  CpuSched& cs = g_sched[self];
  if (!(schedulable_cpus() & bit)) return nullptr;
  cs.rq.lock();
  if (Process* p = cs.rq.take_first(bit)) return p;
  cs.rq.unlock();
  const uint64_t others = schedulable_cpus() & ~bit;
  for (uint64_t m = others; m; m &= m - 1) {
    CpuSched& victim = g_sched[__builtin_ctzll(m)];
    if (!victim.rq.size()) continue;
    victim.rq.lock();
    Process* p = victim.rq.take_first(bit);
    victim.rq.unlock();
    if (!p) continue;
    ++cs.steals;
    cs.rq.lock();
    return p;
  }
  return nullptr;
}

// Whether any process runs or can run, or will (a timed sleeper's timer
// wakes it); else every one is blocked for good: nothing (no I/O) would
// wake them. Asked when every other CPU idles: a waker without the kernel
// lock (a futex wake) runs on a CPU that does not, so what is read here
// stays still.
bool anything_to_run() {
  for (const Process& p : g_procs) {
    const ProcState s = load_state(p);
    if (s == ProcState::Runnable || __atomic_load_n(&p.on_cpu, __ATOMIC_ACQUIRE) != Process::kNoCpu ||
        (sleeping(s) && __atomic_load_n(&p.wake_deadline, __ATOMIC_RELAXED)))
      return true;
  }
  return false;
}

// Every CPU that runs processes idles but this one: the only time a
// deadlock check (under the kernel lock) is worth its cost.
bool others_idle() {
  const uint64_t others = schedulable_cpus() & ~(uint64_t{1} << me());
  for (uint64_t m = others; m; m &= m - 1)
    if (!is_idle(static_cast<unsigned>(__builtin_ctzll(m)))) return false;
  return true;
}

void check_deadlock() {
  kernel_lock();
  const bool any = anything_to_run();
  kernel_unlock();
  if (any) return;
  kprintf("pvk: every process is blocked: deadlock\n");
  Record("error").str("message", "every process is blocked");
  panic("deadlock");
}

// Timers expire under the kernel lock (a timed sleeper is woken like any
// other); a caller without it takes it only when one is due.
void expire_timers(bool held) {
  if (held) return expire_timed_sleeps();
  if (!timed_sleep_due()) return;
  kernel_lock();
  expire_timed_sleeps();
  kernel_unlock();
}

}  // namespace

// Shared with the other files of the process layer (process_parts.h).
namespace proc {

// Recomputed only when the number of CPUs online changes (bring-up): the
// scheduler asks at every switch.
uint64_t schedulable_cpus() {
  // One CPU: CPU 0, whatever sched_cpus= says (it always runs processes);
  // no indirect call for the count online, no popcount behind it.
  if (xcpu::one_cpu()) return 1;
  static unsigned counted = 0;
  static uint64_t cpus = 0;
  const unsigned online = xcpu::cpus_online();
  if (__atomic_load_n(&counted, __ATOMIC_ACQUIRE) == online) return __atomic_load_n(&cpus, __ATOMIC_RELAXED);
  uint64_t mask = 0;
  for (unsigned c = 0; c < smp::kMaxCpus && c < 64; ++c)
    if (xcpu::online(c) && (g_sched_all_cpus || c == 0)) mask |= uint64_t{1} << c;
  __atomic_store_n(&cpus, mask, __ATOMIC_RELAXED);
  __atomic_store_n(&counted, online, __ATOMIC_RELEASE);
  return mask;
}

bool may_run_here(const Process& p) { return p.affinity >> me() & 1; }

void follow_affinity(Process& p) {
  if (&p == running_here()) {
    if (!may_run_here(p)) schedule();  // off this CPU: queued where it may run
    return;
  }
  // Queued where it may no longer run: queued again where it may. (A
  // process another CPU is switching to or from is on no queue: that
  // switch queues it by its new mask.)
  const int16_t c = __atomic_load_n(&p.rq_cpu, __ATOMIC_RELAXED);
  if (c == Process::kNoCpu || p.affinity >> c & 1) return;
  RunQueue& rq = g_sched[c].rq;
  rq.lock();
  const bool was_there = rq.remove(p);
  rq.unlock();
  if (was_there) enqueue(p);
}

void clear_run_queues() {
  for (CpuSched& cs : g_sched) {
    cs.rq.lock();
    cs.rq.clear();
    cs.rq.unlock();
  }
}

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

void save_user_segments(Process& p) {
  const Selectors s = read_selectors();
  p.user_ds = s.ds, p.user_es = s.es, p.user_gs = s.gs;
}

void switch_to_idle() {
  mine().rq.lock();
  switch_to_idle_locked(kernel_lock_held());
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

// A CPU's idle context (process_parts.h). It takes no kernel lock to
// find work: its own run queue's lock, or another CPU's to pull from.
void idle_loop(bool boot_cpu) {
  CpuSched& cs = mine();
  for (;;) {
    expire_timers(/*held=*/false);
    if (stopping()) {
      if (boot_cpu) {
        kernel_lock();  // start_init's teardown runs under it
        return;
      }
    } else {
      // Cleared before looking: work queued after the look sets it again.
      __atomic_store_n(&cs.work_hint, false, __ATOMIC_SEQ_CST);
      if (Process* next = take_work()) {
        switch_to(next, /*held=*/false);
        continue;  // back when this CPU has nothing to run
      }
      if (others_idle()) check_deadlock();
    }
    __atomic_store_n(&cs.idle, true, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&cs.work_hint, __ATOMIC_SEQ_CST) && !timed_sleep_due() &&
           !(boot_cpu && stopping())) {
      ++cs.idle_halts;
      g_platform->idle_halt();
    }
    __atomic_store_n(&cs.idle, false, __ATOMIC_SEQ_CST);
  }
}

}  // namespace proc

// Lays out a fresh kernel stack so that switching to it returns to user
// mode through the TrapFrame at its top.
void prepare_first_switch(Process& p) {
  auto* sp = reinterpret_cast<uint64_t*>(p.frame());
  *--sp = reinterpret_cast<uint64_t>(process_first_return);
  for (int i = 0; i < 6; ++i) *--sp = 0;  // rbp rbx r12 r13 r14 r15
  p.saved_rsp = reinterpret_cast<uint64_t>(sp);
}

void make_runnable(Process& p) {
  p.state = ProcState::Runnable;
  p.wait_on = nullptr;
  p.wake_deadline = 0;
  if (!p.ran_on) p.last_cpu = static_cast<int16_t>(me());  // new: beside its creator, unless a CPU idles
  enqueue(p);
}

// The wake-up (kernel/proc/wake.h): a sleeper still on its CPU (it may be
// this one: its own timer expired as it went to sleep, schedule() expires
// timers first) stays runnable by itself; one its switch left asleep is
// queued here once that switch is complete.
bool wake_up(Process& p) {
  switch (claim_wake(p)) {
    case Claim::NotSleeping: return false;
    case Claim::StillOnCpu: return true;
    case Claim::QueueIt: break;
  }
  wait_until_off_cpu(p);
  enqueue(p);
  return true;
}


// With the kernel lock (a sleep, a tick, a preemption point) or without
// it (sched_yield); the caller holds the same again when this returns.
void schedule() {
  const bool held = kernel_lock_held();
  // Timers expire here too, not only at ticks from user mode and in idle
  // loops: processes that hand the CPU to each other inside the kernel
  // would otherwise keep every timed sleeper asleep past its deadline.
  expire_timers(held);
  Process* prev = running_here();
  CpuSched& cs = mine();
  if (!stopping()) {
    // This CPU's queue first, then another's: a thread that yields while
    // waiting for work queued elsewhere lets that work run here.
    if (Process* next = take_work()) {
      switch_to(next, held);
      return;
    }
    cs.rq.lock();
    // Nothing else anywhere: keep running, unless it may no longer run
    // here (a blocked one goes idle).
    if (prev && prev->state == ProcState::Runnable && may_run_here(*prev)) {
      cs.rq.unlock();
      return;
    }
  } else {
    cs.rq.lock();
  }
  switch_to_idle_locked(held);
}

// Whether the running process has had `ms` of this CPU since it was
// switched in.
bool ran_for(uint64_t ms) { return cpu::rdtsc() - mine().slice_start_tsc >= ms * g_platform->tsc_khz; }

void on_user_tick() {
  ++mine().ticks;
  // Without the kernel lock (entries.cpp): the scan of the timed sleepers
  // takes it, and only when one is due.
  expire_timers(/*held=*/false);
  // Only a process that has run a little: a tick that came due while a
  // locked call ran with interrupts off is taken by whichever process that
  // call handed the CPU to, as soon as it is back in user mode, and must not
  // take the CPU from it again at once (a long console write would
  // otherwise starve every other process on its CPU).
  Process* p = running_here();
  if (p && proc::load_state(*p) == ProcState::Runnable && ran_for(kMinRunMs)) schedule();
}

void cond_resched() {
  kernel_lock_yield();
  Process* p = running_here();
  if (p && p->state == ProcState::Runnable && ran_for(kSliceMs)) schedule();
}

extern "C" void process_first_entry() {
  // A new process leaves for user mode for the first time on this CPU:
  // the switch completed (it starts as if it held the kernel lock), its
  // selectors (fork: the parent's), then the kernel lock goes.
  finish_switch(/*resumed_holds=*/true);
  Process& p = *running_here();
  restore_user_segments(p);
  if (p.set_child_tid) {
    // Its own space is loaded now. As on Linux, a word that faults is
    // simply not written.
    const int32_t tid = p.pid;
    (void)copy_to_user(p.set_child_tid, &tid, sizeof tid);
    p.set_child_tid = 0;
  }
  kernel_unlock();
}

void set_sched_all_cpus(bool all) { g_sched_all_cpus = all; }

void secondary_cpu_scheduler() {
  // Parked (halted, woken by the Reschedule start_init sends) until
  // processes exist.
  while (!__atomic_load_n(&g_sched_started, __ATOMIC_ACQUIRE)) g_platform->idle_halt();
  if (g_platform->start_cpu_timer) g_platform->start_cpu_timer();
  idle_loop(false);
  panic("an idle loop returned on CPU %u", me());
}

}  // namespace pvk
