// The environment-neutral half of starting the other CPUs: the wait for
// each to report in (bounded: a CPU that does not come up is one line, and
// the boot goes on with the ones that did) and the `smp` record.
#pragma once
#include "arch/smp/percpu.h"

namespace pvk::smp {

// How long a CPU gets from its start to reporting in, and to take a wake-up.
inline constexpr uint64_t kOnlineTimeoutMs = 5000;
inline constexpr uint64_t kWakeupTimeoutMs = 1000;

// One bring-up pass; the destructor emits {"event":"smp",...} with the
// CPUs found and online and the time the pass took.
class Bringup {
 public:
  explicit Bringup(const char* how);  // how: "native" (INIT/SIPI) or "xen" (VCPUOP_up)
  Bringup(const Bringup&) = delete;
  Bringup& operator=(const Bringup&) = delete;
  ~Bringup();

  // Waits for `pc` to report in; false (and a line saying so) on timeout.
  bool wait_online(PerCpu& pc);
  // After a wake-up was sent to `pc`: waits (bounded) until it has taken
  // it; false and one line if it does not. The record counts the answers.
  bool wait_wakeup(PerCpu& pc);

  // One line: CPU `id` (hardware id `hw_id`) did not come up, and why.
  void fail(unsigned id, uint32_t hw_id, const char* why);

 private:
  const char* how_;
  uint64_t start_tsc_;
  unsigned failed_ = 0;
  unsigned wakeups_sent_ = 0, wakeups_taken_ = 0;
};

// Called by an AP once it runs on the kernel's tables with its own
// descriptors and GS base; the boot CPU's wait_online sees it.
void report_online(PerCpu& self);

}  // namespace pvk::smp
