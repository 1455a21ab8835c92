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
  [[noreturn]] void (*shutdown)(ExitStatus status);
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
};

extern Platform* g_platform;

}  // namespace pvk
