// Cross-CPU requests: the one interface lower layers (pvops' TLB
// shootdown, mm) use to make another CPU do something, implemented by
// arch/smp (natively an IPI through the local APIC, under Xen PV an event
// channel bound to the target vCPU). Declared here, in base/, so pvops/ and
// mm/ can call it without looking up into guest/.
//
// Contract:
// - send(cpu, kind) makes `cpu` run the handler registered for `kind` soon:
//   from its interrupt/event entry if it has interrupts (events) enabled,
//   or from poll() if it is spinning with them disabled. Several sends of
//   one kind before the target runs its handler may be merged into one
//   call: handlers read their work from memory the sender filled in before
//   sending (a mailbox), and must be idempotent.
// - poll() runs, on this CPU, the handlers of every kind sent to it and not
//   yet handled. Any loop that spins with interrupts off (a lock, waiting for
//   another CPU) calls it, so two CPUs waiting on each other cannot deadlock.
// - Handlers run with interrupts off, on whatever stack the CPU is on; they
//   must not sleep, take the kernel lock, or send and wait themselves.
#pragma once
#include <stdint.h>

namespace pvk::xcpu {

enum class Ipi : uint8_t {
  Reschedule,  // something became runnable: an idle CPU should look
  TlbFlush,    // pvops' shootdown: flush what this CPU's mailbox asks
  // A signal was posted to the thread running there: enter the kernel, whose
  // way back to user mode delivers it (else it waits for that CPU's tick).
  SignalKick,
  // SYS_pvk_probe's IPI round trip (kernel/proc/probes.cpp): the handler
  // only acknowledges, so the sender times the transit both ways.
  Probe,
  kCount
};

using Handler = void (*)();

// This CPU's dense id (0 is the boot CPU); per-CPU data exists from early boot.
unsigned this_cpu_id();
// How many CPUs are online (1 until the APs report in).
unsigned cpus_online();
// Whether `cpu` is online.
bool online(unsigned cpu);

void set_handler(Ipi kind, Handler h);
// False if the platform could not send it (the hypercall or the APIC
// refused); the caller reports that, never waits for an answer then.
bool send(unsigned cpu, Ipi kind);
void poll();

}  // namespace pvk::xcpu
