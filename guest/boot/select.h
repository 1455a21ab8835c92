// Boot-time choice of the MMU backend: the platform says which backends can
// work here, the boot parameters say which one the user wants.
#pragma once
#include "base/arch/platform.h"
#include "guest/params/boot_params.h"

namespace pvk {

// Installs the backend in g_mmu, or explains in one line why the request
// cannot be honoured on this platform.
ErrorOr<void, ParamError> select_mmu_backend(const Platform& platform, const BootParams& params);

}  // namespace pvk
