#pragma once
#include <stdint.h>

namespace pvk::native {

inline constexpr uint16_t kKernelCs = 0x08;
inline constexpr uint16_t kKernelDs = 0x10;
inline constexpr uint16_t kUserDs = 0x20 | 3;
inline constexpr uint16_t kUserCs = 0x28 | 3;
inline constexpr uint16_t kTss = 0x30;

void load_descriptors();  // the boot CPU's GDT, TSS and the (shared) IDT
// An AP's own GDT, TSS and IDT, built in `storage` (kApDescriptorBytes,
// 16-byte aligned, kept for good). The IDT is the boot CPU's, except that
// NMI goes to `nmi_handler` (the parked AP's wake-up).
inline constexpr uint64_t kApDescriptorBytes = 1024;
void load_ap_descriptors(unsigned cpu_id, void* storage, uint64_t double_fault_stack_top, void (*nmi_handler)());
void set_kernel_stack(uint64_t rsp0);  // this CPU's TSS.RSP0: the stack for traps from ring 3

}  // namespace pvk::native
