// The root cache (pgd_cache=): user roots are kept, pinned and with the
// kernel half filled in, for the next space instead of being freed, and
// given back before a leak check (drain_root_cache).
#include "mm/address_space.h"

#include "base/layout.h"
#include "base/lib/kstring.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#include "mm/address_space_parts.h"
#include "mm/kernel_space.h"
#include "pvops/call/pvop.h"

namespace pvk {
namespace {

constexpr unsigned kRootCacheSize = 16;

Pfn g_root_cache[kRootCacheSize];
unsigned g_cached_roots = 0;

constexpr LockClass kSpacesLockClass{"spaces", LockRank::Spaces, LockStat::spaces};
Spinlock g_spaces_lock{kSpacesLockClass};

}  // namespace

namespace space {

Spinlock& spaces_lock() { return g_spaces_lock; }

ErrorOr<Pfn> new_root() {
  if (g_policy.pgd_cache && g_cached_roots) return g_root_cache[--g_cached_roots];
  const Pfn root = TRY(frames().try_alloc());
  memset(phys_to_virt(root), 0, kPageSize);
  if (auto r = PVOP(alloc_pt_page)(root, Level::L4); r.is_error()) {
    frames().must_free(root);
    return r.error();
  }
  // Share the kernel half: its L3 tables exist from boot and never change,
  // so copying the L4 entries once is enough.
  const Pte* kernel = phys_to_virt<const Pte>(kernel_root());
  Pte* l4 = phys_to_virt<Pte>(root);
  for (unsigned i = index_at(VirtAddr{PVK_PHYSMAP_BASE}, Level::L4); i < kEntriesPerTable; ++i) {
    if (!pte_has(kernel[i], pte_bit::Present)) continue;
    if (auto r = PVOP(set_p4d)(&l4[i], kernel[i]); r.is_error()) {
      must(PVOP(release_pt_page)(root, Level::L4), "release root");
      frames().must_free(root);
      return r.error();
    }
  }
  return root;
}

ErrorOr<void> release_root(Pfn root) {
  if (g_policy.pgd_cache && g_cached_roots < kRootCacheSize) {
    // Under Xen the cached root stays pinned: reuse skips revalidation.
    g_root_cache[g_cached_roots++] = root;
    return {};
  }
  TRY(PVOP(release_pt_page)(root, Level::L4));
  return frames().try_free(root);
}
}  // namespace space

ErrorOr<void> drain_root_cache() {
  SpinGuard guard(g_spaces_lock);
  while (g_cached_roots) {
    const Pfn root = g_root_cache[--g_cached_roots];
    TRY(PVOP(release_pt_page)(root, Level::L4));
    TRY(frames().try_free(root));
  }
  return {};
}

}  // namespace pvk
