// TLB shootdown: making other CPUs drop translations this CPU changed.
//
// The mm says which CPUs may cache an address space's translations (a
// CpuMask per address space, pvk's mm_cpumask); a lazy-MMU section gathers
// the invalidations of its work (pvops/lazy_mmu_section.h) and, when it is
// drained, flushes this CPU and hands the other CPUs of the mask to the
// backend's flush_tlb_multi verb (Linux's name) once — one shootdown per
// section, never one per entry.
//
// How a backend reaches the other CPUs:
//  - native: a cross-CPU request (base/arch/cross_cpu.h, Ipi::TlbFlush) to
//    each target, which reads this CPU's mailbox, flushes locally and
//    acknowledges; the sender spins (polling its own requests) until all did.
//  - Xen PV, shootdown=hypercall: MMUEXT_TLB_FLUSH_MULTI / MMUEXT_INVLPG_MULTI
//    with a vCPU bitmap, queued behind the section's updates so they travel
//    in the same multicall; Xen flushes the targets.
//  - Xen PV, shootdown=ipi: as native, over event channels, with the
//    targets flushing through MMUEXT_*_LOCAL.
#pragma once
#include "base/lib/cpumask.h"
#include "base/lib/types.h"

namespace pvk {

// Past this many pages one full flush is cheaper than per-page
// invalidations (Linux's tlb_single_page_flush_ceiling, 33 by default):
// a section that invalidates more turns into one full flush, locally and
// on every target.
inline constexpr unsigned kTlbSinglePageFlushCeiling = 33;

// What a shootdown asks each target to invalidate (Linux's flush_tlb_info):
// everything, or up to kTlbSinglePageFlushCeiling pages.
struct TlbFlushInfo {
  bool full = false;
  unsigned count = 0;
  VirtAddr pages[kTlbSinglePageFlushCeiling] = {};
  // Lazy TLB: a target still running on this root (it went idle on it)
  // leaves it for the kernel's (the leave hook) — the root is going away.
  bool leave = false;
  Pfn leave_root{};
};

// Xen PV: how flush_tlb_multi reaches the other vCPUs (boot switch
// shootdown=). Natively there is only the IPI path.
enum class ShootdownMode : uint8_t { Hypercall, Ipi };

// The flushes a target runs for a request, on its own CPU (natively invlpg
// and a CR3 reload; under Xen PV the MMUEXT_*_LOCAL hypercalls, issued at
// once: the target's own lazy-MMU queue is not touched from a handler).
struct LocalTlbFlush {
  void (*one)(VirtAddr va);
  void (*all)();
};

// Registers the TlbFlush handler with the backend's local flushes. Called
// once at boot when the backend is chosen, before any other CPU could be
// sent a request.
void init_tlb_shootdown(const LocalTlbFlush& local);

// The IPI path: asks every CPU of `targets` (this CPU must not be one) to
// run `info`, and waits until each has acknowledged. Returns the targets
// whose request could not be sent (xcpu::send refused): nothing was flushed
// there, and the caller decides what that means (a native panic, a Xen
// fallback through the hypervisor). A target that never answers is a panic
// (a stale TLB entry is a hole in memory protection).
CpuMask shootdown_ipi(const CpuMask& targets, const TlbFlushInfo& info);

// Runs, on this CPU, every flush other CPUs have asked of it and not yet
// seen (the TlbFlush handler; also safe to call from a polling loop).
void handle_tlb_shootdowns();

// What a target runs for a request with `leave` when it still has that
// root loaded: mm's switch to the kernel's root (it keeps the masks).
void set_tlb_leave_hook(void (*hook)(Pfn root));
// Asks every CPU of `cpus` but this one to flush everything and to leave
// `root` if it still runs on it; waits for all. Returns the CPUs that could
// not be asked.
CpuMask ask_to_leave_root(const CpuMask& cpus, Pfn root);

// The root each CPU has loaded (the CR3 it runs on); the load_root verbs
// keep it up to date. Per CPU, since each CPU runs its own address space.
Pfn current_root();
void set_current_root(Pfn root);

// The CPUs that run on pvk's page tables — those that loaded a root through
// load_root (set_current_root) — which a kernel-half change must reach. A
// CPU that runs on the kernel's tables before its first load_root (an AP
// straight from bring-up) is not in it until then.
CpuMask kernel_tlb_cpus();
// Forgets every CPU's root and mailbox (host tests start each case afresh).
void reset_tlb_state();

}  // namespace pvk
