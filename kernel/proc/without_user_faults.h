// Runs a copy to or from user memory with this thread's user faults turned
// into failures: the copy's fixup returns an error where a fault would have
// run the fault path (kernel_fault_on_user_memory declines while
// user_faults_off is set). For copies under a spinlock no fault may run
// under (a futex bucket's, a pipe's); the caller drops the lock, brings the
// pages in with faults allowed, and tries again.
#pragma once
#include "kernel/proc/process.h"

namespace pvk {

template <typename Copy>
bool without_user_faults(Copy&& copy) {
  Process& self = *current();
  self.user_faults_off = true;
  const bool ok = copy();
  self.user_faults_off = false;
  return ok;
}

}  // namespace pvk
