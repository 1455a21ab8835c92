// What an entry point (native PVH or Xen PV) learned about the machine,
// in environment-neutral terms, for kernel_main (arch/upcalls.h).
#pragma once
#include <stddef.h>

#include "base/arch/platform.h"
#include "base/lib/types.h"

namespace pvk {

// The longest command line accepted, in bytes (the boot parameter parser
// refuses a longer one). The platforms copy it into a 1024-byte buffer;
// Xen hands over at most 1023 bytes (start_info.cmd_line, cut silently by
// Xen itself), so a line that fills those 1023 may have been cut and is
// refused like a longer one: never run with a changed parameter.
inline constexpr size_t kMaxCmdline = 1022;

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

  // Frames reachable through g_physmap_offset before the kernel's own tables
  // are live (natively the early 4 GiB map; under Xen the initial mapping).
  uint64_t early_physmap_pfns = 0;
  // Page tables the loader built for us: mapped read-only in the physmap
  // (Xen would refuse otherwise) and never handed out. Under Xen the boot
  // root is also released (unpinned) once the kernel's root is loaded.
  MemRange boot_tables = {};
  bool release_boot_root = false;
  Pfn boot_root{};

  // The root filesystem archive the loader placed in RAM (a PVH module
  // natively, dom0's ramdisk under Xen): its pseudo-physical byte address
  // and length; 0 bytes when there is none. Its frames are also reserved
  // until the kernel has unpacked it and given them back (kernel/fs/).
  uint64_t initrd_paddr = 0;
  uint64_t initrd_bytes = 0;
};

}  // namespace pvk
