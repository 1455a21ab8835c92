// sched_setaffinity, sched_getaffinity and getcpu (kernel/proc/cpu_calls.h).
//
// A mask is one 64-bit word: CPUs 0..63 (pvk runs at most smp::kMaxCpus).
// As on Linux, a set mask keeps only the CPUs that run processes, and one
// with none of them is EINVAL; a get reports the thread's mask within
// those, in one word (a buffer shorter than a word is EINVAL). The target
// is a thread id (0: the caller). A caller that may no longer run on its
// CPU leaves it before the call returns; another thread running elsewhere
// moves at its next pass through the scheduler (its tick at the latest).
#include "kernel/proc/cpu_calls.h"

#include "base/abi.h"
#include "kernel/proc/process.h"
#include "kernel/proc/process_parts.h"
#include "kernel/proc/syscall_result.h"
#include "kernel/proc/user_copy.h"

namespace pvk {
namespace {


// The thread `tid` names (0: the caller), or null.
Process* target(uint64_t tid) {
  if (tid == 0) return current();
  if (tid > 0x7fffffff) return nullptr;
  Process* p = find_process(static_cast<int>(tid));
  return p && p->state != ProcState::Free ? p : nullptr;
}

int64_t sys_sched_setaffinity(uint64_t tid, uint64_t len, uint64_t user_mask) {
  uint64_t mask = 0;  // bytes past len are CPUs the caller left out
  const size_t n = len < sizeof mask ? static_cast<size_t>(len) : sizeof mask;
  if (auto r = copy_from_user(&mask, user_mask, n); r.is_error()) return syscall_result(r);
  Process* p = target(tid);
  if (!p) return syscall_result(Errno::ESRCH);
  mask &= proc::schedulable_cpus();
  if (mask == 0) return syscall_result(Errno::EINVAL);
  p->affinity = mask;
  proc::follow_affinity(*p);
  return 0;
}

int64_t sys_sched_getaffinity(uint64_t tid, uint64_t len, uint64_t user_mask) {
  if (len < sizeof(uint64_t) || len % sizeof(uint64_t)) return syscall_result(Errno::EINVAL);
  Process* p = target(tid);
  if (!p) return syscall_result(Errno::ESRCH);
  const uint64_t mask = p->affinity & proc::schedulable_cpus();
  if (auto r = copy_to_user(user_mask, &mask, sizeof mask); r.is_error()) return syscall_result(r);
  return sizeof mask;
}

// Both pointers may be null (that answer is not wanted); pvk has one node.
int64_t sys_getcpu(uint64_t user_cpu, uint64_t user_node) {
  const uint32_t cpu = proc::me(), node = 0;
  if (user_cpu)
    if (auto r = copy_to_user(user_cpu, &cpu, sizeof cpu); r.is_error()) return syscall_result(r);
  if (user_node)
    if (auto r = copy_to_user(user_node, &node, sizeof node); r.is_error()) return syscall_result(r);
  return 0;
}

}  // namespace

bool cpu_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret) {
  switch (nr) {
    case abi::SYS_sched_setaffinity: ret = sys_sched_setaffinity(a[0], a[1], a[2]); return true;
    case abi::SYS_sched_getaffinity: ret = sys_sched_getaffinity(a[0], a[1], a[2]); return true;
    case abi::SYS_getcpu: ret = sys_getcpu(a[0], a[1]); return true;
    default: return false;
  }
}

}  // namespace pvk
