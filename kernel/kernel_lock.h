// The kernel lock: pvk's first SMP design is Linux 2.0's big kernel lock.
// A CPU takes it on every way into the kernel from user mode (system calls,
// traps and interrupts that arrive in user mode) and when it leaves its idle
// loop to look for work; it drops it on every way back to user mode and
// before it halts. Kernel code runs with interrupts off and is never
// preempted, so while one CPU runs kernel code no other does, except:
//  - an idle CPU's halt loop, which touches only its own per-CPU state;
//  - interrupt entries that do not reach processes (ticks arriving in the
//    kernel, cross-CPU requests: base/arch/cross_cpu.h), which run their
//    handler without the lock.
// So everything the kernel had as one-CPU state (the process table and run
// queue, files and pipes, signals) is serialised by this one lock. The cost
// is that two CPUs never run kernel code at once; finer locks
// (base/lib/spinlock.h, ranked inside Kernel's) are split out of it one
// subsystem at a time. Split out so far (docs/locking.md), where the
// space's own lock suffices (kernel/proc/process.h: space_lock_suffices):
//  - user page faults (user_fault_unlocked), anonymous mmap, munmap,
//    mprotect, brk (kernel/proc/unlocked_calls.cpp), fork's copy of the
//    space and exit's teardown (kernel/proc/lifecycle.cpp): each address
//    space's page tables and VMAs have their own lock (rank Mm), the table
//    of spaces and the root cache theirs (rank Spaces);
//  - the frame allocator (rank Frames) and atomic frame reference counts;
//  - a file's pages (rank FilePages) and its mappings' references (atomic;
//    a last drop without this lock is put on the way out, under it);
//  - the pvops lazy-MMU state and Xen update queue (per CPU) and the MMU
//    counters (atomic adds);
//  - the caller's own ids and the clocks.
//
//  - the run queues (one per CPU, kernel/proc/run_queue.h): sched_yield
//    and idle CPUs' search for work;
//  - sleeping and waking (kernel/proc/wake.h: a sleeper commits, then
//    looks once more; a waker's compare-and-swap decides who queues it)
//    and the futex calls (a lock per hash bucket, rank Futex);
//  - read, write and close of pipe ends: the descriptor looked up under its
//    group's table lock (rank FdTable, kernel/proc/fd_table.h), the bytes
//    and the wait queues under the pipe's lock (rank Pipe,
//    kernel/proc/pipe.h).
//
// The lock belongs to the process that holds it: one that sleeps in the
// kernel under it holds it until its switch away is complete and again
// when it runs on; between two holders the CPU passes it across
// switch_context as a baton (kernel/proc/scheduler.cpp: finish_switch).
#pragma once

namespace pvk {

void kernel_lock();
void kernel_unlock();
bool kernel_lock_held();
// A preemption point for long kernel work (cond_resched): lets the CPUs
// waiting for the lock in first. The caller holds nothing it relies on
// across it, as across schedule().
void kernel_lock_yield();

}  // namespace pvk
