// The scheduler: one run queue (the process table) for every CPU under the
// kernel lock, each CPU's switches between processes and its idle loop,
// sleeping and waking, ticks, and the secondary CPUs' entry into it.
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
unsigned g_rr_next = 0;        // where the round-robin scan starts
constexpr uint64_t kSliceMs = 10;  // the same as the timer tick

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

void work_appeared(uint64_t cpus);

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
    fpu_switch_out(*prev);
    if (prev->state == ProcState::Runnable) work_appeared(prev->affinity);  // an idle CPU may take it
  }
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
  // Back here, maybe on another CPU: this process's selectors again.
  if (prev) restore_user_segments(*prev);
}

// The next runnable process that no CPU runs, round-robin over the table.
Process* pick_next() {
  if (!g_sched_all_cpus && me() != 0) return nullptr;
  for (unsigned n = 0; n < kMaxProcs; ++n) {
    const unsigned i = (g_rr_next + n) % kMaxProcs;
    Process& p = g_procs[i];
    if (p.state == ProcState::Runnable && p.on_cpu == Process::kNoCpu && may_run_here(p)) {
      g_rr_next = i + 1;
      return &p;
    }
  }
  return nullptr;
}

// Something became runnable that may run on `cpus`: each of them gets
// the hint, and one idle one a kick to look (it may find the work taken
// already: then it halts again). The hint is per CPU because a process
// may be pinned: a CPU that looked and found nothing it may run clears
// only its own, never another's that has work waiting for it alone.
// Every switch and wake-up comes here, so it visits only the CPUs in the
// mask (one, on one CPU), never every possible CPU id.
void work_appeared(uint64_t cpus) {
  cpus &= schedulable_cpus();
  const unsigned self = me();
  for (uint64_t m = cpus; m; m &= m - 1)
    __atomic_store_n(&g_sched[__builtin_ctzll(m)].work_hint, true, __ATOMIC_SEQ_CST);
  for (uint64_t m = cpus; m; m &= m - 1) {
    const unsigned c = static_cast<unsigned>(__builtin_ctzll(m));
    if (c == self || !g_sched[c].idle) continue;
    g_sched[c].idle = false;  // one kick each: the next wake-up goes to another CPU
    if (xcpu::send(c, xcpu::Ipi::Reschedule)) ++g_sched[self].kicks_sent;
    return;
  }
}

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

}  // namespace

// Shared with the other files of the process layer (process_parts.h).
namespace proc {

// Recomputed only when the number of CPUs online changes (bring-up): the
// scheduler asks at every switch.
uint64_t schedulable_cpus() {
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

void migrate_if_unallowed() {
  Process* self = running_here();
  if (self && !may_run_here(*self)) schedule();
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

// From the running process to this CPU's idle loop.
void switch_to_idle() {
  Process* prev = running_here();
  if (!prev) panic("switch to idle with no process running");
  prev->on_cpu = Process::kNoCpu;
  save_user_segments(*prev);
  fpu_switch_out(*prev);
  this_cpu()->current = nullptr;
  // Still runnable (it may not run here, or the machine is stopping):
  // a CPU it may run on should take it.
  if (prev->state == ProcState::Runnable) work_appeared(prev->affinity);
  switch_space(nullptr);
  switch_context(&prev->saved_rsp, mine().idle_rsp);
  restore_user_segments(*prev);  // resumed, maybe on another CPU
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
    __atomic_store_n(&cs.work_hint, false, __ATOMIC_SEQ_CST);  // looked: nothing to pick
    cs.idle = true;
    kernel_unlock();
    do {
      ++cs.idle_halts;
      g_platform->idle_halt();
    } while (!__atomic_load_n(&cs.work_hint, __ATOMIC_SEQ_CST) && !timed_sleep_due() &&
             !(boot_cpu && __atomic_load_n(&g_init_exited, __ATOMIC_SEQ_CST)));
    kernel_lock();
    cs.idle = false;
  }
}

// Per-CPU counts at shutdown: proof of which CPUs ran processes.
void report_sched() {
  // Seven fields per CPU: more than a kilobyte past four CPUs. Shutdown
  // runs on one CPU, so one static buffer serves.
  static char storage[256 + smp::kMaxCpus * 7 * 40];
  Record r("sched", storage, sizeof storage);
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
  p.wake_deadline = 0;  // whoever woke it, its timer is done
  work_appeared(p.affinity);
}

Process* current() { return running_here(); }

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
    // Nothing else: keep running, unless it may no longer run here.
    if (prev && prev->state == ProcState::Runnable && may_run_here(*prev)) return;
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
  kernel_lock();
  idle_loop(false);
  panic("an idle loop returned on CPU %u", me());
}

}  // namespace pvk
