// The signal-mask system calls (kernel/proc/sigmask_calls.cpp).
#pragma once
#include <stdint.h>

namespace pvk {

// The call's result as rax, or false if `nr` is none of these calls.
bool signal_mask_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret);

}  // namespace pvk
