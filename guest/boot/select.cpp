#include "guest/boot/select.h"

#include "base/lib/kstring.h"
#include "pvops/backends.h"
#include "pvops/pvop.h"

namespace pvk {

ErrorOr<void, ParamError> select_mmu_backend(const Platform& platform, const BootParams& params) {
  const bool on_xen = !strcmp(platform.name, "xen");
  MmuBackend want = params.mmu;
  if (want == MmuBackend::Default) want = on_xen ? MmuBackend::Batched : MmuBackend::Native;

#if PVK_BUILTIN_NATIVE
  // The compiled-in native baseline: no table to fill, nothing else to pick.
  if (on_xen)
    return param_error(
        "pvk: this is the compiled-in native image (no pvops table); it cannot run as a Xen PV guest (boot pvk.elf)");
  if (want != MmuBackend::Native)
    return param_error("pvk: boot parameter 'mmu=%s': the compiled-in native image has only native (accepted: native)",
                       backend_name(want));
  if (params.pte == PteAccess::Flags)
    return param_error(
        "pvk: boot parameter 'pte=flags' needs the pvops table; the compiled-in native image reads flags inline "
        "(accepted here: attrs)");
  return {};
#else
  if (!on_xen && want != MmuBackend::Native)
    return param_error(
        "pvk: boot parameter 'mmu=%s' needs a Xen PV guest; this boot is native (accepted here: native)",
        backend_name(want));
  if (on_xen && want == MmuBackend::Native)
    return param_error(
        "pvk: boot parameter 'mmu=native' cannot work under Xen PV: page tables are read-only to the guest "
        "(accepted here: batched|direct|wrpt)");
  g_pte_access = params.pte;
  switch (want) {
    case MmuBackend::Native: g_mmu = make_native_ops(params.pte); return {};
    case MmuBackend::Batched: g_mmu = make_batched_ops(params.pte, params.batch); return {};
    case MmuBackend::Direct: g_mmu = make_direct_ops(params.pte); return {};
    case MmuBackend::Wrpt: {
      auto ops = try_make_wrpt_ops(params.pte);
      if (ops.is_error())
        return param_error("pvk: boot parameter 'mmu=wrpt': Xen refused writable page tables (%s)",
                           errno_name(ops.error()));
      g_mmu = ops.value();
      return {};
    }
    case MmuBackend::Default: break;
  }
  return param_error("pvk: boot parameter 'mmu': no backend chosen");
#endif
}

}  // namespace pvk
