// The thunks the sites of light pvops verbs call (pvops/call/pvop_site.h,
// is_light): they keep the light sites' promise — only rax changes — for a
// backend's C function by saving every other caller-saved register around
// the call through g_mmu. Sites that pvpatch=on cannot inline keep calling
// them (Linux's callee-save pvops thunks, in the same spirit).
#include "pvops/call/pvop_site.h"

#if defined(PVK_KERNEL) && !PVK_BUILTIN_NATIVE

namespace pvk {

// Never called: its asm statements emit the thunks into .text (extended asm
// needs a function around it to name g_mmu and its slots; constants only,
// so nothing of this function's own code reaches the thunks).
[[gnu::used]] void pvop_thunks() {
#define PVK_PVOP_THUNK(verb)                                                                          \
  asm(".pushsection .text.pvop_thunks, \"ax\"\n\t"                                                    \
      ".globl pvk_pvop_thunk_" #verb "\n\t.type pvk_pvop_thunk_" #verb ", @function\n"                \
      "pvk_pvop_thunk_" #verb ":\n\t"                                                                 \
      "push %%rcx\n\tpush %%rdx\n\tpush %%rsi\n\tpush %%rdi\n\t"                                      \
      "push %%r8\n\tpush %%r9\n\tpush %%r10\n\tpush %%r11\n\t"                                        \
      "call *%P[mmu]+%c[slot](%%rip)\n\t"                                                               \
      "pop %%r11\n\tpop %%r10\n\tpop %%r9\n\tpop %%r8\n\t"                                            \
      "pop %%rdi\n\tpop %%rsi\n\tpop %%rdx\n\tpop %%rcx\n\tret\n\t"                                   \
      ".size pvk_pvop_thunk_" #verb ", . - pvk_pvop_thunk_" #verb "\n\t"                              \
      ".popsection"                                                                                   \
      :                                                                                               \
      : [mmu] "i"(&g_mmu), [slot] "i"(offsetof(MmuOps, verb)))
  static_assert(pvop_detail::is_light(offsetof(MmuOps, pte_flags)) && pvop_detail::is_light(offsetof(MmuOps, pte_val)) &&
                pvop_detail::is_light(offsetof(MmuOps, pte_pfn)));
  PVK_PVOP_THUNK(pte_flags);
  PVK_PVOP_THUNK(pte_val);
  PVK_PVOP_THUNK(pte_pfn);
#undef PVK_PVOP_THUNK
  // A flag-bits load site's (pte_flag_bits_at): the entry comes in rax.
  asm(".pushsection .text.pvop_thunks, \"ax\"\n\t"
      ".globl pvk_pvop_thunk_pte_flags_at\n\t.type pvk_pvop_thunk_pte_flags_at, @function\n"
      "pvk_pvop_thunk_pte_flags_at:\n\t"
      "push %%rcx\n\tpush %%rdx\n\tpush %%rsi\n\tpush %%rdi\n\t"
      "push %%r8\n\tpush %%r9\n\tpush %%r10\n\tpush %%r11\n\t"
      "mov %%rax, %%rdi\n\t"
      "call *%P[mmu]+%c[slot](%%rip)\n\t"
      "pop %%r11\n\tpop %%r10\n\tpop %%r9\n\tpop %%r8\n\t"
      "pop %%rdi\n\tpop %%rsi\n\tpop %%rdx\n\tpop %%rcx\n\tret\n\t"
      ".size pvk_pvop_thunk_pte_flags_at, . - pvk_pvop_thunk_pte_flags_at\n\t"
      ".popsection"
      :
      : [mmu] "i"(&g_mmu), [slot] "i"(offsetof(MmuOps, pte_flags)));
}

}  // namespace pvk

#endif
