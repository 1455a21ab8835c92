// Xen PV environment pieces shared between its files.
#pragma once
#include "hypercalls/xen_abi.h"

namespace pvk::pv {

const trap_info* trap_table();  // the virtual IDT every vCPU gets (ends with address 0)
shared_info* shared_info_page();

// The boot vCPU's PerCpu and kernel GS base (at the PV entry).
void init_boot_cpu();
// Once the kernel's tables are live: every other vCPU of the domain is
// started (VCPUOP_initialise + VCPUOP_up) and parks. One line per vCPU
// that does not come up; the boot goes on.
void start_secondary_cpus();

}  // namespace pvk::pv
