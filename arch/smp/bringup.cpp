#include "arch/smp/bringup.h"

#include "base/arch/cpu.h"
#include "base/arch/platform.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "base/lib/format.h"
#include "arch/finish.h"

namespace pvk::smp {

Bringup::Bringup(const char* how) : how_(how), start_tsc_(cpu::rdtsc()) {}

Bringup::~Bringup() {
  Record r("smp");
  r.str("how", how_)
      .u64("cpus", counts().found())
      .u64("cpus_online", counts().online())
      .u64("cpus_failed", failed_)
      .u64("bringup_ns", tsc_to_ns(cpu::rdtsc() - start_tsc_));
  if (wakeups_sent_) r.u64("wakeups_sent", wakeups_sent_).u64("wakeups_taken", wakeups_taken_);
  // Per AP: how long after the pass began it reported in.
  char key[24];
  for (unsigned id = 1; id < kMaxCpus && id < counts().found(); ++id) {
    const PerCpu& pc = cpu(id);
    if (!__atomic_load_n(&pc.online, __ATOMIC_ACQUIRE)) continue;
    format(key, sizeof key, "cpu%u_ns", id);
    r.u64(key, tsc_to_ns(pc.online_tsc - start_tsc_));
  }
}

bool Bringup::wait_online(PerCpu& pc) {
  const uint64_t deadline = cpu::rdtsc() + kOnlineTimeoutMs * g_platform->tsc_khz;
  while (!__atomic_load_n(&pc.online, __ATOMIC_ACQUIRE)) {
    if (cpu::rdtsc() > deadline) {
      fail(pc.id, pc.hw_id, "did not report in within 5 s");
      return false;
    }
    cpu::relax();
  }
  counts().mark_online(pc.id);
  return true;
}

bool Bringup::wait_wakeup(PerCpu& pc) {
  ++wakeups_sent_;
  const uint64_t deadline = cpu::rdtsc() + kWakeupTimeoutMs * g_platform->tsc_khz;
  while (__atomic_load_n(&pc.ipis_taken, __ATOMIC_ACQUIRE) == 0) {
    if (cpu::rdtsc() > deadline) {
      kprintf("pvk: smp: CPU %u (hw id %u) is online but did not take a wake-up within 1 s\n", pc.id, pc.hw_id);
      return false;
    }
    cpu::relax();
  }
  ++wakeups_taken_;
  return true;
}

void Bringup::fail(unsigned id, uint32_t hw_id, const char* why) {
  ++failed_;
  kprintf("pvk: smp: CPU %u (hw id %u) not brought up: %s; going on with %u CPU(s)\n", id, hw_id, why,
          counts().online());
}

void report_online(PerCpu& self) {
  self.online_tsc = cpu::rdtsc();
  __atomic_store_n(&self.online, 1, __ATOMIC_RELEASE);
}

}  // namespace pvk::smp
