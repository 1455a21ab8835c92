// Boot-time choice of the MMU backend: the platform says which backends can
// work here, the boot parameters say which one the user wants.
#pragma once
#include "base/arch/platform.h"
#include "kernel/params/boot_params.h"
#include "pvops/auto_choice.h"

namespace pvk {

// Installs the backend in g_mmu, or explains in one line why the request
// cannot be honoured on this platform.
ErrorOr<void, ParamError> select_mmu_backend(const Platform& platform, const BootParams& params);

// What the backend needs once the kernel's tables exist: mmu=auto calibrates
// its thresholds (an auto_calibration record says what it measured).
ErrorOr<void> finish_mmu_backend(const BootParams& params, Pfn kernel_root, uint64_t (*ticks_to_ns)(uint64_t));
// mmu=auto's thresholds after finish_mmu_backend (zero for other backends).
extern AutoThresholds g_auto_thresholds;

}  // namespace pvk
