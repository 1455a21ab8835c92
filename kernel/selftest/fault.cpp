// selftest=fault: a deliberate wild access. The run must end with the
// register dump, a symbolised backtrace and a failing status — not a hang
// or a triple fault. The boot test asserts exactly that.
#include <stdint.h>

#include "base/console/console.h"
#include "kernel/selftest/selftest.h"

namespace pvk {

// Low user-half address, never mapped in the kernel's tables. Kept in a
// volatile so the compiler cannot reason about the access.
static volatile uint64_t g_wild_address = 0xf00;

[[gnu::noinline]] static void selftest_fault_touch(volatile uint64_t* p) { *p = 0xdead; }

bool selftest_fault() {
  kprintf("selftest fault: writing to an unmapped address\n");
  selftest_fault_touch(reinterpret_cast<volatile uint64_t*>(g_wild_address));
  return false;  // not reached: the fault ends the boot
}

}  // namespace pvk
