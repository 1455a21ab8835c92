// The table of backends.inc's rows, the choice of the default, the lists the
// refusals print, and installing the chosen backend.
#include "pvops/backends/registry.h"

#include "base/lib/format.h"
#include "base/lib/kstring.h"
#include "pvops/call/pvop.h"

namespace pvk {

// Each row's constructor and finish hook, declared from the rows themselves:
// a new backend's file defines them, and nothing else needs a declaration.
namespace backends {

ErrorOr<BackendFacts> no_finish(Pfn, uint64_t (*)(uint64_t)) { return BackendFacts{}; }

#define PVK_BACKEND(id, name, platform, faults, params, role, weight, make, finish) \
  ErrorOr<MmuOps, BackendRefusal> make(const BackendSetup& setup);                  \
  ErrorOr<BackendFacts> finish(Pfn kernel_root, uint64_t (*ticks_to_ns)(uint64_t));
#include "pvops/backends/backends.inc"
#undef PVK_BACKEND

}  // namespace backends

namespace {

constexpr Backend kBackends[] = {
#define PVK_BACKEND(id, name, platform, faults, params, role, weight, make, finish)                            \
  {name, BackendPlatform::platform, FaultLocking::faults, params, BackendRole::role, &backends::make, \
   &backends::finish},
#include "pvops/backends/backends.inc"
#undef PVK_BACKEND
};
constexpr unsigned kCount = sizeof kBackends / sizeof kBackends[0];

constexpr unsigned defaults_on(BackendPlatform p) {
  unsigned n = 0;
  for (const Backend& b : kBackends) n += b.platform == p && b.role == BackendRole::Default;
  return n;
}
static_assert(defaults_on(BackendPlatform::Native) == 1 && defaults_on(BackendPlatform::XenPv) == 1,
              "backends.inc: each platform has exactly one Default row");

BackendFacts g_facts{};

// Appends name to a "|"-separated list.
void append(char* out, size_t cap, size_t& used, const char* name) {
  used += format(out + used, used < cap ? cap - used : 0, used ? "|%s" : "%s", name);
  if (used >= cap) used = cap - 1;
}

}  // namespace

namespace detail {
const Backend* g_installed_backend = nullptr;  // set by install_backend, before anything faults
}

bool Backend::takes(const char* key) const {
  const size_t n = strlen(key);
  for (const char* p = params; *p;) {
    while (*p == ' ') ++p;
    const char* end = p;
    while (*end && *end != ' ') ++end;
    if (static_cast<size_t>(end - p) == n && n && !strncmp(p, key, n)) return true;
    p = end;
  }
  return false;
}

unsigned backend_count() { return kCount; }

const Backend& backend_at(unsigned index) {
  if (index >= kCount) panic("backends: no row %u (of %u)", index, kCount);
  return kBackends[index];
}

const Backend& default_backend(BackendPlatform platform) {
  for (const Backend& b : kBackends)
    if (b.platform == platform && b.role == BackendRole::Default) return b;
  panic("backends: no default backend for the platform");  // not reached: the static_assert above
}

const char* platform_requirement(BackendPlatform platform) {
  switch (platform) {
    case BackendPlatform::Native: return "cannot work under Xen PV: page tables are read-only to the guest";
    case BackendPlatform::XenPv: return "needs a Xen PV guest; this boot is native";
  }
  return "needs another platform";
}

void list_backends_on(BackendPlatform platform, char* out, size_t cap) {
  size_t used = 0;
  out[0] = 0;
  for (const Backend& b : kBackends)
    if (b.platform == platform) append(out, cap, used, b.name);
}

void list_backends_taking(const char* key, char* out, size_t cap) {
  size_t used = 0;
  out[0] = 0;
  for (const Backend& b : kBackends)
    if (b.takes(key)) append(out, cap, used, b.name);
}

ErrorOr<void, BackendRefusal> install_backend(const Backend& backend, const BackendSetup& setup) {
  MmuOps ops = TRY(backend.make(setup));
  ops.name = backend.name;
  g_pte_access = setup.pte;
#if PVK_BUILTIN_NATIVE
  (void)ops;  // no table: PVOP() names the native verbs (pvops/pvop.h)
#else
  g_mmu = ops;
#endif
  detail::g_installed_backend = &backend;
  return {};
}

ErrorOr<void> finish_backend(Pfn kernel_root, uint64_t (*ticks_to_ns)(uint64_t)) {
  g_facts = TRY(installed_backend().finish(kernel_root, ticks_to_ns));
  return {};
}

const BackendFacts& backend_facts() { return g_facts; }

}  // namespace pvk
