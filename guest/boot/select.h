// Boot-time choice of the MMU backend: the platform says which backends can
// work here, the boot parameters say which one the user wants.
#pragma once
#include <stddef.h>

#include "base/arch/platform.h"
#include "guest/params/boot_params.h"

namespace pvk {

// Installs the backend in g_mmu, or explains in one line (into why) why the
// request cannot be honoured on this platform.
bool select_mmu_backend(const Platform& platform, const BootParams& params, char* why, size_t cap);

}  // namespace pvk
