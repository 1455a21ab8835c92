// What the files of the process layer share and nothing else includes:
// the table (process.cpp), the scheduler (scheduler.cpp), signals
// (signals.cpp), fork/exit/wait and init (lifecycle.cpp).
#pragma once
#include "arch/smp/percpu.h"
#include "kernel/proc/process.h"

namespace pvk::proc {

// Everything here is under the kernel lock (kernel/kernel_lock.h),
// except the flags idle loops and parked CPUs read with atomics.
constexpr unsigned kMaxProcs = 64;
extern Process g_procs[kMaxProcs];
extern int g_init_status;
extern bool g_init_exited;    // every CPU stops running processes
extern bool g_sched_started;  // processes exist: parked CPUs join in

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
  // Set whenever a process this CPU may run may have become pickable;
  // cleared by this CPU's idle loop when it looked and found nothing. Its
  // halt loop reads it without the lock: a tick that finds it clear halts
  // again without taking the lock (which would stall the CPU that works in
  // the kernel meanwhile).
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
void switch_to_idle();
void idle_loop(bool boot_cpu);
void report_sched();
void kick_signal_target(const Process& p);
void note_signal_kick();
// The CPUs that run processes (online, and sched_cpus= allows), bit n: CPU n.
uint64_t schedulable_cpus();
bool may_run_here(const Process& p);
// After the caller's affinity changed: off this CPU if it may not run here.
void migrate_if_unallowed();

}  // namespace pvk::proc
