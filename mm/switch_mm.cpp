// Which address space each CPU runs on: switch_mm and its lazy TLB
// bookkeeping (the CpuMasks, the lazy bits, the generation catch-up), and
// the leave hook a dying root's shootdown runs on CPUs still on it.
#include "mm/address_space.h"

#include "base/counters.h"
#include "base/arch/cross_cpu.h"
#include "mm/address_space_parts.h"
#include "mm/kernel_space.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "pvops/call/pvop.h"

namespace pvk {
namespace {

// Per CPU: the space whose root switch_mm loaded there (its bit is set in
// that space's mask).
AddressSpace* g_loaded[kCpuMaskBits];

}  // namespace

using namespace space;

namespace space {

// A lazy CPU asked to leave a root that is going away (pvops' leave hook,
// run on that CPU from its shootdown handler).
void leave_root_here(Pfn root) {
  AddressSpace* as = loaded_mm();
  if (as && as->root() == root) {
    must(switch_to_kernel_mm(), "leave a dying root");
  } else if (g_current_root == root) {
    must(PVOP(load_root)(kernel_root()), "leave a dying root");
  }
}

}  // namespace space

void AddressSpace::forget_loaded(unsigned cpu, AddressSpace* staying) {
  AddressSpace* prev = g_loaded[cpu];
  if (prev && prev != staying) prev->tlb_.cpus.clear(cpu);
  g_loaded[cpu] = staying;
  if (!staying) clear_tlb_lazy(cpu);  // no user root of switch_mm's left here
}

// A switch to a task without a space: the loaded root stays (the kernel
// half is in every root) and so does this CPU's bit in its space's mask,
// but the CPU is lazy now — flushes of the space that free no tables may
// skip it (pvops/tlb/tlb_shootdown.h). Nothing here needs ordering: until the
// bit is seen, flushes still come, which is only more than needed.
void AddressSpace::go_lazy(unsigned cpu) {
  const AddressSpace* as = g_loaded[cpu];
  if (as && g_current_root == as->root_) set_tlb_lazy(cpu);
}

// Back on the space this CPU kept loaded: no root load (Linux skips the
// CR3 write too), but if the CPU was lazy it may have been skipped by
// flushes meanwhile. It publishes that it is no longer lazy *before* it
// reads the generation, with a full fence between: a sender bumps the
// generation, fences and then reads the lazy bits, so either the sender
// sees this CPU not lazy (and flushes it) or this CPU sees the sender's
// generation (and flushes everything below) — Dekker's pattern, never
// neither. From the clear on, every flush reaches this CPU.
ErrorOr<void> AddressSpace::return_from_lazy(unsigned cpu) {
  if (!tlb_lazy(cpu)) return {};
  clear_tlb_lazy(cpu);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  const uint64_t gen = read_tlb_gen(tlb_);
  if (lazy_catch_up(gen, tlb_flushed_to(tlb_, cpu)) == CatchUp::FlushAll) {
    PVOP(flush_tlb_all)();  // outside a lazy-MMU section: done on return
    count_event(g_mmu_counters.tlb_lazy_catchups);
    note_tlb_flushed(tlb_, cpu, gen);
  }
  return {};
}

ErrorOr<void> switch_mm(AddressSpace* next) {
  const unsigned me = mask_cpu();
  if (!next) {
    AddressSpace::go_lazy(me);
    return {};
  }
  if (g_loaded[me] == next && g_current_root == next->root_) return next->return_from_lazy(me);
  // Join before the load: a shootdown of next issued from now on reaches
  // this CPU, and whatever this CPU caches from the load on is covered.
  // Not lazy from here (the previous space's root is still loaded until the
  // load below: its flushes reach this CPU again, which is only more). The
  // generation read after the fence is one the load covers: every write of
  // the flushes up to it came before its bump, and the load flushes the TLB.
  next->tlb_.cpus.set(me);
  clear_tlb_lazy(me);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  const uint64_t gen = read_tlb_gen(next->tlb_);
  TRY(PVOP(load_root)(next->root_));
  note_tlb_flushed(next->tlb_, me, gen);
  // Leave the previous space only once its root is no longer loaded here.
  AddressSpace::forget_loaded(me, next);
  return {};
}

ErrorOr<void> switch_to_kernel_mm() {
  const unsigned me = mask_cpu();
  if (g_current_root != kernel_root()) TRY(PVOP(load_root)(kernel_root()));
  AddressSpace::forget_loaded(me);
  return {};
}

AddressSpace* loaded_mm() {
  const unsigned me = xcpu::this_cpu_id();
  return me < kCpuMaskBits ? g_loaded[me] : nullptr;
}

}  // namespace pvk
