#include "kernel/boot/select.h"

#include "base/console/record.h"
#include "base/lib/kstring.h"
#include "pvops/backends.h"
#include "pvops/call/pvop.h"
#if !PVK_BUILTIN_NATIVE
#include "pvops/xen_common.h"
#endif

namespace pvk {

AutoThresholds g_auto_thresholds{};

namespace {

// shootdown=: under Xen the hypercall (Linux's choice) unless ipi is asked
// for; natively IPIs are the only way, and asking for the hypercall is
// refused rather than ignored.
ErrorOr<void, ParamError> select_shootdown(bool on_xen, Shootdown want) {
  if (!on_xen) {
    if (want == Shootdown::Hypercall)
      return param_error(
          "pvk: boot parameter 'shootdown=hypercall' needs a Xen PV guest; this boot is native (accepted here: ipi)");
    install_native_shootdown();
    return {};
  }
#if PVK_BUILTIN_NATIVE
  return param_error("pvk: the compiled-in native image has no Xen shootdown");
#else
  xen_pv::set_shootdown_mode(want == Shootdown::Ipi ? ShootdownMode::Ipi : ShootdownMode::Hypercall);
  return {};
#endif
}

ErrorOr<void, ParamError> select_mmu_backend_only(const Platform& platform, const BootParams& params);

}  // namespace

ErrorOr<void, ParamError> select_mmu_backend(const Platform& platform, const BootParams& params) {
  TRY(select_mmu_backend_only(platform, params));
  return select_shootdown(!strcmp(platform.name, "xen"), params.shootdown);
}

namespace {

ErrorOr<void, ParamError> select_mmu_backend_only(const Platform& platform, const BootParams& params) {
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
        "(accepted here: batched|direct|wrpt|unhook|auto)");
  if (params.auto_threshold != 0 && want != MmuBackend::Auto)
    return param_error("pvk: boot parameter 'auto_threshold=%u' applies to mmu=auto only (this boot: mmu=%s)",
                       params.auto_threshold, backend_name(want));
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
    case MmuBackend::Unhook: g_mmu = make_unhook_ops(params.pte, params.batch); return {};
    case MmuBackend::Auto: g_mmu = make_auto_ops(params.pte, params.batch, params.auto_threshold); return {};
    case MmuBackend::Default: break;
  }
  return param_error("pvk: boot parameter 'mmu': no backend chosen");
#endif
}

}  // namespace
}  // namespace pvk

namespace pvk {

ErrorOr<void> finish_mmu_backend(const BootParams& params, Pfn kernel_root, uint64_t (*ticks_to_ns)(uint64_t)) {
#if PVK_BUILTIN_NATIVE
  (void)params, (void)kernel_root, (void)ticks_to_ns;
  return {};
#else
  if (params.mmu != MmuBackend::Auto) return {};
  // auto's thresholds: the break-even of a queued entry against one table's
  // unhook and rehook, measured here (a few hundred microseconds), unless
  // auto_threshold= gave it (the costs are measured and reported anyway).
  const AutoCalibration c = TRY(calibrate_auto(kernel_root));
  Record("auto_calibration")
      .boolean("calibrated", c.calibrated)
      .u64("auto_threshold", c.thresholds.unhook_at)
      .u64("auto_share_threshold", c.thresholds.share_at)
      .u64("queued_entry_ns", ticks_to_ns(c.queued_ticks))
      .u64("plain_store_ns", ticks_to_ns(c.plain_ticks))
      .u64("unhook_rehook_ns", ticks_to_ns(c.table_cycle_ticks))
      .u64("l2_store_ns", ticks_to_ns(c.l2_store_ticks))
      .u64("trap_ns", ticks_to_ns(c.trap_ticks))
      .u64("calibration_us", ticks_to_ns(c.elapsed_ticks) / 1000)
      .u64("setup_us", ticks_to_ns(c.setup_ticks) / 1000)
      .u64("rounds_us", ticks_to_ns(c.rounds_ticks) / 1000)
      .u64("probes_us", ticks_to_ns(c.probes_ticks) / 1000)
      .u64("teardown_us", ticks_to_ns(c.teardown_ticks) / 1000);
  g_auto_thresholds = c.thresholds;
  return {};
#endif
}

}  // namespace pvk
