// Per-CPU data: one PerCpu per CPU, found through the GS base (natively
// IA32_GS_BASE, under Xen PV the kernel GS base Xen swaps in on every entry
// to the guest kernel). Set on every CPU, the boot CPU included, before it
// runs anything that may ask which CPU it is.
//
// Natively pvk does not swapgs yet: user mode runs with the kernel's GS
// base and could reload GS. Until processes run on several CPUs (issue 15,
// part 2) only code that runs before user mode, or on a CPU that never ran
// user mode (the parked APs), may trust this_cpu().
#pragma once
#include <stdint.h>

namespace pvk {

namespace smp {
// CPUs pvk will bring up at most; more are counted and left alone.
inline constexpr unsigned kMaxCpus = 16;
}  // namespace smp

struct PerCpu {
  PerCpu* self;      // at offset 0: this_cpu() is one gs-relative load
  uint32_t id;       // dense: 0 is the boot CPU
  uint32_t hw_id;    // natively the local APIC id, under Xen the vCPU id
  void* current;     // the process running here; null while the CPU parks
  uint64_t kernel_stack_top;  // the stack it took at bring-up (0 on the boot CPU: boot_stack)
  uint64_t online_tsc;        // TSC when it reported in (for the bring-up record)
  uint32_t online;   // 1 once it runs on the kernel's tables with its own descriptors
  // Wake-ups: under Xen the event channel bound to this vCPU (0: none);
  // how many the CPU has taken (bring-up sends one to check the path).
  uint32_t ipi_port;
  uint32_t ipis_taken;
};
static_assert(__builtin_offsetof(PerCpu, self) == 0, "this_cpu() reads gs:0");

inline PerCpu* this_cpu() {
  PerCpu* p;
  asm volatile("mov %%gs:0, %0" : "=r"(p));
  return p;
}

namespace smp {

// The table of every CPU's PerCpu (index = PerCpu::id). Entry 0 is the
// boot CPU from the start; the others are filled in as CPUs are found.
PerCpu& cpu(unsigned id);

// Bookkeeping of bring-up: how many CPUs were found (the boot CPU
// included) and how many came online. Host-testable (no hardware).
class CpuCounts {
 public:
  void set_found(unsigned n) { found_ = n; }
  unsigned found() const { return found_; }
  // Called once per CPU that reports in; counts each id once.
  bool mark_online(unsigned id);
  unsigned online() const;

 private:
  unsigned found_ = 1;
  uint32_t online_mask_ = 1;  // the boot CPU is online by definition
  static_assert(kMaxCpus <= 32);
};

CpuCounts& counts();

}  // namespace smp
}  // namespace pvk
