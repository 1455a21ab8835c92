// Whether the MMU backend lets user page faults run without the kernel lock.
//
// mm serialises the faults of one address space with that space's lock; that
// is enough when everything a fault touches below mm is the space's own or
// per CPU (native; Xen's direct, batched and wrpt: each CPU has its own
// lazy-MMU state and queue, pvops/xen_common.cpp). The unhook and auto
// backends keep one kernel-wide set of unhooked L1 tables and a global
// "tables are unhooked now" count that LazyMmuSection checks on every
// open: a fault in one space must not run while another CPU's section has
// tables of another space out of Xen's hands. For them faults take the
// kernel lock, as every other entry does.
#pragma once
#include <stdint.h>

namespace pvk {

enum class FaultLocking : uint8_t { SpaceLock, KernelLock };

// Chosen by the backend's make_*_ops at boot (pvops/globals.cpp).
extern FaultLocking g_fault_locking;

}  // namespace pvk
