// The kernel's virtual address layout, shared by C++ and assembly.
//
//   0x0000000000000000 .. 0x00007fffffffffff  user space
//   0xffff888000000000 ..                     physmap: all RAM, 4 KiB pages
//   0xffffc90000000000 ..                     kernel scratch mappings (selftests, vmalloc-like)
//   0xffffffff80000000 ..                     the kernel image (linked here, loaded at 1 MiB)
//
// 0xffff800000000000 .. 0xffff87ffffffffff is reserved for Xen in PV guests,
// which is why the physmap starts where Linux's does.
#pragma once

#define PVK_KERNEL_VMA 0xffffffff80000000
#define PVK_KERNEL_LOAD 0x100000
#define PVK_PHYSMAP_BASE 0xffff888000000000
#define PVK_SCRATCH_BASE 0xffffc90000000000
/* The early (boot-time) physmap covers the first 4 GiB with 2 MiB pages. */
#define PVK_EARLY_PHYSMAP_GIB 4
