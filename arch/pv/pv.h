// Xen PV environment pieces shared between its files.
#pragma once
#include "hypercalls/xen_abi.h"

// The Xen callbacks (arch/pv/trap_entry.S): what every vCPU registers.
extern "C" {
void xen_event_callback();
void xen_failsafe_callback();
void xen_syscall_callback();
void xen_compat_syscall_callback();
}

namespace pvk::pv {

// A callback registration (events masked on entry), for `entry`.
inline callback_register callback(uint16_t type, void (*entry)()) {
  return {type, CALLBACKF_mask_events, reinterpret_cast<xen_callback_t>(entry)};
}
// 32-bit user code (Xen's GDT has FLAT_USER_CS32) may `syscall` or
// `sysenter`: both land in a stub that kills the caller, never in the
// 64-bit syscall path with truncated registers. The two registrations a
// vCPU needs for that, which its VCPUOP_initialise context does not carry.
struct CompatSyscallCallbacks {
  callback_register syscall32 = callback(CALLBACKTYPE_syscall32, &xen_compat_syscall_callback);
  callback_register sysenter = callback(CALLBACKTYPE_sysenter, &xen_compat_syscall_callback);
};

const trap_info* trap_table();  // the virtual IDT every vCPU gets (ends with address 0)
shared_info* shared_info_page();

// The boot vCPU's PerCpu and kernel GS base (at the PV entry).
void init_boot_cpu();
// Once the kernel's tables are live: every other vCPU of the domain is
// started (VCPUOP_initialise + VCPUOP_up) and parks. One line per vCPU
// that does not come up; the boot goes on.
void start_secondary_cpus();

}  // namespace pvk::pv
