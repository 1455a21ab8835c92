// Boot parameters: parsed here and nowhere else (docs/boot-parameters.md lists them).
// The parser is pure (no kernel services) so host tests exercise it; which
// values the running platform can honour is decided at boot, not here.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/boot_info.h"  // kMaxCmdline
#include "base/lib/error_or.h"
#include "pvops/mmu_ops.h"

namespace pvk {

// mmu=: one value per row of pvops/backends/backends.inc, in its order, after
// Default (not given: the platform decides).
enum class MmuBackend : uint8_t {
  Default,
#define PVK_BACKEND(id, name, platform, faults, params, role, weight, make, finish) id,
#include "pvops/backends/backends.inc"
#undef PVK_BACKEND
};
enum class Switch : uint8_t { Off, On };
// shootdown=: how a Xen PV guest reaches other vCPUs' TLBs (Default: the
// hypercall under Xen; natively only IPIs exist, and shootdown=hypercall is
// refused at boot).
enum class Shootdown : uint8_t { Default, Hypercall, Ipi };

// Fault injection (fail=): which operation fails, and how often. The
// injection points live in the hypercall layer and the frame allocator.
enum class FailKind : uint8_t { MmuUpdate, MmuextOp, FrameAlloc, Count };
struct FailRate { uint32_t num = 0; uint32_t den = 0; };  // den == 0: never
const char* fail_kind_name(FailKind k);

// mmu='s word for b ("default" for Default).
const char* backend_name(MmuBackend b);

enum class SchedCpus : uint8_t { Default, All, Boot };
// file_map=: how exec and mmap map a file's pages (mm/source_fault.cpp).
enum class FileMap : uint8_t { Eager, Demand };

struct BootParams {
  MmuBackend mmu = MmuBackend::Default;
  PteAccess pte = PteAccess::Attrs;
  Switch pvpatch = Switch::On;
  uint32_t batch = 32;  // entries per flush of the batched queue (Linux uses 32)
  // mmu=auto: entries of one L1 table an operation must store for auto to
  // unhook the table; 0 (not given) = calibrate at boot.
  uint32_t auto_threshold = 0;
  Switch zero_page = Switch::On;
  Switch pgd_cache = Switch::On;
  Switch ptshare = Switch::Off;  // fork shares L1 tables; mprotect works at L2 where it can
  FileMap file_map = FileMap::Eager;
  uint32_t fault_around = 16;  // file_map=demand: pages a read fault maps (a power of two)
  // sched_cpus=all|boot: which CPUs run processes (not given: all natively,
  // the boot vCPU under Xen: kernel/main.cpp decides).
  SchedCpus sched_cpus = SchedCpus::Default;
  Shootdown shootdown = Shootdown::Default;
  char selftest[64] = {};  // comma-separated list; empty = none
  char bench[256] = {};
  char init[64] = {};
  // init_args=A,B,...: init's arguments, one per item (proctest: the
  // sub-tests to run). Only with init=.
  char init_args[128] = {};
  FailRate fail[static_cast<size_t>(FailKind::Count)];
  uint64_t fail_seed = 1;
};

inline constexpr uint32_t kMaxBatch = 512;
// bench= runs the driver with one argument per item; the kernel's argv for
// it holds this many.
inline constexpr unsigned kMaxBenchItems = 32;

// Boot parameters for some backends only: those whose row in
// pvops/backends/backends.inc lists the parameter. Given with another
// backend (field non-zero), the boot is refused (kernel/boot/select.cpp).
struct BackendOnlyParam {
  const char* key;
  uint32_t BootParams::*field;  // 0: not given
};
inline constexpr BackendOnlyParam kBackendOnlyParams[] = {{"auto_threshold", &BootParams::auto_threshold}};

// Why a boot is refused over its parameters: one printable line starting
// "pvk: " that names the parameter and the accepted values. Empty is "no
// error" (ErrorOr's default); every refusal has text.
struct ParamError {
  char message[256] = {};
  bool is_error() const { return message[0] != 0; }
};

// A ParamError whose message is format(fmt, ...), cut to its buffer.
ParamError param_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Parses a kernel command line of space-separated key=value words. Unknown
// keys, malformed values, missing '=', repeated keys, a value or a line
// longer than its limit and init= with bench= are errors: nothing is ever
// cut or ignored silently.
ErrorOr<void, ParamError> parse_boot_params(const char* cmdline, BootParams& out);

}  // namespace pvk
