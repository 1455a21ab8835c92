// Traps that concern processes: faults and ticks from user mode, and the
// kernel's own faults on user memory while copying (demand paging).
#include "arch/fpu/fpu.h"
#include "base/arch/cross_cpu.h"
#include "base/arch/probe.h"
#include "base/arch/platform.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "base/lib/fault_inject.h"
#include "kernel/proc/process.h"
#include "pvops/backends/registry.h"

namespace pvk {
namespace {

// Page-fault error code bits (the same natively and as Xen delivers them).
namespace pf {
inline constexpr uint64_t Present = 1u << 0;  // a protection fault (else: the entry was not present)
inline constexpr uint64_t Write = 1u << 1;
inline constexpr uint64_t User = 1u << 2;  // the access was made at user privilege
inline constexpr uint64_t Reserved = 1u << 3;  // a reserved bit set in an entry: a page-table bug
inline constexpr uint64_t Fetch = 1u << 4;
}  // namespace pf

// How often a fault that could not get its frame or mapping is retried
// before the process is killed as out of memory.
constexpr unsigned kFaultRetries = 3;

EntryHint hint_of(uint64_t error_code) {
  return (error_code & pf::Present) ? EntryHint::Unknown : EntryHint::NotPresent;
}

Access access_of(uint64_t error_code) {
  if (error_code & pf::Fetch) return Access::Execute;
  return (error_code & pf::Write) ? Access::Write : Access::Read;
}

// The signal a CPU exception in user mode turns into (Linux's choices).
int signal_for_vector(uint64_t vector) {
  switch (vector) {
    case vec::DivideError: return abi::SIGFPE;
    case vec::Debug:
    case vec::Breakpoint: return abi::SIGTRAP;
    case vec::InvalidOpcode: return abi::SIGILL;
    case vec::X87Error:
    case vec::SimdError: return abi::SIGFPE;
    case vec::AlignmentCheck: return abi::SIGBUS;
    default: return abi::SIGSEGV;  // #GP, #NP, #SS, #BR, anything unexpected
  }
}

// The same instruction faulting on the same address again and again after
// each fault was "handled" is a livelock (the entry already allows what the
// CPU keeps refusing); a program never needs more than a few retries.
bool repeats_without_progress(Process& p, uint64_t rip, uint64_t addr) {
  constexpr unsigned kMaxRepeats = 16;
  if (p.last_fault_rip == rip && p.last_fault_addr == addr) return ++p.fault_repeats > kMaxRepeats;
  p.last_fault_rip = rip;
  p.last_fault_addr = addr;
  p.fault_repeats = 0;
  return false;
}

// A page fault that will kill (SIGSEGV with no handler to run): one line
// saying where, so a dead program is not a mystery (a handled SIGSEGV is
// the program's business and says nothing).
void note_fatal_fault(const Process& p, const TrapFrame& f, uint64_t addr, const char* why) {
  const uint64_t handler = p.leader->actions[abi::SIGSEGV].handler;
  if (handler != abi::SIG_DFL && handler != abi::SIG_IGN && !(p.blocked & (uint64_t{1} << (abi::SIGSEGV - 1)))) return;
  kprintf("pvk: pid %d tid %d (%s): SIGSEGV: %s at 0x%lx (rip 0x%lx, error 0x%lx, cpu %u)\n", p.tgid, p.pid, p.name,
          why, addr, f.rip, f.error_code, xcpu::this_cpu_id());
}

// Whether a user page fault may run without the kernel lock: the space's
// lock suffices (space_lock_suffices), and the fault is an ordinary one
// (user mode, no reserved bit: those end in a signal, under the lock).
bool fault_may_skip_kernel_lock(uint64_t error_code) {
  return space_lock_suffices() && (error_code & pf::User) && !(error_code & pf::Reserved);
}

}  // namespace

bool g_space_lock_by_boot = false;

void note_space_locking() {
  g_space_lock_by_boot = installed_backend().fault_locking == FaultLocking::SpaceLock && !mm_policy().ptshare;
}

UnlockedFault user_fault_unlocked(TrapFrame& f, uint64_t fault_addr) {
  if (f.vector != vec::PageFault || !fault_may_skip_kernel_lock(f.error_code)) return UnlockedFault::NeedsKernelLock;
  // The thread's own process, on this CPU; its space lives until its last
  // thread has exited, which this one has not (exit and exec's ending of the
  // other threads happen under the kernel lock, on their own CPUs).
  Process* p = current();
  if (!p || !p->as) return UnlockedFault::NeedsKernelLock;
  if (p->as->handle_fault(VirtAddr{fault_addr}, access_of(f.error_code), hint_of(f.error_code)) != FaultOutcome::Handled)
    return UnlockedFault::NeedsKernelLock;
  // These fields are this thread's own (no other CPU touches them).
  p->fault_failures = 0;
  if (repeats_without_progress(*p, f.rip, fault_addr)) return UnlockedFault::NeedsKernelLock;
  // Written by other CPUs under the kernel lock; a signal sent after this
  // read is delivered at the thread's next entry (its next tick at the latest).
  if (__atomic_load_n(&p->pending, __ATOMIC_RELAXED) & ~p->blocked) return UnlockedFault::DoneSignalsPending;
  return UnlockedFault::Done;
}

void user_trap(TrapFrame& f, uint64_t fault_addr) {
  Process& p = *current();
  switch (f.vector) {
    case vec::PageFault: {
      if (f.error_code & pf::Reserved) {
        // Not the program's doing: an entry pvk wrote is malformed.
        kprintf("pvk: pid %d (%s): reserved-bit page fault at 0x%lx\n", p.pid, p.name, fault_addr);
        raise_fault_signal(abi::SIGSEGV);
        break;
      }
      if (!(f.error_code & pf::User)) {
        // An implicit supervisor-mode access the program caused (a descriptor
        // table read, a far transfer's stack access under SMAP in some CPU
        // models): demand paging cannot fix it, so it would repeat forever.
        raise_fault_signal(abi::SIGSEGV);
        break;
      }
      switch (p.as->handle_fault(VirtAddr{fault_addr}, access_of(f.error_code), hint_of(f.error_code)).kind) {
        case FaultOutcome::Handled:
          p.fault_failures = 0;
          if (repeats_without_progress(p, f.rip, fault_addr)) {
            note_fatal_fault(p, f, fault_addr, "the same fault again and again (no progress)");
            raise_fault_signal(abi::SIGSEGV);
          }
          break;
        case FaultOutcome::BadAccess:
          note_fatal_fault(p, f, fault_addr, "no mapping allows the access");
          raise_fault_signal(abi::SIGSEGV);
          break;
        case FaultOutcome::OutOfMemory:
          // A frame or a mapping refused once may be there the next time:
          // let the access fault again a few times before giving up.
          if (++p.fault_failures <= kFaultRetries) break;
          kprintf("pvk: pid %d (%s): out of memory at 0x%lx, killed\n", p.pid, p.name, fault_addr);
          Record("oom_kill").i64("pid", p.pid).str("program", p.name).u64("address", fault_addr);
          do_exit(abi::wait_signaled(abi::SIGKILL));
      }
      break;
    }
    // Ticks do not come here: they run without the kernel lock (entries.cpp).
    // FP state is switched eagerly, so CR0.TS is never set on purpose; Xen
    // may set a PV vCPU's (its initial context): clear it, run again.
    case vec::DeviceNotAvailable: fpu::device_not_available(); break;
    default: raise_fault_signal(signal_for_vector(f.vector)); break;
  }
  prepare_return_to_user(f);
}

bool kernel_fault_on_user_memory(const TrapFrame& f, uint64_t fault_addr) {
  // Only the user-copy routines may touch user memory (they have an .extable
  // fixup); anywhere else a fault on a user address is a kernel bug — and with
  // SMAP a "handled" fault there would repeat forever.
  if (!extable_fixup(f.rip)) return false;
  Process* p = current();
  // user_faults_off: a copy under a spinlock, which fails rather than fault
  // (kernel/proc/futex.cpp: read_word_nofault).
  if (!p || !p->as || p->user_faults_off || fault_addr >= abi::kUserTop || (f.error_code & pf::Reserved))
    return false;
  for (unsigned attempt = 0; attempt <= kFaultRetries; ++attempt) {
    switch (p->as->handle_fault(VirtAddr{fault_addr}, access_of(f.error_code), hint_of(f.error_code)).kind) {
      case FaultOutcome::Handled: return true;
      case FaultOutcome::BadAccess: return false;
      case FaultOutcome::OutOfMemory: break;  // maybe transient: try again
    }
  }
  return false;  // the copy fails: EFAULT
}

}  // namespace pvk
