// Per-CPU data: one PerCpu per CPU, found through the GS base (natively
// IA32_GS_BASE, under Xen PV the kernel GS base Xen swaps in on every entry
// to the guest kernel). Set on every CPU, the boot CPU included, before it
// runs anything that may ask which CPU it is.
//
// Natively every way into the kernel from ring 3 swaps the user's GS base
// out (swapgs) and every way back swaps it in again (arch/native/
// syscall_entry.S, trap_entry.S); entries that may interrupt the kernel
// between the two (NMI, #DB, #DF, #MC, and any entry from ring 0) decide
// from the GS base MSR itself. Under Xen PV, Xen keeps the kernel's and
// the user's GS bases apart and switches them on every guest kernel/user
// transition. So in kernel code this_cpu() is always this CPU's PerCpu,
// whatever user mode loaded into %gs; check_entry_state (arch/
// traps.cpp) proves it on every entry (check_this_cpu below).
#pragma once
#include <stdint.h>

namespace pvk {

namespace smp {
// CPUs pvk will bring up at most; more are counted and left alone.
inline constexpr unsigned kMaxCpus = 16;
}  // namespace smp

// A cache line's alignment: one CPU's counts never share a line with
// another's, and the size is a power of two (128), so is_percpu's
// remainder is a mask (the system call entry runs it on every call).
struct alignas(64) PerCpu {
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
  // Natively: the kernel stack the `syscall` entry switches to (the
  // running process's, as TSS.RSP0) and where it keeps the user's %rsp
  // meanwhile (syscall_entry.S reads both through %gs).
  uint64_t syscall_rsp;
  uint64_t user_rsp;
  // Entries into the kernel whose GS base check_this_cpu() verified.
  uint64_t entry_checks;
};
static_assert(__builtin_offsetof(PerCpu, self) == 0, "this_cpu() reads gs:0");
// The entry stubs' offsets (arch/native/*.S spell them out).
static_assert(__builtin_offsetof(PerCpu, syscall_rsp) == 56 && __builtin_offsetof(PerCpu, user_rsp) == 64,
              "syscall_entry.S's PERCPU_SYSCALL_RSP / PERCPU_USER_RSP");
static_assert(sizeof(PerCpu) == 128, "trap_entry.S's PERCPU_AREA_BYTES is 16 * 128");

// Every CPU's PerCpu, in one array (index = PerCpu::id): the only values a
// kernel GS base ever takes. The native paranoid entry (trap_entry.S)
// recognises the kernel's GS base by its falling inside this array.
extern "C" PerCpu pvk_percpus[smp::kMaxCpus];
static_assert(sizeof pvk_percpus == 16 * 128, "trap_entry.S's PERCPU_AREA_BYTES is sizeof pvk_percpus");

inline PerCpu* this_cpu() {
  PerCpu* p;
  asm volatile("mov %%gs:0, %0" : "=r"(p));
  return p;
}

namespace smp {

// Whether p is one of pvk_percpus' entries (exactly, not inside one).
inline bool is_percpu(const void* p) {
  const auto a = reinterpret_cast<uint64_t>(p), base = reinterpret_cast<uint64_t>(pvk_percpus);
  return a - base < sizeof pvk_percpus && (a - base) % sizeof(PerCpu) == 0;
}

// Where the platform reads this CPU's active GS base without using it
// (natively the IA32_GS_BASE MSR, in debug builds); null where that is not
// cheap (release images; Xen PV, where rdmsr traps into Xen), and then
// check_this_cpu reads gs:0 and checks the PerCpu it names: a base no
// PerCpu sits at either fails that check or faults in the kernel (user
// bases are 0, and page 0 is never mapped), so the kernel stops either way.
extern uint64_t (*g_read_gs_base)();

// Called on every entry into the kernel (check_entry_state): stops the
// kernel unless the GS base is one of pvk_percpus (with g_read_gs_base:
// read before anything is read through it) and gs:0 points at that same
// PerCpu, whose self pointer is itself. Counts the entry in it and returns
// it (null before the boot CPU's PerCpu exists).
PerCpu* check_this_cpu();

// check_this_cpu's common case inline, for the system call entry (every
// call runs it): no MSR to read (release images), and gs:0 one of
// pvk_percpus naming itself. Anything else goes through check_this_cpu,
// which reads the MSR or stops the kernel; the check is the same.
inline PerCpu* check_this_cpu_inline() {
  if (__builtin_expect(g_read_gs_base != nullptr, 0)) return check_this_cpu();  // the MSR before gs:0
  PerCpu* p = this_cpu();
  if (__builtin_expect(!is_percpu(p) || p->self != p, 0)) return check_this_cpu();
  ++p->entry_checks;
  return p;
}

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
