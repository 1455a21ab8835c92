#include "host_compat.h"  // first: see there

#include "kernel_space_host.h"

#include "mm/kernel_space.h"

namespace pvk {
namespace {
Pfn g_host_kernel_root{};
}

namespace test {
void set_kernel_root(Pfn root) { g_host_kernel_root = root; }
}  // namespace test

Pfn kernel_root() { return g_host_kernel_root; }

}  // namespace pvk
