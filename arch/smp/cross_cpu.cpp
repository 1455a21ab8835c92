// The delivery of base/arch/cross_cpu.h (installed at the start of either
// boot entry) on top of the platform's IPI (g_platform->send_ipi:
// natively a fixed-vector IPI through the local APIC, under Xen PV an event
// on the target vCPU's IPI channel). Each CPU has a word of pending kinds:
// send() sets the kind's bit, then interrupts the target; the target's IPI
// entry (or poll(), when it spins with interrupts off) takes the whole word
// at once and runs the handler of each kind in it. Sends that arrive before
// the target looks merge into one call, as the contract allows.
#include "base/arch/cpu.h"
#include "base/arch/cross_cpu.h"

#include "base/arch/platform.h"
#include "base/counters.h"
#include "arch/smp/cross_cpu_entry.h"
#include "arch/smp/percpu.h"

namespace pvk::xcpu {
namespace {

// Per target CPU: bit k set = kind k sent and not yet handled.
uint32_t g_pending[smp::kMaxCpus] = {};
static_assert(static_cast<unsigned>(Ipi::kCount) <= 32);

uint32_t bit(Ipi kind) { return uint32_t{1} << static_cast<unsigned>(kind); }

unsigned smp_this_cpu_id() {
  const PerCpu* pc = this_cpu();
  return pc ? pc->id : 0;
}

unsigned smp_cpus_online() { return smp::counts().online(); }

bool smp_online(unsigned cpu) { return cpu < smp::kMaxCpus && smp::cpu(cpu).online; }

void smp_poll() {
  const PerCpu* pc = this_cpu();
  if (!pc || !pc->self) return;
  uint32_t kinds = __atomic_exchange_n(&g_pending[pc->id], 0, __ATOMIC_ACQ_REL);
  while (kinds) {
    const unsigned k = static_cast<unsigned>(__builtin_ctz(kinds));
    kinds &= kinds - 1;
    if (Handler h = handler(static_cast<Ipi>(k))) h();
  }
}

bool smp_send(unsigned cpu, Ipi kind) {
  if (!smp_online(cpu) || !g_platform->send_ipi) return false;
  __atomic_or_fetch(&g_pending[cpu], bit(kind), __ATOMIC_ACQ_REL);
  if (cpu == smp_this_cpu_id()) {
    smp_poll();  // no interrupt to oneself: run it now
    return true;
  }
  count_event(g_cpu_counters.ipi_sends);
  return g_platform->send_ipi(cpu);
}

}  // namespace
}  // namespace pvk::xcpu

namespace pvk::smp {

void install_cross_cpu() {
  xcpu::install({&xcpu::smp_this_cpu_id, &xcpu::smp_cpus_online, &xcpu::smp_online, &xcpu::smp_send, &xcpu::smp_poll});
}

void cross_cpu_interrupt() {
  if (PerCpu* pc = this_cpu()) __atomic_add_fetch(&pc->ipis_taken, 1, __ATOMIC_RELAXED);
  count_event(g_cpu_counters.ipis_taken);
  xcpu::smp_poll();
  // The sender is most likely spinning for the acknowledgement just
  // written (a shootdown). On hardware it sees it at once and a `pause` is
  // a few dozen cycles; under QEMU's single-threaded round-robin of vCPUs
  // (-icount, virtual time) the sender runs only when this vCPU gives the
  // host thread up, and `pause` does that — without it a vCPU returning
  // to a user loop that makes no system call kept the thread for the rest
  // of its slice, and a fork beside such a thread measured 3.78 ms instead
  // of 98 µs (fork_threads pages=64 threads=1, two CPUs): the other CPU's
  // loop, not the fork.
  cpu::relax();
}

}  // namespace pvk::smp
