// Boot parameters: parsed here and nowhere else (DESIGN.md lists them).
// The parser is pure (no kernel services) so host tests exercise it; which
// values the running platform can honour is decided at boot, not here.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "pvops/mmu_ops.h"

namespace pvk {

enum class MmuBackend : uint8_t { Default, Native, Batched, Direct, Wrpt };
enum class Switch : uint8_t { Off, On };

const char* backend_name(MmuBackend b);

struct BootParams {
  MmuBackend mmu = MmuBackend::Default;
  PteAccess pte = PteAccess::Attrs;
  Switch pvpatch = Switch::Off;
  uint32_t batch = 32;  // entries per flush of the batched queue (Linux uses 32)
  Switch zero_page = Switch::On;
  Switch pgd_cache = Switch::On;
  char selftest[64] = {};  // comma-separated list; empty = none
  char bench[256] = {};
  char init[64] = {};
};

inline constexpr uint32_t kMaxBatch = 512;

struct ParseResult {
  bool ok = true;
  char error[192] = {};  // one line, naming the parameter and accepted values
};

// Parses a kernel command line of space-separated key=value words. Unknown
// keys, malformed values, missing '=' and repeated keys are errors.
ParseResult parse_boot_params(const char* cmdline, BootParams& out);

}  // namespace pvk
