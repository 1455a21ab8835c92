// Work on one address space (a fork's copy, a teardown) run without the
// kernel lock where the space's own lock suffices (space_lock_suffices), so
// other CPUs' system calls go on meanwhile. The caller holds the kernel
// lock before and after and relies on nothing it guards across the call.
// A file mapping's last reference dropped meanwhile is put once the lock
// is back (kernel/fs/file_pages.h).
#pragma once
#include "kernel/fs/file_pages.h"
#include "kernel/kernel_lock.h"
#include "kernel/proc/process.h"

namespace pvk {

template <typename Work>
void without_kernel_lock(Work work) {
  if (!space_lock_suffices()) return work();
  kernel_unlock();
  work();
  kernel_lock();
  fs::run_deferred_puts();
}

}  // namespace pvk
