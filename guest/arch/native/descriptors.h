#pragma once
#include <stdint.h>

namespace pvk::native {

inline constexpr uint16_t kKernelCs = 0x08;
inline constexpr uint16_t kKernelDs = 0x10;
inline constexpr uint16_t kUserDs = 0x20 | 3;
inline constexpr uint16_t kUserCs = 0x28 | 3;
inline constexpr uint16_t kTss = 0x30;

void load_descriptors();
void set_kernel_stack(uint64_t rsp0);  // TSS.RSP0: the stack for traps from ring 3

}  // namespace pvk::native
