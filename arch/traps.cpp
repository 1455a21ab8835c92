// Exception dispatch shared by every environment. Faults with an .extable
// fixup resume there; everything else is a kernel bug, reported with the
// registers and a symbolised backtrace before a failing shutdown.
#include <stddef.h>

#include "base/arch/platform.h"
#include "base/arch/probe.h"
#include "base/counters.h"
#include "arch/symbols.h"
#include "arch/trap_frame.h"
#include "arch/upcalls.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "arch/finish.h"
#include "arch/smp/cross_cpu_entry.h"
#include "arch/smp/percpu.h"

namespace pvk {
namespace {

const char* vector_name(uint64_t v) {
  static const char* const kNames[] = {
      "#DE divide error", "#DB debug", "NMI", "#BP breakpoint", "#OF overflow", "#BR bound range",
      "#UD invalid opcode", "#NM device not available", "#DF double fault", "coprocessor overrun",
      "#TS invalid TSS", "#NP segment not present", "#SS stack fault", "#GP general protection",
      "#PF page fault", "reserved", "#MF x87 error", "#AC alignment check", "#MC machine check",
      "#XM SIMD error", "#VE virtualization", "#CP control protection"};
  if (v == vec::XenFailsafe) return "Xen failsafe callback";
  if (v == vec::XenEvent) return "Xen event upcall";
  return v < sizeof kNames / sizeof kNames[0] ? kNames[v] : "exception";
}

[[noreturn]] void report_crash(const TrapFrame& f, uint64_t fault_addr) {
  uint64_t off = 0;
  const char* sym = symbol_for(f.rip, &off);
  kprintf("\npvk: unhandled exception %lu (%s), error code 0x%lx\n", f.vector, vector_name(f.vector),
          f.error_code);
  // Under Xen the upper half of the CS slot carries the saved event mask.
  kprintf("RIP: %04lx:%016lx %s+0x%lx  RFLAGS: %016lx\n", f.cs & 0xffff, f.rip, sym ? sym : "?", off, f.rflags);
  kprintf("CR2: %016lx  RSP: %04lx:%016lx\n", fault_addr, f.ss & 0xffff, f.rsp);
  kprintf("RAX: %016lx RBX: %016lx RCX: %016lx RDX: %016lx\n", f.rax, f.rbx, f.rcx, f.rdx);
  kprintf("RSI: %016lx RDI: %016lx RBP: %016lx R8:  %016lx\n", f.rsi, f.rdi, f.rbp, f.r8);
  kprintf("R9:  %016lx R10: %016lx R11: %016lx R12: %016lx\n", f.r9, f.r10, f.r11, f.r12);
  kprintf("R13: %016lx R14: %016lx R15: %016lx\n", f.r13, f.r14, f.r15);
  print_backtrace(f.rip, f.rbp);
  Record("crash")
      .u64("vector", f.vector)
      .u64("error_code", f.error_code)
      .u64("rip", f.rip)
      .str("symbol", sym ? sym : "?")
      .u64("cr2", fault_addr);
  finish(ExitStatus::Fail, "unhandled exception");
}

// The entry stubs test the frame's CS at this offset before popping the
// registers (native_ret_to_user, xen_ret_to_user).
static_assert(offsetof(TrapFrame, cs) == 144);

// What kind of entry a trap is, for the counters the cost model prices
// (base/counters.inc): CPU exceptions (vectors below 32, from user mode or a
// kernel copy to user memory) and interrupts (ticks, IPIs, Xen's event
// upcall). Under Xen every exception the kernel sees was bounced to it by
// Xen (a fault Xen resolves itself, a ptwr emulation, never arrives).
void count_entry(const TrapFrame& f) {
  if (f.vector < 32) {
    count_event(g_cpu_counters.exception_entries);
    if (g_platform->handle_event) count_event(g_cpu_counters.xen_fault_bounces);
  } else if (f.vector != vec::XenFailsafe && f.vector != vec::CompatSyscall) {
    count_event(g_cpu_counters.interrupt_entries);
  }
}

}  // namespace

// Kernel-only (it panics), so here rather than in arch/smp/percpu.cpp,
// which the host tests link too.
namespace smp {

uint64_t (*g_read_gs_base)() = nullptr;

PerCpu* check_this_cpu() {
  // Until the boot CPU's PerCpu is filled in (the first lines of either
  // entry) no GS base is set up to check; a trap that early is a crash.
  if (!pvk_percpus[0].self) return nullptr;
  if (g_read_gs_base) {
    const uint64_t base = g_read_gs_base();
    if (!is_percpu(reinterpret_cast<void*>(base)))
      panic("kernel entered with GS base 0x%lx, not a PerCpu (a path into the kernel missed swapgs)", base);
    PerCpu* p = this_cpu();
    if (reinterpret_cast<uint64_t>(p) != base || p->self != p)
      panic("GS base 0x%lx holds self %p: PerCpu corrupt", base, static_cast<void*>(p));
    ++p->entry_checks;
    return p;
  }
  PerCpu* p = this_cpu();
  if (!is_percpu(p) || p->self != p) panic("kernel entered with gs:0 = %p, not a PerCpu", static_cast<void*>(p));
  ++p->entry_checks;
  return p;
}

}  // namespace smp

namespace {
[[gnu::noinline, gnu::cold]] void entry_flags_bad(const TrapFrame& frame, uint64_t flags) {
  kprintf("\npvk: kernel entered with user-chosen RFLAGS 0x%lx (vector %lu): an entry stub skipped KERNEL_ENTRY\n",
          flags, frame.vector);
  report_crash(frame, 0);
}

// Inline in trap_dispatch, every trap's first step (a call was 19
// instructions of a Xen PV fault's).
[[gnu::always_inline]] inline void entry_state_checks(const TrapFrame& frame) {
  uint64_t flags;
  asm volatile("pushfq; popq %0" : "=r"(flags));
  if (__builtin_expect(flags & (rflags::DF | rflags::AC | rflags::TF | rflags::NT), 0)) entry_flags_bad(frame, flags);
  // The GS base is this CPU's PerCpu whatever user mode left in %gs: the
  // entry stubs swapped it in (natively) or Xen did (PV). Stops the kernel
  // otherwise, so a missed swapgs fails every boot test at its first entry.
  // The common case inline, as the system call entry has it; before the
  // boot CPU's PerCpu exists (a trap that early is a crash) no GS base is
  // set up to read through.
  if (__builtin_expect(pvk_percpus[0].self != nullptr, 1)) smp::check_this_cpu_inline();
}
}  // namespace

void check_entry_state(const TrapFrame& frame) { entry_state_checks(frame); }

// Traps from user mode go up to the kernel (trap_from_user: it takes the
// kernel lock, or for a page fault first tries under its address space's
// own); the cross-CPU vector and Xen's event upcall run their handlers here,
// without the kernel lock, and only a tick from user mode or a signal kick
// goes up.
extern "C" void trap_dispatch(TrapFrame* frame) {
  entry_state_checks(*frame);
  count_entry(*frame);
  const bool from_user = g_platform->from_user && g_platform->from_user(*frame);
  if (frame->vector == vec::XenEvent && g_platform->handle_event) {
    const bool tick = g_platform->handle_event();  // runs cross-CPU requests too
    if (from_user && tick) {
      trap_from_user(*frame, 0);  // its way back delivers a kick's signal too
    } else if (from_user) {
      return_after_kick(*frame);
    }
    return;
  }
  if (g_platform->ipi_ack && frame->vector == vec::CrossCpu) {
    g_platform->ipi_ack();
    smp::cross_cpu_interrupt();
    if (from_user) return_after_kick(*frame);
    return;
  }
  if (g_platform->ipi_ack && frame->vector == vec::Spurious) return;  // the APIC wants no EOI for it
  // 32-bit `syscall`/`sysenter` from user mode: the kernel kills the caller
  // (trap_from_user). From the kernel: a crash.
  if (frame->vector == vec::CompatSyscall && !from_user) report_crash(*frame, 0);
  const uint64_t fault_addr = frame->vector == vec::PageFault ? g_platform->fault_address() : 0;
  if (from_user) {
    trap_from_user(*frame, fault_addr);
    return;
  }
  if (frame->vector == vec::Timer) {  // in the kernel: nothing to preempt
    g_platform->timer_ack();
    return;
  }
  if (frame->vector == vec::Debug && (frame->rflags & rflags::TF)) {
    // User mode's trap flag carried into the kernel by an entry that does
    // not clear it (Xen's bounce to a callback) stops after one instruction
    // of the stub; the prologue clears it for good, so just resume without it.
    frame->rflags &= ~rflags::TF;
    return;
  }
  // The kernel touching user memory (a copy) demand-pages it like a user access.
  if (frame->vector == vec::PageFault && kernel_fault_on_user_memory(*frame, fault_addr)) return;
  // (#UD too: an XSETBV Xen refuses, arch/fpu/fpu_ops.S.)
  if (frame->vector == vec::PageFault || frame->vector == vec::GeneralProtection ||
      frame->vector == vec::InvalidOpcode) {
    if (uint64_t fixup = extable_fixup(frame->rip)) {
      frame->rip = fixup;
      return;
    }
  }
  report_crash(*frame, fault_addr);
}

}  // namespace pvk
