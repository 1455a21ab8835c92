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
#include "pvops/backends/native_ops.h"
#define PVOP(verb)                                                                               \
  (::pvk::pvop_detail::NativeFirst<offsetof(::pvk::MmuOps, verb), decltype(::pvk::MmuOps{}.verb), \
                                   decltype([](const ::pvk::MmuOps& o) { return o.verb; })>{})
#else
#define PVOP(verb) (::pvk::g_mmu.verb)
#endif

#if !PVK_BUILTIN_NATIVE && defined(PVK_KERNEL)
namespace pvk::pvop_detail {

// The verbs whose sites carry the native backend's body beside the call:
// the ones a fault, a small mprotect or a fork-exit-wait pays for on every
// call, whose native bodies are short. There a patched call still cost
// what the compiled-in image saves by inlining — the call, the
// caller-saved registers it clobbers, and the result the compiler cannot
// see (an ErrorOr<void> the native verb always returns as success is still
// tested) — 11 to 34 instructions per entry. Bigger range verbs (fork,
// teardown, map, unmap) stay calls: their bodies would bloat every caller.
constexpr bool native_first(size_t slot) {
  return slot == offsetof(MmuOps, enter_lazy_mmu) || slot == offsetof(MmuOps, flush_lazy_mmu) ||
         slot == offsetof(MmuOps, leave_lazy_mmu) || slot == offsetof(MmuOps, flush_tlb_one) ||
         slot == offsetof(MmuOps, flush_tlb_all) || slot == offsetof(MmuOps, load_root) ||
         slot == offsetof(MmuOps, set_pte) || slot == offsetof(MmuOps, set_pmd) ||
         slot == offsetof(MmuOps, set_pud) || slot == offsetof(MmuOps, set_p4d) ||
         slot == offsetof(MmuOps, ptep_modify_prot_start) || slot == offsetof(MmuOps, ptep_modify_prot_commit) ||
         slot == offsetof(MmuOps, alloc_pt_page) || slot == offsetof(MmuOps, release_pt_page) ||
         slot == offsetof(MmuOps, range.lookup) || slot == offsetof(MmuOps, range.remap) ||
         slot == offsetof(MmuOps, range.protect);
}

// Native: reads the verb's slot out of a table (the native one, a
// compile-time constant, so the call it gives is direct and inlinable).
template <size_t Slot, typename Fn, typename Native>
struct NativeFirst;

// A native-body site (PvopSite::kNativeBody): a 5-byte jump over the
// native backend's own function — called through a compile-time constant,
// so the compiler inlines it as in the compiled-in image — to the verb's
// ordinary site (an indirect call, patched as any other). pvpatch=on turns
// the jump into one 5-byte nop when the selected backend's function for
// the slot is that very native function (pvops/call/pvpatch.cpp); anywhere
// else the jump stays, and the call costs one instruction more.
template <size_t Slot, typename R, typename... A, typename Native>
struct NativeFirst<Slot, R (*)(A...), Native> {
  [[gnu::always_inline]] R operator()(A... a) const {
    if constexpr (!native_first(Slot)) {
      return Site<Slot, R (*)(A...)>{}(a...);
    } else {
      constexpr R (*native_verb)(A...) = Native{}(native::kNativeOps);
      asm goto("771:\n\t.byte 0xe9\n\t.long %l[generic] - . - 4\n772:\n773:\n\t" PVK_PVOP_SITE_RECORD
               :
               : [slot] "i"(Slot | PvopSite::kNativeBody)
               :
               : generic);
      return native_verb(a...);
      // Cold: the compiler keeps the native path's registers as the
      // compiled-in image does and pays for the call's clobbers on this side.
    generic:
      __attribute__((cold));
      return Site<Slot, R (*)(A...)>::call(a...);
    }
  }
};

}  // namespace pvk::pvop_detail
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
