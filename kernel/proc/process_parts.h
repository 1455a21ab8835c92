// What the files of the process layer share and nothing else includes:
// the table (process.cpp), the scheduler (scheduler.cpp), signals
// (signals.cpp), fork/exit/wait and init (lifecycle.cpp).
#pragma once
#include "arch/smp/percpu.h"
#include "kernel/proc/process.h"
#include "kernel/proc/run_queue.h"

namespace pvk::proc {

// The table and the init flags are under the kernel lock
// (kernel/kernel_lock.h); the idle loops and parked CPUs read the flags
// with atomics. The scheduler's per-CPU state is below.
constexpr unsigned kMaxProcs = 64;
extern Process g_procs[kMaxProcs];
extern int g_init_status;
extern bool g_init_exited;    // every CPU stops running processes
extern bool g_sched_started;  // processes exist: parked CPUs join in

// Each CPU's scheduling state. Its run queue has a lock of its own
// (kernel/proc/run_queue.h); the counts and its idle context are the
// CPU's own; `idle` and `work_hint` are read and written by other CPUs
// with atomics (a wake-up that queues work here, a kick).
// What a CPU switching between contexts leaves for the one it switched
// to (finish_switch, kernel/proc/scheduler.cpp): the process it switched
// away from, whether that one held the kernel lock, and whether it goes
// back on a run queue once its registers are saved.
struct PendingSwitch {
  Process* prev = nullptr;
  bool prev_held_kernel_lock = false;
  bool requeue_prev = false;
};

struct CpuSched {
  RunQueue rq;
  PendingSwitch pending;
  uint64_t idle_rsp = 0;  // its idle context (boot CPU: start_init's stack; AP: its bring-up stack)
  uint64_t slice_start_tsc = 0;
  uint64_t switches = 0;    // switches into a process
  uint64_t processes = 0;   // distinct processes that ran here
  uint64_t idle_halts = 0;  // times its idle loop halted
  uint64_t ticks = 0;       // timer ticks from user mode
  uint64_t kicks_sent = 0;  // Reschedule IPIs sent to idle CPUs
  uint64_t steals = 0;      // processes it took from other CPUs' queues (idle pull)
  uint64_t signal_kicks = 0;  // SignalKick IPIs sent: signals for threads running on other CPUs
  bool idle = false;        // in its idle loop, about to halt or halted: a Reschedule wakes it
  // Set whenever work was queued here (a wake-up, a preempted process
  // placed on this idle CPU); cleared by this CPU's idle loop just before
  // it looks at its queue, so work queued after that look sets it again
  // and the halt loop, which reads it without a lock, does not sleep
  // through it.
  bool work_hint = false;
  // A SignalKick came in and no way back to user mode has delivered
  // signals since. Only this CPU reads or writes it (its handler runs here,
  // interrupts off), so no atomics.
  bool kicked = false;
};
extern CpuSched g_sched[smp::kMaxCpus];

inline unsigned me() { return this_cpu()->id; }
inline CpuSched& mine() { return g_sched[me()]; }
inline Process* running_here() { return static_cast<Process*>(this_cpu()->current); }

inline uint64_t sig_bit(int sig) { return uint64_t{1} << (sig - 1); }

// The scheduler's (scheduler.cpp), for the others.
void switch_space(const Process* next);
void save_user_segments(Process& p);
// From the running process to this CPU's idle loop (init's exit: the
// kernel lock held, as by every caller of schedule()).
void switch_to_idle();
// A CPU's idle context: runs processes while there are any, halts while
// there are none. Entered without the kernel lock; the boot CPU's returns
// (holding it) once init has exited, the others' never.
void idle_loop(bool boot_cpu);
// After a change of p's affinity: off a run queue of a CPU it may no
// longer run on (the caller: off this CPU, if it may not run here).
void follow_affinity(Process& p);
// The machine stops: every run queue emptied (start_init's teardown).
void clear_run_queues();
void report_sched();
void kick_signal_target(const Process& p);
void note_signal_kick();
// The CPUs that run processes (online, and sched_cpus= allows), bit n: CPU n.
uint64_t schedulable_cpus();
bool may_run_here(const Process& p);

}  // namespace pvk::proc
