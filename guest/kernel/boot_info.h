// What an entry point (native PVH or Xen PV) learned about the machine,
// in environment-neutral terms, for kernel_main.
#pragma once
#include "guest/arch/platform.h"
#include "guest/lib/types.h"

namespace pvk {

struct MemRange {
  Pfn first;
  uint64_t count;
};

struct BootInfo {
  static constexpr unsigned kMaxRanges = 64;
  const char* cmdline = "";
  MemRange ram[kMaxRanges] = {};  // usable RAM, pseudo-physical frames
  unsigned ram_ranges = 0;
  MemRange reserved[8] = {};  // frames inside RAM that must never be handed out
  unsigned reserved_ranges = 0;
  uint64_t boot_tsc = 0;  // TSC at entry, to report boot time
};

[[noreturn]] void kernel_main(Platform& platform, BootInfo& info);

}  // namespace pvk
