// TLB shootdown: making other CPUs drop translations this CPU changed.
//
// The mm says which CPUs may cache an address space's translations (a
// CpuMask per address space, pvk's mm_cpumask); a lazy-MMU section gathers
// the invalidations of its work (pvops/tlb/lazy_mmu_section.h) and, when it is
// drained, flushes this CPU and hands the other CPUs of the mask to the
// backend's flush_tlb_multi verb (Linux's name) once — one shootdown per
// section, never one per entry.
//
// How a backend reaches the other CPUs:
//  - native: a cross-CPU request (base/arch/cross_cpu.h, Ipi::TlbFlush) to
//    each target, which reads this CPU's mailbox, flushes locally and
//    acknowledges; the sender spins (polling its own requests) until all did.
//  - Xen PV, shootdown=hypercall: one MMUEXT_INVLPG_MULTI (a single page) or
//    MMUEXT_TLB_FLUSH_MULTI (more) with a vCPU bitmap, queued behind the
//    section's updates so they travel in the same multicall; Xen flushes the
//    targets.
//  - Xen PV, shootdown=ipi: as native, over event channels, with the
//    targets flushing through MMUEXT_*_LOCAL.
#pragma once
#include "base/arch/cross_cpu.h"
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

// Lazy TLB (Linux's cpu_tlbstate_shared.is_lazy and tlb_gen). A CPU that
// switches to a task without a space (the idle loop, a kernel-only task)
// keeps the last user root loaded and stays in that space's CPU mask, but
// is *lazy*: it runs no user code, so a flush of the space that frees no
// page tables may skip it. It catches up when it switches back to that
// space: every flush of the space bumps the space's generation, each CPU
// notes the generation its TLB is known to reflect, and a CPU that comes
// back behind flushes everything locally before it runs user code again.
// A flush that frees page-table pages still reaches lazy CPUs: the
// hardware may walk the loaded root speculatively at any time, and a
// paging-structure cache entry pointing into a freed (reused) table would
// load garbage translations.
//
// One address space's TLB bookkeeping, kept by mm and carried by the
// space's lazy-MMU sections (Linux's mm_cpumask, mm->context.tlb_gen and,
// per CPU, cpu_tlbstate.ctxs[].tlb_gen — here kept in the space, one slot
// per CPU, since pvk has no ASIDs).
struct SpaceTlb {
  // The CPUs that may cache the space's translations (lazy ones included).
  CpuMask cpus;
  // Bumped (atomically) by every drain of a section that invalidated
  // user translations of the space.
  uint64_t gen = 0;
  // Per CPU: every change up to this generation is gone from that CPU's
  // TLB. Only ever raised; meaningful while the CPU is in `cpus`.
  uint64_t flushed[kCpuMaskBits] = {};
};

// This CPU's lazy bit: set when it keeps a user root loaded without running
// it, cleared when it runs a user space again or leaves for the kernel's
// root. Only the CPU itself changes its bit; senders read the whole mask.
void set_tlb_lazy(unsigned cpu);
void clear_tlb_lazy(unsigned cpu);
bool tlb_lazy(unsigned cpu);
CpuMask lazy_tlb_cpus();

// Whether the page tables a section frees go with its flush (see above).
enum class TablesFreed : uint8_t { No, Yes };
// The CPUs a flush of a space must reach besides `me`: the space's CPUs,
// less the lazy ones unless page tables were freed.
CpuMask shootdown_targets(const CpuMask& space_cpus, const CpuMask& lazy, unsigned me, TablesFreed freed);

// What a CPU coming back from lazy mode to the space it kept loaded must
// do: nothing if its TLB reflects the space's current generation, else a
// full local flush (it may have been skipped by any number of flushes,
// whose pages nobody kept).
enum class CatchUp : uint8_t { Nothing, FlushAll };
constexpr CatchUp lazy_catch_up(uint64_t space_gen, uint64_t flushed_gen) {
  return flushed_gen < space_gen ? CatchUp::FlushAll : CatchUp::Nothing;
}

// The generation operations (all atomic). bump_tlb_gen is a sequentially
// consistent read-modify-write and returns the new generation.
uint64_t bump_tlb_gen(SpaceTlb& tlb);
uint64_t read_tlb_gen(const SpaceTlb& tlb);
// The generation `cpu`'s slot says its TLB reflects.
uint64_t tlb_flushed_to(const SpaceTlb& tlb, unsigned cpu);
// `cpu`'s TLB reflects everything up to `gen` (it flushed all after reading
// it): raise its slot to gen.
void note_tlb_flushed(SpaceTlb& tlb, unsigned cpu, uint64_t gen);
// `cpu` ran the flush of generation `gen` (only that flush's pages): its
// slot moves to gen only if it was at gen - 1 — had it missed an earlier
// flush (skipped while lazy), a later partial one must not hide that.
void advance_tlb_flushed(SpaceTlb& tlb, unsigned cpu, uint64_t gen);

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
// Inline: every lazy-MMU section's drain asks (a call was 12 instructions).
extern Pfn g_current_roots[kCpuMaskBits];
inline Pfn current_root() {
  const unsigned cpu = xcpu::this_cpu_id();
  return cpu < kCpuMaskBits ? g_current_roots[cpu] : Pfn{};
}
void set_current_root(Pfn root);

// The CPUs that run on pvk's page tables — those that loaded a root through
// load_root (set_current_root) — which a kernel-half change must reach. A
// CPU that runs on the kernel's tables before its first load_root (an AP
// straight from bring-up) is not in it until then.
CpuMask kernel_tlb_cpus();
// Forgets every CPU's root and mailbox (host tests start each case afresh).
void reset_tlb_state();

}  // namespace pvk
