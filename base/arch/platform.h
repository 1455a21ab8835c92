// What differs between running natively and as a Xen PV guest, outside the
// MMU (which is pvops' business): how to print, how to stop, where a fault's
// address is found. One instance per environment (arch/native, arch/pv),
// chosen by the entry point that booted us — XTF's split, so every other
// source builds once for both.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/lib/error_or.h"

namespace pvk {

enum class ExitStatus { Pass, Fail };
struct TrapFrame;

struct Platform {
  const char* name;  // "native" or "xen": the value records carry as "platform"
  const char* role;  // "native", or under Xen "dom0" (initial domain) / "domU"
  void (*console_write)(const char* s, size_t n);
  // Never returns; GCC takes [[noreturn]] on a function pointer, clang (the
  // host fuzzers that include this header) does not.
#if defined(__clang__)
  void (*shutdown)(ExitStatus status);
#else
  [[noreturn]] void (*shutdown)(ExitStatus status);
#endif
  uint64_t (*fault_address)();  // CR2 natively, vcpu_info's cr2 under Xen
  bool (*handle_event)();       // Xen event upcall (true: a timer tick); null natively
  void (*kernel_space_ready)(); // after the kernel's own page tables are live; may be null
  uint64_t tsc_khz;             // set by the platform's calibration at boot

  // Processes.
  uint16_t user_cs, user_ss;                   // selectors of a user-mode frame
  void (*set_kernel_stack)(uint64_t top);      // where traps from user mode land
  void (*start_timer)(uint64_t period_ns);     // periodic preemption tick
  void (*timer_ack)();                         // end of a timer interrupt (EOI)
  bool (*from_user)(const TrapFrame& f);  // did this trap come from user mode?
  // The user FS base (TLS) of the thread about to run: IA32_FS_BASE natively,
  // HYPERVISOR_set_segment_base(SEGBASE_FS) under Xen. The caller passes a
  // user address; a non-canonical one is refused here too, never written
  // (wrmsr of one faults in the kernel), and Xen's refusal comes back.
  ErrorOr<void> (*set_user_fs_base)(uint64_t base);

  // Supervisor-mode protections in force (native only: a PV kernel runs in
  // ring 3 and keeps user mode out of its mappings with a separate root).
  bool smep = false;
  bool smap = false;

  // SMP (set by the entry code; null where not provided, i.e. one CPU).
  // This CPU's interrupts off, returning the state to restore: natively
  // RFLAGS.IF (pushf; cli), under Xen the vCPU's event upcall mask.
  uint64_t (*irq_save)() = nullptr;
  void (*irq_restore)(uint64_t saved) = nullptr;
  // Interrupts `cpu` with the cross-CPU vector (natively a fixed IPI through
  // the local APIC, under Xen its IPI event channel); false if refused.
  bool (*send_ipi)(unsigned cpu) = nullptr;
  // Waits, interrupts enabled, until an interrupt (event) arrives and has
  // been handled; returns with them off again (natively sti; hlt; cli,
  // under Xen SCHEDOP_block). Called with interrupts off, so a wake-up that
  // arrives between the caller's last look and the wait is not lost.
  void (*idle_halt)() = nullptr;
  // End of the cross-CPU vector's interrupt (natively the local APIC's
  // EOI); null where IPIs arrive as events (Xen: handle_event runs them).
  void (*ipi_ack)() = nullptr;
  // Whether CPUs waiting for the kernel lock halt until kicked after a
  // short spin, or only spin. Both platforms halt: under TCG a spinning
  // vCPU is a host thread taking time from the lock holder's.
  bool halt_lock_waiters = false;
  // Loads the user's %gs selector (the kernel's GS base untouched):
  // natively swapgs around the load, under Xen PV SEGBASE_GS_USER_SEL.
  void (*load_user_gs)(uint16_t sel) = nullptr;
  // This CPU leaves its idle loop for a process: its tick must run (under
  // Xen an idle vCPU lets its one-shot lapse, see platform_pv.cpp). May be null.
  void (*timer_resume)() = nullptr;
  // Starts this (secondary) CPU's preemption tick at start_timer's period.
  void (*start_cpu_timer)() = nullptr;
};

extern Platform* g_platform;

}  // namespace pvk
