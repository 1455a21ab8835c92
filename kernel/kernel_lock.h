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
// subsystem at a time. Split out so far, for user page faults, which run
// without this lock (kernel/proc/process.h: user_fault_unlocked):
//  - each address space's page tables and VMAs: its own lock (rank Mm),
//    which every path that changes them takes under this one;
//  - the frame allocator (rank Frames) and atomic frame reference counts;
//  - the pvops lazy-MMU state and Xen update queue (per CPU) and the MMU
//    counters (atomic adds).
//
// The lock belongs to a CPU, not a process: a process that sleeps in the
// kernel keeps nothing; the CPU switching to another process (or to its
// idle loop) keeps holding the lock across switch_context and the code it
// switches to releases it (on its way to user mode, or before halting).
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
