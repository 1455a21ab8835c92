// The call sites of pvops verbs (see pvops/call/pvop.h for how code calls a
// verb). In the kernel image every call is an indirect call through the
// verb's slot in g_mmu, emitted by an asm block that also records the site
// (where, which slot, how many bytes) into the section .pvop_sites — the
// assembler builds the table, as Linux's .parainstructions, so there is no
// hand-kept list. With pvpatch=on the boot rewrites each site into a direct
// call to the selected backend's function or, for the trivial verbs
// (pte_flags' mask, native pte_val/pte_pfn/make_pte), into the instructions
// themselves (pvops/call/pvpatch.h); sites of those verbs carry padding so the
// inline form fits.
//
// Kept apart from pvop.h because the shared walk (pvops/walk/) needs the
// flag-read site, and the compiled-in native image builds its verbs from
// the walk.
#pragma once
#include <stddef.h>

#include <type_traits>
#include <utility>

#include "pvops/mmu_ops.h"

namespace pvk {

// One site, as the asm below lays it out. Relative address, so the table
// needs no relocation.
struct PvopSite {
  int32_t at;           // the site's address minus this field's address
  uint16_t slot;        // offsetof(MmuOps, verb): the verb it calls; kFlagBitsSite or'd in for such a site
  uint8_t length;       // bytes from the site to the instruction after it
  uint8_t call_length;  // bytes of the indirect call at its start
  uint8_t* address() const { return reinterpret_cast<uint8_t*>(const_cast<int32_t*>(&at)) + at; }
  // A flag-bits site of pte_flags (pte_flag_bits_site below); one that
  // also loads the entry (pte_flag_bits_at) has kLoadSite too.
  static constexpr uint16_t kFlagBitsSite = 0x8000;
  static constexpr uint16_t kLoadSite = 0x4000;
  // A native-body site (pvops/call/pvop.h, PVOP): a 5-byte jump to the
  // verb's ordinary site beside it, over the native backend's body.
  static constexpr uint16_t kNativeBody = 0x2000;
  // A copy switch (pick_copy, pvops/call/pvop.h): a 5-byte jump from a
  // function's native copy to its generic one; the low bits name a
  // VerbGroup, not a slot.
  static constexpr uint16_t kCopySwitch = 0x1000;
  // With kNativeBody: the body is the native backend's pte=flags function.
  // With kCopySwitch: an encoding switch (pick_encoding_copy): a jump from a
  // function's pte=attrs copy to its pte=flags copy; the low bits name the
  // g_mmu slot whose native pte=flags function the flags copy inlines.
  static constexpr uint16_t kFlagsEncoding = 0x0800;
  unsigned verb() const { return slot & ~(kFlagBitsSite | kLoadSite | kNativeBody | kCopySwitch | kFlagsEncoding); }
  bool flag_bits() const { return slot & kFlagBitsSite; }
  bool loads() const { return slot & kLoadSite; }
  bool native_body() const { return slot & kNativeBody; }
  bool copy_switch() const { return slot & kCopySwitch; }
  bool flags_encoding() const { return slot & kFlagsEncoding; }
  bool encoding_switch() const { return copy_switch() && flags_encoding(); }
};
static_assert(sizeof(PvopSite) == 8);
static_assert(sizeof(MmuOps) <= PvopSite::kFlagsEncoding, "a site's slot field holds a g_mmu offset below its kind bits");

// The verbs a function compiled twice calls (pick_copy, pvops/call/pvop.h):
// its native copy may run only when every one of them is the native
// backend's own function.
enum class VerbGroup : uint16_t {
  // LazyMmuSection's open, drain and finish (pvops/tlb/lazy_mmu_section.cpp).
  LazySection = 0,
};
struct VerbGroupSlots {
  size_t slots[8];
  unsigned count;
};
constexpr VerbGroupSlots slots_of(VerbGroup g) {
  switch (g) {
    case VerbGroup::LazySection:
      return {{offsetof(MmuOps, enter_lazy_mmu), offsetof(MmuOps, flush_lazy_mmu), offsetof(MmuOps, leave_lazy_mmu),
               offsetof(MmuOps, flush_tlb_one), offsetof(MmuOps, flush_tlb_all), offsetof(MmuOps, release_pt_page)},
              6};
  }
  return {{}, 0};
}
constexpr bool valid_group(unsigned g) { return g == static_cast<unsigned>(VerbGroup::LazySection); }

// Bytes reserved at the sites of the verbs that may become inline code: the
// longest inline form (pte_flags: movabs of the mask, and) is 13 bytes.
inline constexpr uint8_t kInlineRoom = 13;
// Bytes of a flag-bits site: its direct call to the thunk, or the one
// 5-byte instruction that replaces it.
inline constexpr uint8_t kFlagBitsRoom = 5;

constexpr bool may_inline(size_t slot) {
  return slot == offsetof(MmuOps, pte_flags) || slot == offsetof(MmuOps, pte_val) ||
         slot == offsetof(MmuOps, pte_pfn) || slot == offsetof(MmuOps, make_pte) ||
         slot == offsetof(MmuOps, enter_lazy_mmu) || slot == offsetof(MmuOps, flush_tlb_one);
}

#if !PVK_BUILTIN_NATIVE  // no table, no sites
namespace pvop_detail {

// "Light" verbs: one entry in, one value out, the result a function of the
// entry alone (the flag mask; the entry's value or frame read back, under
// Xen through the machine-to-physical table, which pvk never changes). Their
// sites promise the compiler more than a C call would — only rax changes,
// and no memory — so a hot loop keeps its registers across them, as Linux's
// callee-save pvops do. A backend's C function cannot keep that promise,
// so such a site calls a thunk that saves every caller-saved register
// around the call through g_mmu (pvops/call/pvpatch.cpp), and patching either
// inlines the verb (which touches rax alone) or keeps the thunk.
constexpr bool is_light(size_t slot) {
  return slot == offsetof(MmuOps, pte_flags) || slot == offsetof(MmuOps, pte_val) ||
         slot == offsetof(MmuOps, pte_pfn);
}

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

// The SysV x86-64 calling convention for what verbs take and return: values
// of at most 16 bytes that are trivially copyable travel in one or two
// integer registers as their memory image; references as pointers. The
// static_asserts keep any verb from needing more.
template <typename T>
constexpr unsigned regs_of() {
  if constexpr (std::is_void_v<T>) {
    return 0;
  } else if constexpr (std::is_reference_v<T>) {
    return 1;
  } else {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T> && sizeof(T) <= 16,
                  "a pvops verb's parameter must travel in registers");
    return (sizeof(T) + 7) / 8;
  }
}

// An argument's register image, zero-extended: word `word` of it (one or
// two, see regs_of). Built in registers, never through a buffer in memory,
// so a site costs the moves its arguments need and nothing else.
template <typename T>
[[gnu::always_inline]] inline uint64_t word_of(std::remove_reference_t<T>& v, unsigned word) {
  if constexpr (std::is_reference_v<T>) {
    return reinterpret_cast<uint64_t>(&v);
  } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    return static_cast<uint64_t>(v);
  } else if constexpr (sizeof(T) == 8) {
    return __builtin_bit_cast(uint64_t, v);
  } else if constexpr (sizeof(T) == 16) {
    struct Two {
      uint64_t w[2];
    };
    return __builtin_bit_cast(Two, v).w[word];
  } else {
    uint64_t w[2] = {};
    __builtin_memcpy(w, &v, sizeof v);
    return w[word];
  }
}

template <typename T, unsigned At>
[[gnu::always_inline]] inline void place(uint64_t* regs, std::remove_reference_t<T>& v) {
  regs[At] = word_of<T>(v, 0);
  if constexpr (regs_of<T>() == 2) regs[At + 1] = word_of<T>(v, 1);
}

// The first register each of the arguments A... takes.
template <typename... A>
struct RegLayout {
  static constexpr unsigned count = (regs_of<A>() + ... + 0);
  static constexpr auto first = [] {
    struct {
      unsigned at[sizeof...(A) + 1];
    } r{};
    unsigned n = 0, i = 0;
    ((r.at[i++] = n, n += regs_of<A>()), ...);
    (void)n, (void)i;
    return r;
  }();
};

}  // namespace pvop_detail
}  // namespace pvk

extern "C" void pvk_pvop_thunk_pte_flags();
extern "C" void pvk_pvop_thunk_pte_flags_at();  // takes the entry in rax (a flag-bits load site)
extern "C" void pvk_pvop_thunk_pte_val();
extern "C" void pvk_pvop_thunk_pte_pfn();

// The record of one call site in .pvop_sites (PvopSite: where the site
// starts, the verb's slot, the site's and its call's lengths), which every
// site's asm ends with, and the light sites' call padded to the room an
// inline replacement may take.
#define PVK_PVOP_SITE_RECORD                                                  \
  ".pushsection .pvop_sites, \"a?\"\n\t.balign 4\n\t"                       \
  ".long 771b - .\n\t.short %c[slot]\n\t.byte 773b - 771b, 772b - 771b\n\t" \
  ".popsection"
// A jump site (a native-body site, a copy or encoding switch): a 5-byte
// jmp to `label`, recorded with `bits` (its slot or group and kind), which
// pvpatch=on may turn into a 5-byte nop. For asm goto.
#define PVK_PVOP_JUMP_SITE(bits, label)                                                           \
  asm goto("771:\n\t.byte 0xe9\n\t.long %l[" #label "] - . - 4\n772:\n773:\n\t" PVK_PVOP_SITE_RECORD \
           :                                                                                        \
           : [slot] "i"(bits)                                                                       \
           :                                                                                        \
           : label)
#define PVK_PVOP_LIGHT_CALL \
  "771:\n\tcall %P[thunk]\n772:\n\t.nops %c[room] - (772b - 771b)\n773:\n\t" PVK_PVOP_SITE_RECORD

namespace pvk {
namespace pvop_detail {

// The thunk a light verb's sites call.
constexpr void (*thunk_for(size_t slot))() {
  return slot == offsetof(MmuOps, pte_flags) ? &pvk_pvop_thunk_pte_flags
         : slot == offsetof(MmuOps, pte_val) ? &pvk_pvop_thunk_pte_val
         : slot == offsetof(MmuOps, pte_pfn) ? &pvk_pvop_thunk_pte_pfn
                                              : nullptr;
}

template <size_t Slot, typename Fn>
struct Site;

template <size_t Slot, typename R, typename... A>
struct Site<Slot, R (*)(A...)> {
  static_assert((regs_of<A>() + ... + 0) <= 6, "a pvops verb's arguments must fit the six argument registers");
  static_assert(regs_of<R>() <= 2, "a pvops verb's result must come back in rax:rdx");

  [[gnu::always_inline]] R operator()(A... a) const {
    if constexpr (is_light(Slot)) {
      static_assert(sizeof...(A) == 1 && regs_of<R>() == 1, "a light verb takes one entry and returns one value");
      const uint64_t in = (word_of<A>(a, 0), ...);
      uint64_t rax;
      asm(PVK_PVOP_LIGHT_CALL
          : "=a"(rax)
          : "D"(in), [thunk] "i"(thunk_for(Slot)), [slot] "i"(Slot), [room] "i"(kInlineRoom)
          : "cc");
      return __builtin_bit_cast(R, rax);
    } else {
      return call(a...);
    }
  }

  // A verb with the C calling convention: every caller-saved register and
  // memory may change.
  [[gnu::always_inline]] static R call(A... a) {
    return call_regs(std::index_sequence_for<A...>{}, a...);
  }

  template <size_t... I>
  [[gnu::always_inline]] static R call_regs(std::index_sequence<I...>, A... a) {
    using L = RegLayout<A...>;
    constexpr unsigned N = L::count;
    // The argument registers in order; only the first N carry arguments
    // (the rest are outputs only: the callee may clobber them, and no
    // instruction is spent giving them a value).
    uint64_t in[6];
    (place<A, L::first.at[I]>(in, a), ...);
    register uint64_t rdi asm("rdi");
    register uint64_t rsi asm("rsi");
    register uint64_t rdx asm("rdx");
    register uint64_t rcx asm("rcx");
    register uint64_t r8 asm("r8");
    register uint64_t r9 asm("r9");
    register uint64_t rax asm("rax");
    if constexpr (N > 0) rdi = in[0];
    if constexpr (N > 1) rsi = in[1];
    if constexpr (N > 2) rdx = in[2];
    if constexpr (N > 3) rcx = in[3];
    if constexpr (N > 4) r8 = in[4];
    if constexpr (N > 5) r9 = in[5];
    auto* slot = reinterpret_cast<R (**)(A...)>(reinterpret_cast<char*>(&g_mmu) + Slot);
    // The callee may clobber every caller-saved register; the six argument
    // registers are in-out operands (or outputs) for that reason, r10/r11
    // clobbers.
#define PVK_PVOP_CALL_ASM(c1, c2, c3, c4, c5, c6)                                                         \
  asm volatile("771:\n\tcall *%[fn]\n772:\n\t"                                                           \
               ".if %c[room]\n\t.nops %c[room] - (772b - 771b)\n\t.endif\n773:\n\t" PVK_PVOP_SITE_RECORD  \
               : "=r"(rax), c1(rdi), c2(rsi), c3(rdx), c4(rcx), c5(r8), c6(r9)                            \
               : [fn] "m"(*slot), [slot] "i"(Slot), [room] "i"(may_inline(Slot) ? kInlineRoom : 0)        \
               : "r10", "r11", "memory", "cc")
    if constexpr (N == 0) PVK_PVOP_CALL_ASM("=r", "=r", "=r", "=r", "=r", "=r");
    else if constexpr (N == 1) PVK_PVOP_CALL_ASM("+r", "=r", "=r", "=r", "=r", "=r");
    else if constexpr (N == 2) PVK_PVOP_CALL_ASM("+r", "+r", "=r", "=r", "=r", "=r");
    else if constexpr (N == 3) PVK_PVOP_CALL_ASM("+r", "+r", "+r", "=r", "=r", "=r");
    else if constexpr (N == 4) PVK_PVOP_CALL_ASM("+r", "+r", "+r", "+r", "=r", "=r");
    else if constexpr (N == 5) PVK_PVOP_CALL_ASM("+r", "+r", "+r", "+r", "+r", "=r");
    else PVK_PVOP_CALL_ASM("+r", "+r", "+r", "+r", "+r", "+r");
#undef PVK_PVOP_CALL_ASM
    if constexpr (!std::is_void_v<R>) {
      union Out {
        Out() {}
        uint64_t regs[2];
        R value;
      } out;
      out.regs[0] = rax;
      out.regs[1] = rdx;
      return out.value;
    }
  }
};

}  // namespace pvop_detail
#endif
}  // namespace pvk

#define PVOP_SITE(verb) \
  (::pvk::pvop_detail::Site<offsetof(::pvk::MmuOps, verb), decltype(::pvk::MmuOps{}.verb)>{})

namespace pvk {

// A flag read under pte=flags: a pte_flags site in the kernel image; the
// architectural mask where there is no table (compiled-in native, which
// has no pte=flags) — the flags are the same bits everywhere.
[[gnu::always_inline]] inline PteFlags pte_flags_site(Pte e) {
#if PVK_BUILTIN_NATIVE
  return PteFlags{e.raw & pte_bit::FlagMask};
#elif defined(PVK_KERNEL)
  return PVOP_SITE(pte_flags)(e);
#else
  return g_mmu.pte_flags(e);
#endif
}

// A flag test under pte=flags: a value whose flag bits (pte_bit::FlagMask)
// are pte_flags(e)'s, the other bits unspecified — the caller masks it with
// the bits it tests (mapped, present, has). A site of its own kind
// (PvopSite::kFlagBitsSite): where pte_flags is the architectural mask,
// pvpatch=on makes it one instruction (rax = rdi: the entry is its own flag
// image) where a pte_flags site takes two (movabs of the mask, and), so a
// walk's per-leaf test costs what pte=attrs' inline test costs plus that
// move. Unpatched it calls pte_flags' thunk as a pte_flags site does.
[[gnu::always_inline]] inline uint64_t pte_flag_bits_site(Pte e) {
#if PVK_BUILTIN_NATIVE
  return e.raw;
#elif defined(PVK_KERNEL)
  uint64_t rax;
  asm(PVK_PVOP_LIGHT_CALL
      : "=a"(rax)
      : "D"(e.raw), [thunk] "i"(&pvk_pvop_thunk_pte_flags),
        [slot] "i"(offsetof(MmuOps, pte_flags) | PvopSite::kFlagBitsSite), [room] "i"(kFlagBitsRoom)
      : "cc");
  return rax;
#else
  return g_mmu.pte_flags(e).bits;
#endif
}

// pte_flag_bits_site of the entry at slot, the load part of the site: its
// compiled form loads the entry into rax and calls the thunk that takes it
// there (8 bytes); patched where pte_flags is the mask it is the one 8-byte
// load (mov 0x0(%base,%riz,1),%rax) — the load the walk makes anyway under
// pte=attrs, so a leaf's flag test costs no instruction more than there.
[[gnu::always_inline]] inline uint64_t pte_flag_bits_at(const Pte* slot) {
#if PVK_BUILTIN_NATIVE
  return slot->raw;
#elif defined(PVK_KERNEL)
  uint64_t rax;
  // The slot in any of rax, rbx, rcx, rdx ("Q": their loads are 3 bytes,
  // site_code's load_base_ok), so a loop keeps it where it lives.
  asm("771:\n\tmov (%[p]), %%rax\n\tcall %P[thunk]\n772:\n773:\n\t" PVK_PVOP_SITE_RECORD
      : "=a"(rax)
      : [p] "Q"(slot), "m"(*slot), [thunk] "i"(&pvk_pvop_thunk_pte_flags_at),
        [slot] "i"(offsetof(MmuOps, pte_flags) | PvopSite::kFlagBitsSite | PvopSite::kLoadSite)
      : "cc");
  return rax;
#else
  return g_mmu.pte_flags(*slot).bits;
#endif
}

}  // namespace pvk
