// Processes: a pid, an address space, a kernel stack whose top holds the
// user-mode TrapFrame, open files, signal state. Every CPU runs processes
// from its own run queue (kernel/proc/run_queue.h), and an idle CPU takes
// work from the others'; a process runs on at most one CPU at a time
// (Process::on_cpu) and may continue on another after it was switched
// out. The kernel is never preempted (interrupts are off in kernel mode);
// user mode is, on each CPU's timer tick. A CPU with nothing to run goes
// to its idle loop and halts until a tick or a Reschedule IPI.
#pragma once
#include "base/lib/fault_inject.h"
#include "arch/smp/percpu.h"
#include "arch/trap_frame.h"
#include "arch/upcalls.h"  // what arch calls here: the entries, the scheduler of other CPUs
#include "base/abi.h"
#include "mm/address_space.h"

namespace pvk {

struct File;
namespace fs {
struct Inode;
}

// Blocked: committed to sleep, maybe still on its CPU; Asleep: its switch
// away decided it stays off every queue until woken (kernel/proc/wake.h).
enum class ProcState : uint8_t { Free, Runnable, Blocked, Asleep, Zombie };

struct Process {
  static constexpr unsigned kMaxFds = 16;
  static constexpr uint64_t kStackSize = 16384;

  int pid = 0;
  int ppid = 0;
  ProcState state = ProcState::Free;
  int wait_status = 0;  // for the parent's wait4 once a zombie
  AddressSpace* as = nullptr;
  uint64_t saved_rsp = 0;        // kernel stack pointer while switched out
  // What a sleeping process sleeps on (wake_all's channel), and for a timed
  // sleep the TSC value at which the timer wakes it (0: no timer). Its own:
  // written by itself before it commits to sleep (kernel/proc/wake.h) and
  // cleared by itself once it runs again; others read them only while it
  // sleeps (wake_all, the timer scan).
  const void* wait_on = nullptr;
  uint64_t wake_deadline = 0;
  // Its kernel's copies from user memory must not take a fault (the fault
  // fails the copy instead): set around a copy made under a spinlock
  // (kernel/proc/futex.cpp).
  bool user_faults_off = false;
  // The CPU it runs on (kNoCpu: none). Set by the CPU switching to it,
  // under that CPU's run-queue lock; cleared once a switch away from it is
  // complete (its registers saved), before it can be queued again.
  static constexpr int16_t kNoCpu = -1;
  int16_t on_cpu = kNoCpu;
  // Whose run queue it waits on (kNoCpu: none), and its link there
  // (kernel/proc/run_queue.h); the CPU it last ran on, where a wake-up
  // sends it unless another CPU it may run on is idle.
  int16_t rq_cpu = kNoCpu;
  int16_t last_cpu = 0;
  Process* rq_next = nullptr;
  // Whether it held the kernel lock when it was switched out (a sleep in a
  // system call under it) or not (sched_yield, which runs without it): it
  // holds the same again when it runs on. A new process starts as if it
  // held it (its first way to user mode drops it).
  bool holds_kernel_lock = true;
  uint32_t ran_on = 0;  // bit n: it has run on CPU n (the sched record)
  // Bit n: it may run on CPU n (sched_setaffinity; fork and clone inherit
  // it, as on Linux). The scheduler also keeps to the CPUs that run
  // processes at all (sched_cpus=).
  uint64_t affinity = ~uint64_t{0};
  // The data segment selectors user mode loaded (the kernel never changes
  // them): kept here while it is switched out, since it may continue on a
  // CPU whose registers hold another process's.
  uint16_t user_ds = 0, user_es = 0, user_gs = 0;
  File* fds[kMaxFds] = {};
  uint32_t cloexec = 0;  // bit n: descriptor n closes at execve (FD_CLOEXEC)
  static_assert(kMaxFds <= 32, "cloexec has a bit per descriptor");
  // The working directory (a reference held; null: the root), the group's
  // like the files.
  fs::Inode* cwd = nullptr;
  // The program's file (/proc/self/exe; a reference held; null for an
  // embedded program), the group's like the working directory.
  fs::Inode* exe = nullptr;
  abi::KernelSigaction actions[abi::kNumSignals + 1] = {};
  uint64_t pending = 0;  // bit n-1: signal n
  uint64_t blocked = 0;
  // rt_sigsuspend: the mask its handler's frame saves (and sigreturn puts
  // back), instead of the temporary one the call waited under.
  uint64_t suspend_saved_mask = 0;
  bool suspend_mask_pending = false;
  char name[32] = {};
  // The last user page fault, to tell a livelock from demand paging.
  uint64_t last_fault_rip = 0;
  uint64_t last_fault_addr = 0;
  unsigned fault_repeats = 0;
  unsigned fault_failures = 0;  // consecutive faults that ran out of frames or were refused

  // Threads (kernel/proc/thread.cpp). A process is a thread group: its
  // leader (tgid == pid) owns the address space, the file table and the
  // signal actions for the whole group, until the last thread exits;
  // every thread's `as` points at the same space, and its files and
  // actions are the leader's (`leader->fds`, `leader->actions`).
  int tgid = 0;
  // On the leader: its process group and session (fork inherits them;
  // setpgid and setsid change them), and whether it has called execve
  // since its fork (setpgid on such a child is EACCES).
  int pgid = 0;
  int sid = 0;
  bool did_exec = false;
  Process* leader = nullptr;   // this, for a leader
  unsigned live_threads = 0;   // on the leader: threads not yet exited, itself included
  bool group_exiting = false;  // on the leader: exit_group or a fatal signal ends every thread
  int group_exit_status = 0;   // on the leader: the status wait4 reports then
  Process* exec_thread = nullptr;  // on the leader: the thread whose execve is ending the others
  uint64_t set_child_tid = 0;    // a new process' CLONE_CHILD_SETTID word, written on its first way to user mode
  uint64_t clear_child_tid = 0;  // CLONE_CHILD_CLEARTID / set_tid_address: zeroed and woken at exit
  uint64_t fs_base = 0;          // the user FS base (TLS), loaded when this thread is switched to
  // Its FP/SIMD state while switched out (kernel/proc/fpu_state.h): one
  // frame, from the slot's allocation to the thread's exit.
  uint8_t* fpu = nullptr;

  // Where its user-mode TrapFrame sits (frame(), set with the slot): the
  // system call entry checks its frame against it on every call, one
  // compare instead of the slot's arithmetic.
  TrapFrame* user_frame = nullptr;

  uint8_t* stack_base() const;
  uint64_t stack_top() const { return reinterpret_cast<uint64_t>(stack_base()) + kStackSize; }
  TrapFrame* frame() const { return reinterpret_cast<TrapFrame*>(stack_top() - sizeof(TrapFrame)); }
};

// The process running on this CPU. Inline: every system call and fault
// asks, some twice (a call was 3 instructions and a clobbered register set).
inline Process* current() { return static_cast<Process*>(this_cpu()->current); }

// Scheduler. Sleeping and waking follow kernel/proc/wake.h: a sleeper
// commits, looks at its condition once more, then sleeps; any waker (with
// or without the kernel lock) ends the sleep with one compare-and-swap.
void sleep_on(const void* channel);  // block until wake_all(channel); the caller re-checks
// Timed sleeps (kernel/proc/timed_sleep.cpp): block until wake_all(channel)
// or the TSC reaches deadline, releasing the CPU (and the kernel lock, if
// held) the whole time; true if the deadline has passed. The caller
// re-checks either way.
bool sleep_until(const void* channel, uint64_t deadline_tsc);
// The same in two steps, for a sleeper whose condition is set by wakers
// that do not hold the kernel lock (a futex): commit (wake_all(channel), a
// signal, the timer at deadline_tsc — UINT64_MAX: none — or a wake_up from
// here on ends the coming sleep), look at the condition, then either
// sleep_committed() or cancel_committed_sleep().
void commit_sleep(const void* channel, uint64_t deadline_tsc);
void sleep_committed();
void cancel_committed_sleep();
// Wakes every timed sleeper whose deadline has passed (kernel lock held):
// every CPU's tick from user mode and every idle loop's wake-up call it.
void expire_timed_sleeps();
// Whether a timed sleeper's deadline may have passed (no lock: an idle
// CPU's halt loop asks before it halts again).
bool timed_sleep_due();
// For the timer: a committed sleeper's deadline (any lock or none).
void note_deadline(uint64_t deadline_tsc);
void wake_all(const void* channel);  // kernel lock held: a scan of the process table
// Ends p's sleep, whoever calls (no lock needed); false if it was not
// sleeping (already woken, or running).
bool wake_up(Process& p);
// p, new, can run: an idle CPU may take it.
void make_runnable(Process& p);
void schedule();                     // run someone else if anyone is runnable
void on_user_tick();  // a tick from user mode, without the kernel lock
// Whether every CPU runs processes (true) or only the boot CPU (the others
// idle, tickless under Xen). Set before start_init.
void set_sched_all_cpus(bool all);
// A preemption point for long kernel work (the kernel is otherwise never
// preempted): once the current process has run a whole time slice, the
// others run before it continues.
void cond_resched();

// Lifecycle.
// Runs argv[0] as pid 1; returns its wait status when it exits.
ErrorOr<int> start_init(const char* const* argv);
ErrorOr<int> do_fork();
// The whole process (every thread of the caller's group) ends: exit_group,
// fatal signals. The status is what the parent's wait4 sees.
[[noreturn]] void do_exit(int wait_status);
// Only the calling thread ends (exit); the process ends with its last thread.
[[noreturn]] void do_thread_exit(int wait_status);
Process* find_process(int pid);
// Every slot of the process table, free ones too (kill of a group,
// setpgid, sysinfo look at all processes).
struct ProcessTable {
  Process* slots;
  unsigned count;
  Process* begin() const { return slots; }
  Process* end() const { return slots + count; }
};
ProcessTable process_table();
// For kernel/proc/thread.cpp: a fresh slot (its own group of one) or null,
// a slot handed back before it ever ran, a new slot's first switch laid
// out, and the table (slot i, null past the end).
Process* alloc_process();
void free_unstarted(Process& p);
void prepare_first_switch(Process& p);
Process* process_at(unsigned i);
// A signal is waiting that should cut a blocking call short (EINTR).
bool signal_interrupts(const Process& p);

// Called on every way back to user mode: deliver signals, maybe reschedule.
void prepare_return_to_user(TrapFrame& f);
// A synchronous fault in user mode that becomes a signal.
void raise_fault_signal(int sig);
void send_signal(Process& p, int sig);

// A trap from user mode under the kernel lock (trap_from_user's slow
// path, and every trap but page faults).
void user_trap(TrapFrame& f, uint64_t fault_addr);

// A user page fault tried without the kernel lock: the common
// outcome, a page mapped or a COW broken, needs only the address space's
// lock. What it came to:
//  - Done: handled; straight back to user mode;
//  - DoneSignalsPending: handled, but a signal waits (another CPU sent it):
//    the caller delivers it under the kernel lock (prepare_return_to_user);
//  - NeedsKernelLock: not done here — the backend or the boot's switches
//    want faults under the kernel lock, or the fault ends in a signal, an
//    OOM retry or kill, or the livelock check. The caller takes the kernel
//    lock and runs user_trap, which handles the fault again from the start
//    (a page this attempt mapped is found mapped), so the slow outcomes
//    have one implementation, under the kernel lock as before.
enum class UnlockedFault : uint8_t { Done, DoneSignalsPending, NeedsKernelLock };
UnlockedFault user_fault_unlocked(TrapFrame& f, uint64_t fault_addr);

// Whether work on one address space alone (a fault, mmap, munmap,
// mprotect, brk) may run under that space's lock without the kernel lock:
// the backend keeps nothing kernel-wide in it (its row's FaultLocking,
// pvops/backends/registry.h); page tables are never shared between spaces
// (ptshare=on shares L1 tables across a fork, and one space's lock does not
// cover its siblings' writes to them); fault injection is off (its schedule
// is one global sequence). The first two are the boot's, read once before
// the first process (note_space_locking); the check is on every fault.
extern bool g_space_lock_by_boot;
void note_space_locking();
inline bool space_lock_suffices() { return g_space_lock_by_boot && !fault_inject_armed(); }

// Every system call but the null ones (kernel/proc/unlocked_calls.cpp):
// without the kernel lock where it can, else under it (syscall_dispatch).
// Returns with the result in f.rax, ready to return to user mode.
void syscall_other(TrapFrame& f);
// The way back of a call run without the kernel lock that has work for it
// (kernel/proc/unlocked_return.h says when): takes the lock for the
// deferred file puts and prepare_return_to_user, and drops it.
void return_under_kernel_lock(TrapFrame& f);

}  // namespace pvk
