// Boot-time choice of the MMU backend: the platform says which backends can
// work here, the boot parameters say which one the user wants, and the
// backends' rows (pvops/backends/registry.h) say what each one is.
#pragma once
#include "base/arch/platform.h"
#include "kernel/params/boot_params.h"
#include "pvops/backends/registry.h"

namespace pvk {

// Installs the backend in g_mmu, or explains in one line why the request
// cannot be honoured on this platform.
ErrorOr<void, ParamError> select_mmu_backend(const Platform& platform, const BootParams& params);

// What the backend needs once the kernel's tables exist (its finish hook:
// mmu=auto calibrates its thresholds, and an auto_calibration record says
// what it measured).
ErrorOr<void> finish_mmu_backend(Pfn kernel_root, uint64_t (*ticks_to_ns)(uint64_t));
// What the backend reported then, for the boot record (zero before, and for
// the backends without thresholds).
const BackendFacts& mmu_backend_facts();

}  // namespace pvk
