// The kernel's MmuSink: sends a queue as one mmu_update, one mmuext_op, or
// a multicall carrying both.
#pragma once
#include "hypercalls/mmu_queue.h"

namespace pvk::xen {
MmuSink hypercall_sink();
}
