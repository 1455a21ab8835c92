// pvpatch=on: boot-time rewriting of every pvops call site (the table the
// assembler built in .pvop_sites, pvops/call/pvop_site.h) once the backend is
// chosen. Each indirect call through g_mmu becomes a direct call to the
// backend's function, or — for the verbs a backend declares plain
// arithmetic (MmuOps::inline_forms), after checking that its functions
// compute exactly that — the instructions themselves. Then every site is
// decoded again and must read back as intended before anything runs
// through it (the self-check).
//
// It writes the kernel's text through the mapping the boot left writable
// (PVH's early tables, Xen's initial mapping), so it runs before
// build_kernel_space() makes text read-only, with interrupts off.
#pragma once
#include "base/lib/error_or.h"

namespace pvk {

struct PatchReport {
  unsigned sites = 0;
  unsigned direct = 0;      // became direct calls (light verbs' sites: still their thunk)
  unsigned inlined = 0;     // became inline code, of which:
  unsigned flags_mask = 0;  //   pte_flags
  unsigned identity = 0;    //   pte_val
  unsigned native_pfn = 0;  //   pte_pfn
  unsigned native_make = 0; //   make_pte
  unsigned lazy_tlb = 0;   //   the lazy-MMU and TLB verbs that natively only count (and invlpg)
  // Native-body sites (pvops/call/pvop.h): the jump to the ordinary site
  // became a nop (the selected backend's verb is the native body) or stayed.
  unsigned native_body = 0;
  unsigned generic_jumps = 0;
  // Copy switches (pick_copy, pvops/call/pvop.h): the function's native
  // copy runs (the jump became a nop) or its generic one does.
  unsigned native_copies = 0;
  unsigned generic_copies = 0;
  // Encoding switches (pick_encoding_copy, pvops/call/pvop.h): the
  // function's pte=attrs copy runs (the jump became a nop) or its pte=flags
  // copy does (the native pte=flags backend, or pvpatch=off).
  unsigned attrs_copies = 0;
  unsigned flags_copies = 0;
  unsigned unpatched = 0;   // left as compiled (pvpatch=off)
  unsigned verified = 0;    // read back as intended by the self-check
};

// Checks (and with `patch`, rewrites) every site. Errors: a site whose bytes
// are not the indirect call the compiler left (EINVAL), a verb the backend
// does not provide (ENOSYS), a site that reads back wrong (EIO); `failure`
// then names the site in one line.
ErrorOr<PatchReport> patch_pvop_sites(bool patch, char* failure, size_t failure_size);

}  // namespace pvk
