// Native platform: the kernel ends the run through QEMU's isa-debug-exit
// device (port 0xf4); QEMU then exits with (value << 1) | 1.
#pragma once

#include "pvk/platform.hpp"
#include "pvk/process.hpp"

namespace pvk {

inline constexpr int native_pass_exit = 1;  // kernel wrote 0
inline constexpr int native_fail_exit = 3;  // kernel wrote 1

PlatformExit native_exit(const ProcessResult& process);

}  // namespace pvk
