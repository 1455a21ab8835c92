#include "kernel/boot/select.h"

#include "base/lib/kstring.h"

namespace pvk {
namespace {

BackendPlatform platform_of(const Platform& platform) {
  return !strcmp(platform.name, "xen") ? BackendPlatform::XenPv : BackendPlatform::Native;
}

// The row mmu= names, or the platform's backend when it is not given.
const Backend& wanted_backend(const BootParams& params, BackendPlatform here) {
  if (params.mmu == MmuBackend::Default) return default_backend(here);
  return backend_at(static_cast<unsigned>(params.mmu) - 1);
}

// A parameter some backends own, given with another one, is refused rather
// than ignored.
ErrorOr<void, ParamError> check_backend_only_params(const Backend& backend, const BootParams& params) {
  for (const BackendOnlyParam& p : kBackendOnlyParams) {
    const uint32_t value = params.*p.field;
    if (value == 0 || backend.takes(p.key)) continue;
    char owners[64];
    list_backends_taking(p.key, owners, sizeof owners);
    return param_error("pvk: boot parameter '%s=%u' applies to mmu=%s only (this boot: mmu=%s)", p.key, value, owners,
                       backend.name);
  }
  return {};
}

// Whether the backend can run on this platform, in this image.
ErrorOr<void, ParamError> check_backend(const Backend& backend, BackendPlatform here, const BootParams& params) {
#if PVK_BUILTIN_NATIVE
  // The compiled-in native baseline: no table to fill, nothing else to pick.
  const Backend& builtin = default_backend(BackendPlatform::Native);
  if (here != BackendPlatform::Native)
    return param_error(
        "pvk: this is the compiled-in native image (no pvops table); it cannot run as a Xen PV guest (boot pvk.elf)");
  if (&backend != &builtin)
    return param_error("pvk: boot parameter 'mmu=%s': the compiled-in native image has only %s (accepted: %s)",
                       backend.name, builtin.name, builtin.name);
  if (params.pte == PteAccess::Flags)
    return param_error(
        "pvk: boot parameter 'pte=flags' needs the pvops table; the compiled-in native image reads flags inline "
        "(accepted here: attrs)");
  return {};
#else
  if (backend.platform != here) {
    char accepted[96];
    list_backends_on(here, accepted, sizeof accepted);
    return param_error("pvk: boot parameter 'mmu=%s' %s (accepted here: %s)", backend.name,
                       platform_requirement(backend.platform), accepted);
  }
  return check_backend_only_params(backend, params);
#endif
}

// shootdown=: under Xen the hypercall (Linux's choice) unless ipi is asked
// for; natively IPIs are the only way, and asking for the hypercall is
// refused rather than ignored.
ErrorOr<ShootdownMode, ParamError> shootdown_mode(BackendPlatform here, Shootdown want) {
  if (here == BackendPlatform::Native) {
    if (want == Shootdown::Hypercall)
      return param_error(
          "pvk: boot parameter 'shootdown=hypercall' needs a Xen PV guest; this boot is native (accepted here: ipi)");
    return ShootdownMode::Ipi;
  }
  return want == Shootdown::Ipi ? ShootdownMode::Ipi : ShootdownMode::Hypercall;
}

}  // namespace

ErrorOr<void, ParamError> select_mmu_backend(const Platform& platform, const BootParams& params) {
  const BackendPlatform here = platform_of(platform);
  const Backend& backend = wanted_backend(params, here);
  TRY(check_backend(backend, here, params));
  BackendSetup setup;
  setup.pte = params.pte;
  setup.batch = params.batch;
  setup.auto_threshold = params.auto_threshold;
  setup.shootdown = TRY(shootdown_mode(here, params.shootdown));
  if (auto r = install_backend(backend, setup); r.is_error())
    return param_error("pvk: boot parameter 'mmu=%s': %s (%s)", backend.name, r.error().what,
                       errno_name(r.error().error));
  return {};
}

ErrorOr<void> finish_mmu_backend(Pfn kernel_root, uint64_t (*ticks_to_ns)(uint64_t)) {
  return finish_backend(kernel_root, ticks_to_ns);
}

const BackendFacts& mmu_backend_facts() { return backend_facts(); }

}  // namespace pvk
