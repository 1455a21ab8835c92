// The scheduler's shutdown record: per CPU its switches, the processes it
// ran, its halts, IPIs, ticks, kicks and steals (kernel/proc/scheduler.cpp
// keeps the counts in CpuSched).
#include "arch/smp/percpu.h"
#include "base/arch/cross_cpu.h"
#include "base/console/record.h"
#include "base/lib/format.h"
#include "kernel/proc/process_parts.h"

namespace pvk::proc {

// Per-CPU counts at shutdown: proof of which CPUs ran processes.
void report_sched() {
  // Eight fields per CPU: more than a kilobyte past four CPUs. Shutdown
  // runs on one CPU, so one static buffer serves.
  static char storage[256 + smp::kMaxCpus * 8 * 40];
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
    per_cpu("steals", cs.steals);
  }
  r.u64("cpus", xcpu::cpus_online()).u64("cpus_ran_processes", ran).u64("switches", switches);
}

}  // namespace pvk::proc
