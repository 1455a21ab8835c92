// How the kernel calls a pvops verb: PVOP(verb)(args...), e.g.
// PVOP(set_pte)(slot, v) or PVOP(range.protect)(root, va, n, set, clear, s).
//
//  - kernel image: a recorded call site through g_mmu, which pvpatch=on
//    rewrites at boot (pvops/call/pvop_site.h, pvops/call/pvpatch.h);
//  - compiled-in native image (PVK_BUILTIN_NATIVE): no table at all —
//    PVOP(verb) names the native backend's function, which the compiler
//    calls directly or inlines;
//  - host unit tests: a plain call through g_mmu, so a fake backend can
//    stand in.
#pragma once
#include "pvops/call/pvop_site.h"

#if PVK_BUILTIN_NATIVE
#include "pvops/backends/native_ops.h"
#define PVOP(verb) (::pvk::native::kBuiltinOps.verb)
#elif defined(PVK_KERNEL)
#define PVOP(verb) PVOP_SITE(verb)
#else
#define PVOP(verb) (::pvk::g_mmu.verb)
#endif

namespace pvk {

// pte=: set at boot with the backend (install_backend, pvops/backends/registry.h).
extern PteAccess g_pte_access;

// A flag test outside the walk (mm's fault path): under pte=flags it goes
// through pte_flags like every flag read; under pte=attrs it is the inline
// mask (and only memory-type decisions call pte_attrs).
inline bool pte_has(Pte e, uint64_t bit) {
#if !PVK_BUILTIN_NATIVE
  if (g_pte_access == PteAccess::Flags) return (pte_flag_bits_site(e) & bit) == bit;  // bit: flag bits
#endif
  return (e.raw & bit) == bit;
}

// The backend's name, for records ("native" in the compiled-in image too;
// the image variant is recorded beside it).
inline const char* mmu_name() {
#if PVK_BUILTIN_NATIVE
  return native::kBuiltinOps.name;
#else
  return g_mmu.name;
#endif
}

}  // namespace pvk
