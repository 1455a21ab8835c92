#include "kernel/fs/file_pages.h"

#include "base/lib/spinlock.h"
#include "kernel/kernel_lock.h"

namespace pvk::fs {
namespace {

// A mapping's reference to a file is an atomic count of its own
// (Inode::map_refs), because mm changes VMAs without the kernel lock
// (munmap and mprotect split and drop them, fork copies them) while the
// tree's own counts (Inode::refs) are the kernel lock's. The node keeps one
// ordinary reference while map_refs is above zero:
//  - the first hold takes it: that is mmap or exec making the first VMA of
//    the file, under the kernel lock (every other hold copies a VMA that
//    already holds one, so map_refs is not zero);
//  - the last drop puts it, at once under the kernel lock, or else queued
//    here; the call's way back to user mode puts it under the kernel lock
//    (run_deferred_puts), so no node outlives its last mapping for longer
//    than that call.
constexpr LockClass kDeferredPutsClass{"file_maps", LockRank::FilePages, LockStat::file_maps};
Spinlock g_deferred_lock{kDeferredPutsClass};
Inode* g_deferred = nullptr;

unsigned take(void* object, uint64_t index, unsigned count, Pfn* out) {
  return take_page_frames(static_cast<const Inode*>(object), index, count, out);
}

void hold(void* object) {
  auto* n = static_cast<Inode*>(object);
  if (__atomic_fetch_add(&n->map_refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (!kernel_lock_held()) panic("file node %lu: first mapping made without the kernel lock", n->ino);
  inode_get(n);
}

void defer_put(Inode* n) {
  SpinGuard guard(g_deferred_lock);
  if (n->deferred_puts++ == 0) {
    n->deferred_next = g_deferred;
    g_deferred = n;
  }
  __atomic_store_n(&g_deferred_pending, true, __ATOMIC_RELEASE);
}

void drop(void* object) {
  auto* n = static_cast<Inode*>(object);
  if (__atomic_sub_fetch(&n->map_refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (kernel_lock_held())
    inode_put(n);
  else
    defer_put(n);
}

constexpr PageSourceOps kFileOps{.take_pages = &take, .hold = &hold, .drop = &drop};

}  // namespace

PageSource file_pages(Inode* n, uint64_t first_page) { return PageSource{&kFileOps, n, first_page}; }

bool g_deferred_pending = false;

void run_deferred_puts() {
  while (puts_deferred()) {
    Inode* n;
    uint32_t puts;
    {
      SpinGuard guard(g_deferred_lock);
      n = g_deferred;
      if (!n) {
        __atomic_store_n(&g_deferred_pending, false, __ATOMIC_RELEASE);
        return;
      }
      g_deferred = n->deferred_next;
      n->deferred_next = nullptr;
      puts = n->deferred_puts;
      n->deferred_puts = 0;
    }
    while (puts--) inode_put(n);
  }
}

}  // namespace pvk::fs
