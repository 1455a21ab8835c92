// Native SMP bring-up (ACPI MADT, INIT/SIPI), as the native entry uses it.
#pragma once
#include "hypercalls/xen_abi.h"

namespace pvk::native {

// At the PVH entry, on the early page tables (they reach the ACPI tables
// and the local APIC): the boot CPU's PerCpu and GS base, and the CPUs the
// MADT lists. A missing or malformed MADT leaves one CPU and says why.
void init_boot_cpu(const hvm_start_info& si);

// Once the kernel's own tables are live: start every AP the MADT listed;
// each parks. One line per AP that does not come up; the boot goes on.
void start_secondary_cpus();

}  // namespace pvk::native
