// SYS_pvk_cpa: seed 002's CPA path as a benchmark user code can run. The
// kernel maps `pages` fresh pages write-back in a scratch range of its own
// half, times set_memory_wc and then set_memory_wb over them (the range walk
// through pvops: pte_attrs' encoding, one lazy-MMU section each), unmaps
// and frees them, and reports the two times.
#pragma once
#include "base/lib/error_or.h"

namespace pvk {

inline constexpr uint64_t kMaxCpaPages = 4096;

struct CpaTiming {
  uint64_t wc_ns = 0;  // set_memory_wc over the range
  uint64_t wb_ns = 0;  // set_memory_wb back
};

// EINVAL for 0 or more than kMaxCpaPages pages; ENOMEM if the frames or
// tables are not there (nothing is left allocated); EPERM if the hypervisor
// refuses the memory type (a Xen domU without I/O access).
ErrorOr<CpaTiming> time_cpa_cycle(uint64_t pages);

}  // namespace pvk
