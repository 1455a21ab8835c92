// The end of every boot: the done record, then a shutdown whose status the
// host can see (docs/design.md, console protocol).
#pragma once
#include "base/arch/platform.h"

namespace pvk {

[[noreturn]] void finish(ExitStatus status, const char* reason);

// Nanoseconds from TSC ticks, with the calibrated frequency.
uint64_t tsc_to_ns(uint64_t ticks);

}  // namespace pvk
