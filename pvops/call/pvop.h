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

namespace pvk {
// The two copies of a function compiled twice (pick_copy below).
enum class PvopCopy : uint8_t { Native, Generic };
}  // namespace pvk

// PVOP_ENC(encoding, verb): a verb's call inside one copy of a function
// compiled once per encoding (pick_encoding_copy below): its native-body
// site carries the native backend's function for that encoding.
#if PVK_BUILTIN_NATIVE || !defined(PVK_KERNEL)
#define PVOP_ENC(encoding, verb) PVOP(verb)
#else
#define PVOP_ENC(encoding, verb)                                                                    \
  (::pvk::pvop_detail::NativeFirst<offsetof(::pvk::MmuOps, verb), decltype(::pvk::MmuOps{}.verb), \
                                   decltype([](const ::pvk::MmuOps& o) { return o.verb; }), encoding>{})
#endif

// PVOP_IN(copy, verb): a verb's call inside one copy of a function compiled
// twice. The native copy calls the native backend's function directly
// (inlinable, as in the compiled-in image); the generic copy the verb's
// ordinary site (patched to a direct call to the selected backend's).
#if PVK_BUILTIN_NATIVE || !defined(PVK_KERNEL)
#define PVOP_IN(copy, verb) PVOP(verb)
#else
#define PVOP_IN(copy, verb)                                                                                       \
  (::pvk::pvop_detail::InCopy<copy, offsetof(::pvk::MmuOps, verb), decltype(::pvk::MmuOps{}.verb),                \
                              decltype([](const ::pvk::MmuOps& o) { return o.verb; })>{})
#endif

#if !PVK_BUILTIN_NATIVE && defined(PVK_KERNEL)
namespace pvk::pvop_detail {

template <PvopCopy C, size_t Slot, typename Fn, typename Native>
struct InCopy;

template <PvopCopy C, size_t Slot, typename R, typename... A, typename Native>
struct InCopy<C, Slot, R (*)(A...), Native> {
  [[gnu::always_inline]] R operator()(A... a) const {
    if constexpr (C == PvopCopy::Native) {
      constexpr R (*native_verb)(A...) = Native{}(native::kNativeOps);
      return native_verb(a...);
    } else {
      return Site<Slot, R (*)(A...)>{}(a...);
    }
  }
};

// Native: reads the verb's slot out of a table (the native one, a
// compile-time constant, so the call it gives is direct and inlinable).
template <size_t Slot, typename Fn, typename Native, PteAccess E = PteAccess::Attrs>
struct NativeFirst;

// A native-body site (PvopSite::kNativeBody): a 5-byte jump over the
// native backend's own function — called through a compile-time constant,
// so the compiler inlines it as in the compiled-in image — to the verb's
// ordinary site (an indirect call, patched as any other). pvpatch=on turns
// the jump into one 5-byte nop when the selected backend's function for
// the slot is that very native function (pvops/call/pvpatch.cpp); anywhere
// else the jump stays, and the call costs one instruction more.
//
// E names the encoding whose native function the body is: pte=attrs's
// (kNativeOps) everywhere but in a function's pte=flags copy.
template <size_t Slot, typename R, typename... A, typename Native, PteAccess E>
struct NativeFirst<Slot, R (*)(A...), Native, E> {
  [[gnu::always_inline]] R operator()(A... a) const {
    if constexpr (!native_first(Slot)) {
      return Site<Slot, R (*)(A...)>{}(a...);
    } else {
      constexpr R (*native_verb)(A...) =
          Native{}(E == PteAccess::Flags ? native::kNativeFlagsOps : native::kNativeOps);
      PVK_PVOP_JUMP_SITE(Slot | PvopSite::kNativeBody | (E == PteAccess::Flags ? PvopSite::kFlagsEncoding : 0),
                         generic);
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

// A function whose every verb belongs to `Group` (VerbGroup,
// pvops/call/pvop_site.h), compiled twice — once with PVOP_IN(PvopCopy::Native,
// ...) and once with PVOP_IN(PvopCopy::Generic, ...) — runs one of them
// through a copy switch: a 5-byte jump to the generic copy that pvpatch=on
// turns into a nop when every verb of the group is the native backend's
// own function. A native-body site per verb (PVOP) leaves the compiler a
// cold generic path in the middle of the function, whose registers the hot
// path pays for; one switch in front leaves it the compiled-in image's
// whole function. The compiled-in image runs the native copy, host tests
// the generic one (a fake backend stands in there).
template <VerbGroup Group, typename NativeCopy, typename GenericCopy>
[[gnu::always_inline]] inline auto pick_copy(NativeCopy native_copy, GenericCopy generic_copy) {
#if PVK_BUILTIN_NATIVE
  (void)generic_copy;
  return native_copy();
#elif defined(PVK_KERNEL)
  PVK_PVOP_JUMP_SITE(static_cast<uint16_t>(Group) | PvopSite::kCopySwitch, generic);
  return native_copy();
  // Not cold: under Xen the generic copy is the one that runs, and GCC
  // optimises what only a cold path reaches for size.
generic:
  return generic_copy();
#else
  (void)native_copy;
  return generic_copy();
#endif
}

// A function compiled once per encoding, PVOP_ENC(PteAccess::Attrs, verb)
// in one copy and PVOP_ENC(PteAccess::Flags, verb) in the other, runs one
// of them through an encoding switch: a 5-byte jump to the pte=flags copy
// that pvpatch=on turns into a nop unless the selected backend's function
// for `Slot` is the native pte=flags one. The native body a site inlines is
// one encoding's; the other's, reached through the site's generic path, is
// an out-of-line call the compiled-in image never pays. One copy per
// encoding gives pte=flags its inlined body without a second body in the
// pte=attrs copy, whose registers would pay for it. Pass each copy as a
// call to a function of its own: inlined here, one copy's frame would be
// paid on the other's path too.
template <size_t Slot, typename AttrsCopy, typename FlagsCopy>
[[gnu::always_inline]] inline auto pick_encoding_copy(AttrsCopy attrs_copy, FlagsCopy flags_copy) {
#if PVK_BUILTIN_NATIVE || !defined(PVK_KERNEL)
  (void)flags_copy;
  return attrs_copy();
#else
  PVK_PVOP_JUMP_SITE(static_cast<uint16_t>(Slot) | PvopSite::kCopySwitch | PvopSite::kFlagsEncoding, flags);
  return attrs_copy();
flags:
  __attribute__((cold));
  return flags_copy();
#endif
}

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
