// The MMU backends as units: each is one row of backends.inc (its name, its
// platform, how its faults lock, the boot parameters that tune it, its
// constructor and its finish hook) and one file here that holds its verbs
// and its state. mmu= parsing, the boot-time choice (kernel/boot/select.cpp),
// the refusals and the boot record read the rows through this header, so
// nothing above pvops/ names a backend or includes one.
#pragma once
#include "base/lib/error_or.h"
#include "pvops/backends/auto_choice.h"
#include "pvops/mmu_ops.h"

namespace pvk {

// Where a backend can run.
enum class BackendPlatform : uint8_t { Native, XenPv };

// Whether the backend lets user page faults run without the kernel lock.
//
// mm serialises the faults of one address space with that space's lock; that
// is enough when everything a fault touches below mm is the space's own or
// per CPU (native; Xen's direct, batched and wrpt: each CPU has its own
// lazy-MMU state and queue, pvops/backends/xen_common.cpp). The unhook and
// auto backends keep one kernel-wide set of unhooked L1 tables and a global
// "tables are unhooked now" count that LazyMmuSection checks on every open:
// a fault in one space must not run while another CPU's section has tables
// of another space out of Xen's hands. For them faults take the kernel lock,
// as every other entry does.
enum class FaultLocking : uint8_t { SpaceLock, KernelLock };

// What the host tools do with a backend by default (backends.inc, "role");
// in the kernel only Default matters: the platform's backend without mmu=.
enum class BackendRole : uint8_t { Default, Full, Focused };

// What a constructor is given: the boot parameters a backend may read.
struct BackendSetup {
  PteAccess pte = PteAccess::Attrs;
  unsigned batch = 32;              // entries of the queue of updates
  unsigned auto_threshold = 0;      // 0: calibrate at boot
  ShootdownMode shootdown = ShootdownMode::Hypercall;  // Xen: how other vCPUs' TLBs are reached
};

// Why a constructor could not make its backend on this machine (the
// hypervisor refused what it needs): the refusal names what and the error.
struct BackendRefusal {
  const char* what = nullptr;
  Errno error = Errno::Ok;
  bool is_error() const { return what != nullptr; }
};

// What a backend reports once finished, for the boot record: zero where it
// does not apply (only mmu=auto has thresholds).
struct BackendFacts {
  AutoThresholds thresholds;
};

struct Backend {
  const char* name;
  BackendPlatform platform;
  FaultLocking fault_locking;
  const char* params;  // space-separated boot parameters that tune it
  BackendRole role;
  // Returns the backend's table (its name is filled in from the row) and
  // sets up its state; called once, before anything maps a page.
  ErrorOr<MmuOps, BackendRefusal> (*make)(const BackendSetup& setup);
  // Runs once the kernel's page tables exist (mmu=auto calibrates there).
  ErrorOr<BackendFacts> (*finish)(Pfn kernel_root, uint64_t (*ticks_to_ns)(uint64_t));

  // Whether `params` lists key.
  bool takes(const char* key) const;
};

// The rows of backends.inc, in order: MmuBackend's value is 1 + the index.
unsigned backend_count();
const Backend& backend_at(unsigned index);
// The platform's backend when mmu= is not given (its one Default row).
const Backend& default_backend(BackendPlatform platform);
// Why a backend of this platform cannot run on the other one (for the
// refusal: "mmu=NAME <why> (accepted here: ...)").
const char* platform_requirement(BackendPlatform platform);
// "a|b|c": the names of the backends on a platform, or of those that take a
// parameter, for refusals; cut to cap bytes.
void list_backends_on(BackendPlatform platform, char* out, size_t cap);
void list_backends_taking(const char* key, char* out, size_t cap);

// Makes the backend and installs its table in g_mmu (the compiled-in native
// image has no table: only the backend's state is set up), with pte= in
// g_pte_access.
ErrorOr<void, BackendRefusal> install_backend(const Backend& backend, const BackendSetup& setup);
// The installed backend's finish hook; its facts are kept for the boot record.
ErrorOr<void> finish_backend(Pfn kernel_root, uint64_t (*ticks_to_ns)(uint64_t));
const BackendFacts& backend_facts();

namespace detail {
extern const Backend* g_installed_backend;
}
// The installed backend's row (read on every user fault: one load).
inline const Backend& installed_backend() { return *detail::g_installed_backend; }

}  // namespace pvk
