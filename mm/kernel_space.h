// Building the kernel's own address space through pvops at boot: the image
// with per-section permissions and the physmap over all RAM.
#pragma once
#include "base/boot_info.h"
#include "base/lib/error_or.h"

namespace pvk {

// Sets up the frame allocator from the boot memory map (its bitmap is
// carved out of the first RAM above the reserved ranges).
ErrorOr<void> init_frames(const BootInfo& info);

// Builds a fresh root mapping the kernel and the physmap, and loads it.
ErrorOr<Pfn> build_kernel_space(const BootInfo& info);

// The kernel's root, shared by every address space's upper half.
Pfn kernel_root();

// Maps `pages` pages of device memory from physical address `phys` (page
// aligned, outside RAM: the local APIC) into the kernel half, uncached
// (UC-, set_memory_uc), at the physmap address RAM would have there, and
// returns that address. For devices the kernel touches at run time on any
// CPU; once, at boot, before other CPUs run kernel code.
ErrorOr<VirtAddr> map_kernel_io(uint64_t phys, uint64_t pages);

}  // namespace pvk
