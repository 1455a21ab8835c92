// Host stand-in for the part of mm/kernel_space.cpp that address spaces
// need: kernel_root(), the root whose kernel half every new root copies.
// kernel_space.cpp itself builds the kernel's tables from a boot memory map
// and is not host-buildable; a test prepares a root of its own in the fake
// RAM (with a few kernel-half L4 entries) and registers it here.
#pragma once
#include "host_compat.h"  // first: see there

#include "base/lib/types.h"

namespace pvk::test {

// What kernel_root() returns from now on.
void set_kernel_root(Pfn root);

}  // namespace pvk::test
