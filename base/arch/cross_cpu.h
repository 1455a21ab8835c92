// Cross-CPU requests: the one interface lower layers (pvops' TLB
// shootdown, mm, base's spinlocks) use to make another CPU do something.
// Declared here, in base/, so those layers can call it without looking up
// the stack; the delivery is registered from above at boot (arch/smp
// installs its Delivery: natively an IPI through the local APIC, under Xen
// PV an event channel bound to the target vCPU). Until then, and on the
// host, this is one CPU that sends nothing.
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

// How requests reach other CPUs: what the layer that brings the CPUs up
// registers (install). Held by value, so each call below is one indirect
// call through memory, as a direct call costs.
struct Delivery {
  unsigned (*this_cpu_id)();
  unsigned (*cpus_online)();
  bool (*online)(unsigned cpu);
  bool (*send)(unsigned cpu, Ipi kind);
  void (*poll)();
};

extern Delivery g_delivery;

// Replaces the one-CPU delivery (at the start of either boot entry).
void install(const Delivery& delivery);

// A machine with one CPU, said once at boot before the first process (no
// lock held, no request pending): from then on this_cpu_id() is 0 without
// asking the delivery, locks take no tickets (base/lib/spinlock.h) and a
// flush has no other CPU to reach, so one CPU pays no SMP bookkeeping.
extern bool g_one_cpu;
inline bool one_cpu() { return g_one_cpu; }
void set_one_cpu();

// This CPU's dense id (0 is the boot CPU); per-CPU data exists from early boot.
inline unsigned this_cpu_id() { return g_one_cpu ? 0 : g_delivery.this_cpu_id(); }
// How many CPUs are online (1 until the APs report in).
inline unsigned cpus_online() { return g_delivery.cpus_online(); }
// Whether `cpu` is online.
inline bool online(unsigned cpu) { return g_delivery.online(cpu); }

// The handlers, kept here so a layer may register one before the delivery
// is installed; the delivery's poll runs handler(kind) for each kind taken.
extern Handler g_handlers[static_cast<unsigned>(Ipi::kCount)];
inline void set_handler(Ipi kind, Handler h) {
  __atomic_store_n(&g_handlers[static_cast<unsigned>(kind)], h, __ATOMIC_RELEASE);
}
inline Handler handler(Ipi kind) { return __atomic_load_n(&g_handlers[static_cast<unsigned>(kind)], __ATOMIC_ACQUIRE); }

// False if the platform could not send it (the hypercall or the APIC
// refused); the caller reports that, never waits for an answer then.
inline bool send(unsigned cpu, Ipi kind) { return g_delivery.send(cpu, kind); }
inline void poll() { g_delivery.poll(); }

}  // namespace pvk::xcpu
