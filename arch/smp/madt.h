// Which CPUs the firmware describes: ACPI's RSDP -> XSDT (or RSDT) -> MADT,
// reduced to the local APIC ids of the enabled processors and the LAPIC's
// physical address. Pure parsing over a window onto physical memory, so
// the host tests can feed it synthetic tables (tests/host/madt_test.cpp);
// the native entry reads the real ones while the early 4 GiB map is live.
#pragma once
#include "base/lib/error_or.h"
#include "arch/smp/percpu.h"

namespace pvk::smp {

// Reads `len` bytes of physical memory at `paddr`; null when they are not
// reachable (the parser then gives up with EFAULT, never reads past).
struct PhysWindow {
  const uint8_t* (*map)(void* ctx, uint64_t paddr, uint64_t len);
  void* ctx;
};

struct MadtCpus {
  uint64_t lapic_base = 0;        // MADT's field, or its 64-bit override entry
  uint32_t apic_ids[kMaxCpus] = {};  // enabled processors, in table order
  unsigned count = 0;
  unsigned disabled = 0;  // entries not enabled (absent, or hot-pluggable and not there at boot)
  unsigned beyond_max = 0;  // enabled ones past kMaxCpus (not started)
};

// EINVAL: a signature, checksum or length that does not hold; ENOENT: no
// MADT among the tables; EFAULT: the window refused a read.
ErrorOr<MadtCpus> parse_madt_cpus(uint64_t rsdp_paddr, const PhysWindow& mem);

}  // namespace pvk::smp
