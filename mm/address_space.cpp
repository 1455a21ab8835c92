#include "mm/address_space.h"

#include "base/layout.h"
#include "base/counters.h"
#include "base/lib/kstring.h"
#include "base/abi.h"
#include "base/arch/cpu.h"
#include "base/arch/cross_cpu.h"
#include "base/arch/platform.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/frame_refs.h"
#include "base/lib/fault_inject.h"
#include "mm/kernel_space.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "base/frames/physmap.h"
#include "pvops/call/pvop.h"

namespace pvk {

MmStats g_mm_stats;

void clear_user_page(Pfn frame) {
  const uint64_t t0 = cpu::rdtsc();
  memset(phys_to_virt(frame), 0, kPageSize);
  count_event(g_mm_stats.page_clear_cycles, cpu::rdtsc() - t0);
  count_event(g_mm_stats.pages_cleared);
}

void copy_user_page(Pfn to, Pfn from) {
  const uint64_t t0 = cpu::rdtsc();
  memcpy(phys_to_virt(to), phys_to_virt(from), kPageSize);
  count_event(g_mm_stats.page_copy_cycles, cpu::rdtsc() - t0);
  count_event(g_mm_stats.pages_copied);
}

namespace {

constexpr unsigned kMaxSpaces = 96;
constexpr unsigned kRootCacheSize = 16;

AddressSpace g_spaces[kMaxSpaces];
// Per CPU: the space whose root switch_mm loaded there (its bit is set in
// that space's mask).
AddressSpace* g_loaded[kCpuMaskBits];
MmPolicy g_policy;
Pfn g_zero_page{};
Pfn g_root_cache[kRootCacheSize];
unsigned g_cached_roots = 0;

// Finish a section, keeping the first error.
ErrorOr<void> finish(LazyMmuSection& section, ErrorOr<void> r) {
  auto f = section.finish();
  return r.is_error() ? r : f;
}

// An unmapped user frame's reference goes with the section's TLB flush
// (ctx: the section; LazyMmuSection::put_frame_after_flush says why).
void drop_frame(void* section, VirtAddr, Pte old) {
  static_cast<LazyMmuSection*>(section)->put_frame_after_flush(PVOP(pte_pfn)(old));
}

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

uint64_t pages_of(uint64_t len) { return align_up(len, kPageSize) >> kPageShift; }

// ptshare: the address span of one L1 table, and the fewest mapped leaves a
// table must have for fork to share it rather than copy its leaves. Sharing
// costs two L2 updates at fork and, at the first write, one table copy (a
// whole-table validation under Xen); copying costs an update per leaf. 32
// (1/16 of a table) is the batched backend's queue length: below it a
// per-leaf copy fits in one flush. Tables shared already are always shared
// again (a grandchild), since copying them would mean copying them out first.
constexpr uint64_t kTableSpan = entry_span(Level::L2);
constexpr unsigned kShareMinLeaves = 32;

}  // namespace

void set_mm_policy(const MmPolicy& policy) { g_policy = policy; }
const MmPolicy& mm_policy() { return g_policy; }

namespace {
// This CPU's index in the CpuMasks.
unsigned mask_cpu() {
  const unsigned me = xcpu::this_cpu_id();
  if (me >= kCpuMaskBits) panic("switch_mm: CPU %u beyond the %u a CpuMask holds", me, kCpuMaskBits);
  return me;
}

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
}  // namespace

ErrorOr<void> init_user_mm() {
  set_tlb_leave_hook(&leave_root_here);
  g_zero_page = TRY(frames().try_alloc());
  memset(phys_to_virt(g_zero_page), 0, kPageSize);
  frame_refs().set_immortal(g_zero_page);  // shared by any number of mappings, never freed
  return {};
}

ErrorOr<void> drain_root_cache() {
  while (g_cached_roots) {
    const Pfn root = g_root_cache[--g_cached_roots];
    TRY(PVOP(release_pt_page)(root, Level::L4));
    TRY(frames().try_free(root));
  }
  return {};
}

PteFlags leaf_flags(uint32_t prot) {
  // PROT_NONE: not present, frame kept (ProtNone), so every access faults.
  uint64_t bits = pte_bit::User | (prot ? pte_bit::Present : pte_bit::ProtNone);
  if (prot & vm::Write) bits |= pte_bit::Write;
  if (!(prot & vm::Exec)) bits |= pte_bit::Nx;
  return PteFlags{bits};
}

void AddressSpace::reset() {
  root_ = Pfn{};
  tlb_ = SpaceTlb{};  // no CPU, generation 0
  count_ = 0;
  brk_base_ = brk_end_ = VirtAddr{};
  in_use_ = false;
  shared_tables_up_to_ = VirtAddr{};
}

ErrorOr<AddressSpace*> AddressSpace::try_create() {
  for (AddressSpace& as : g_spaces) {
    if (as.in_use_) continue;
    const Pfn root = TRY(new_root());
    as.reset();  // not in use: nobody else can reach it, no lock needed
    // As the kernel lock's: under TCG a spinning vCPU is a host thread that
    // takes the time the holder's needs (a fault clears or copies a page
    // under the lock), so where the platform says so waiters halt.
    as.lock_.set_wait(g_platform && g_platform->halt_lock_waiters ? LockWait::Halt : LockWait::Spin);
    as.root_ = root;
    as.in_use_ = true;
    return &as;
  }
  return Errno::ENOMEM;
}

ErrorOr<AddressSpace*> AddressSpace::try_fork() {
  AddressSpace* child = TRY(try_create());
  ErrorOr<void> r;
  {
    // The parent's lock: its threads' faults wait while its leaves turn
    // read-only. The child is reachable by nobody yet.
    SpinGuard guard(lock_);
    memcpy(child->vmas_, vmas_, sizeof vmas_);
    child->count_ = count_;
    child->brk_base_ = brk_base_;
    child->brk_end_ = brk_end_;
    // The parent's leaves are write-protected as they are shared: that must
    // not stop halfway (a refused request is sent again), and only the child
    // is undone if the fork fails.
    LazyMmuSection section(root_, tlb_, OnRefusal::Retry);
    shared_tables_up_to_ = VirtAddr{0};
    for (unsigned i = 0; i < count_ && !r.is_error(); ++i) {
      const Vma& v = vmas_[i];
      const ForkMode mode = (v.flags & vm::Shared) ? ForkMode::Share : ForkMode::CopyOnWrite;
      r = g_policy.ptshare ? fork_vma_sharing_tables(*child, v, mode, section)
                           : PVOP(range.fork_range)(root_, child->root_, v.start, v.pages(), mode, section);
    }
    r = finish(section, r);
  }
  if (r.is_error()) {
    must(child->destroy(), "destroy half-forked space");
    return r.error();
  }
  return child;
}

ErrorOr<void> AddressSpace::fork_vma_sharing_tables(AddressSpace& child, const Vma& v, ForkMode mode,
                                                    LazyMmuSection& section) {
  for (VirtAddr at = v.start; at < v.end;) {
    const VirtAddr table = align_down(at, kTableSpan);
    const VirtAddr next = table + kTableSpan < v.end ? table + kTableSpan : v.end;
    // A table that straddles two VMAs was shared with the first of them.
    const bool shared_already = table < v.start && shared_tables_up_to_ > table;
    bool done = shared_already;
    if (!done && table_holds_only_private_memory(table))
      done = TRY(PVOP(range.share_table)(root_, child.root_, table, kShareMinLeaves, section));
    if (done)
      shared_tables_up_to_ = table + kTableSpan;
    else
      TRY(PVOP(range.fork_range)(root_, child.root_, at, (next - at) >> kPageShift, mode, section));
    at = next;
  }
  return {};
}

template <typename Pred>
bool AddressSpace::any_vma_in(VirtAddr start, VirtAddr end, Pred pred) const {
  for (unsigned i = 0; i < count_; ++i)
    if (vmas_[i].start < end && vmas_[i].end > start && pred(vmas_[i])) return true;
  return false;
}

bool AddressSpace::table_holds_only_private_memory(VirtAddr table) const {
  return !any_vma_in(table, table + kTableSpan, [](const Vma& v) { return (v.flags & vm::Shared) != 0; });
}

ErrorOr<void> AddressSpace::destroy() {
  // No thread runs in the space any more (the last one is exiting, or exec
  // replaced it), so no fault can be waiting; the lock orders this teardown
  // after any fault that was still finishing on another CPU.
  SpinGuard guard(lock_);
  // This CPU stops running on the space first. Its root may be gone from
  // CR3 already (the scheduler loaded the kernel's, or exec loaded the new
  // image's): then only the bookkeeping follows.
  if (loaded_mm() == this) {
    if (g_current_root == root_) {
      TRY(switch_to_kernel_mm());
    } else {
      forget_loaded(mask_cpu());
    }
  }
  LazyMmuSection section(root_, tlb_, OnRefusal::Retry);
  auto r = PVOP(range.teardown)(root_, UnmapVisitor{&drop_frame, &section}, section);
  if (!r.is_error()) r = PVOP(range.release_user_tables)(root_, section);
  TRY(finish(section, r));
  // Lazy TLB: CPUs that went idle on this root still have it loaded (and
  // are still in the mask). The root must not be reused or freed under
  // them: they switch to the kernel's root first.
  const CpuMask lazy = tlb_.cpus.snapshot().without(xcpu::this_cpu_id());
  if (!lazy.empty()) {
    const CpuMask refused = ask_to_leave_root(lazy, root_);
    if (!refused.empty())
      panic("address space teardown: CPU %u still runs on root 0x%lx and cannot be asked to leave it", refused.next(0),
            raw(root_));
  }
  count_ = 0;
  in_use_ = false;
  return release_root(root_);
}

const Vma* AddressSpace::find(VirtAddr va) const {
  for (unsigned i = 0; i < count_; ++i)
    if (va >= vmas_[i].start && va < vmas_[i].end) return &vmas_[i];
  return nullptr;
}

ErrorOr<void> AddressSpace::add_vma(const Vma& v) {
  if (count_ == kMaxVmas) return Errno::ENOMEM;
  unsigned i = count_;
  while (i > 0 && vmas_[i - 1].start > v.start) {
    vmas_[i] = vmas_[i - 1];
    --i;
  }
  vmas_[i] = v;
  ++count_;
  return {};
}

ErrorOr<void> AddressSpace::carve(VirtAddr start, VirtAddr end) {
  // Split any VMA straddling start or end so [start, end) is whole VMAs.
  // The slots are checked first: a refused split changes nothing.
  const VirtAddr cuts[2] = {start, end};
  unsigned splits = 0;
  for (VirtAddr cut : cuts)
    for (unsigned i = 0; i < count_; ++i)
      if (cut > vmas_[i].start && cut < vmas_[i].end) ++splits;
  if (count_ + splits > kMaxVmas) return Errno::ENOMEM;
  for (VirtAddr cut : cuts) {
    for (unsigned i = 0; i < count_; ++i) {
      Vma& v = vmas_[i];
      if (cut > v.start && cut < v.end) {
        Vma right = v;
        right.start = cut;
        v.end = cut;
        TRY(add_vma(right));
        break;
      }
    }
  }
  return {};
}

void AddressSpace::merge_neighbours() {
  unsigned out = 0;
  for (unsigned i = 0; i < count_; ++i) {
    if (out && vmas_[out - 1].end == vmas_[i].start && vmas_[out - 1].prot == vmas_[i].prot &&
        vmas_[out - 1].flags == vmas_[i].flags) {
      vmas_[out - 1].end = vmas_[i].end;
      continue;
    }
    vmas_[out++] = vmas_[i];
  }
  count_ = out;
}

ErrorOr<void> AddressSpace::unmap_pages(VirtAddr start, VirtAddr end) {
  LazyMmuSection section(root_, tlb_, OnRefusal::Retry);
  auto r = PVOP(range.unmap)(root_, start, (end - start) >> kPageShift, UnmapVisitor{&drop_frame, &section}, section);
  return finish(section, r);
}

ErrorOr<VirtAddr> AddressSpace::mmap(VirtAddr addr, uint64_t len, uint32_t prot, uint32_t flags, bool fixed) {
  SpinGuard guard(lock_);
  if (len == 0 || (raw(addr) & (kPageSize - 1)) || len > abi::kUserTop) return Errno::EINVAL;
  const uint64_t size = pages_of(len) << kPageShift;
  if (fixed) {
    if (raw(addr) < kPageSize || raw(addr + size) > abi::kUserTop || addr + size < addr) return Errno::EINVAL;
    TRY(munmap_locked(addr, size));
  } else {
    // First gap at or above the mmap base that fits.
    addr = VirtAddr{abi::kUserMmapBase};
    for (unsigned i = 0; i < count_; ++i) {
      const Vma& v = vmas_[i];
      if (v.end <= addr) continue;
      if (v.start >= addr + size) break;
      addr = v.end;
    }
    if (raw(addr + size) > abi::kUserStackTop - abi::kUserStackPages * kPageSize) return Errno::ENOMEM;
  }
  TRY(add_vma(Vma{addr, addr + size, prot, flags}));
  if (flags & vm::Shared) {
    // Shared anonymous memory has no backing object to fault pages in from:
    // every sharer must see the same frames, so they exist from the start.
    if (auto r = populate_shared(addr, size, prot); r.is_error()) {
      must(munmap_locked(addr, size), "undo shared mmap");
      return r.error();
    }
  }
  merge_neighbours();
  return addr;
}

ErrorOr<void> AddressSpace::populate_shared(VirtAddr addr, uint64_t size, uint32_t prot) {
  Pfn chunk[64];
  for (VirtAddr va = addr; va < addr + size;) {
    unsigned n = 0;
    for (; n < 64 && va + n * kPageSize < addr + size; ++n) {
      auto f = frames().try_alloc();
      if (f.is_error()) {
        while (n--) frames().must_free(chunk[n]);
        return f.error();
      }
      chunk[n] = f.value();
      clear_user_page(chunk[n]);
    }
    TRY(map_frames_locked(va, chunk, n, prot));  // on failure it keeps or frees each frame itself
    va = va + n * kPageSize;
  }
  return {};
}

ErrorOr<void> AddressSpace::munmap(VirtAddr addr, uint64_t len) {
  SpinGuard guard(lock_);
  return munmap_locked(addr, len);
}

ErrorOr<void> AddressSpace::munmap_locked(VirtAddr addr, uint64_t len) {
  if ((raw(addr) & (kPageSize - 1)) || len == 0) return Errno::EINVAL;
  if (len > abi::kUserTop) return Errno::EINVAL;  // also keeps the rounding below from wrapping
  const VirtAddr end = addr + (pages_of(len) << kPageShift);
  if (raw(end) > abi::kUserTop || end < addr) return Errno::EINVAL;
  TRY(unshare(addr, end, Coverage::Partial));  // whole shared tables are only let go of
  TRY(carve(addr, end));
  TRY(unmap_pages(addr, end));
  unsigned out = 0;
  for (unsigned i = 0; i < count_; ++i)
    if (vmas_[i].end <= addr || vmas_[i].start >= end) vmas_[out++] = vmas_[i];
  count_ = out;
  return {};
}

ErrorOr<void> AddressSpace::mprotect(VirtAddr addr, uint64_t len, uint32_t prot) {
  SpinGuard guard(lock_);
  if ((raw(addr) & (kPageSize - 1)) || (prot & ~(vm::Read | vm::Write | vm::Exec))) return Errno::EINVAL;
  if (len > abi::kUserTop) return Errno::EINVAL;
  const VirtAddr end = addr + (pages_of(len) << kPageShift);
  if (raw(end) > abi::kUserTop || end < addr) return Errno::EINVAL;
  if (len == 0) return {};
  // Every page of the range must be mapped (Linux: ENOMEM otherwise).
  for (VirtAddr p = addr; p < end;) {
    const Vma* v = find(p);
    if (!v) return Errno::ENOMEM;
    p = v->end;
  }
  // Taking write away keeps whole shared tables shared (their gates are
  // closed already); any other change needs this space's own copies.
  const bool removes_write_only = !any_vma_in(addr, end, [&](const Vma& v) { return (v.prot & ~vm::Write) != prot; });
  // Whether the leaves change only in write (every VMA of the range differs
  // from the new rights in that alone): then the walk is told just that, and
  // can change whole tables at their L2 entry without reading their leaves.
  const bool write_only = !any_vma_in(addr, end, [&](const Vma& v) {
    return (leaf_flags(v.prot).bits ^ leaf_flags(prot).bits) != pte_bit::Write;
  });
  TRY(unshare(addr, end, removes_write_only ? Coverage::Partial : Coverage::All));
  TRY(carve(addr, end));
  for (unsigned i = 0; i < count_; ++i)
    if (vmas_[i].start >= addr && vmas_[i].end <= end) vmas_[i].prot = prot;
  const PteFlags want = leaf_flags(prot);
  const uint64_t managed = pte_bit::Present | pte_bit::ProtNone | pte_bit::Write | pte_bit::Nx;
  const uint64_t changing = write_only ? pte_bit::Write : managed;
  const PteFlags set{want.bits & changing}, clear{~want.bits & changing};
  merge_neighbours();
  LazyMmuSection section(root_, tlb_, OnRefusal::Retry);  // the VMAs already say the new rights
  ErrorOr<void> r;
  if (!g_policy.ptshare) {
    r = PVOP(range.protect)(root_, addr, (end - addr) >> kPageShift, set, clear, section);
    return finish(section, r);
  }
  // ptshare: a whole table whose leaves differ from the new rights only in
  // write changes at its L2 entry — unless shared memory is mapped there: a
  // closed gate over shared frames could only open by making them Cow.
  for (VirtAddr at = addr; at < end && !r.is_error();) {
    const VirtAddr table = align_down(at, kTableSpan);
    const VirtAddr next = table + kTableSpan < end ? table + kTableSpan : end;
    const uint64_t pages = (next - at) >> kPageShift;
    r = table_holds_only_private_memory(table) ? PVOP(range.protect_tables)(root_, at, pages, set, clear, section)
                                               : PVOP(range.protect)(root_, at, pages, set, clear, section);
    at = next;
  }
  return finish(section, r);
}

ErrorOr<void> AddressSpace::unshare(VirtAddr addr, VirtAddr end, Coverage which) {
  if (!g_policy.ptshare) return {};  // no table is ever shared
  LazyMmuSection section(root_, tlb_, OnRefusal::Fail);
  return finish(section, PVOP(range.unshare)(root_, addr, (end - addr) >> kPageShift, which, section));
}

LeafRights AddressSpace::leaf_rights_in_table(VirtAddr table) const {
  const bool read_only_vma = any_vma_in(table, table + kTableSpan, [](const Vma& v) { return !(v.prot & vm::Write); });
  return read_only_vma ? LeafRights::Reduced : LeafRights::Trusted;
}

ErrorOr<VirtAddr> AddressSpace::brk(VirtAddr new_end) {
  SpinGuard guard(lock_);
  if (raw(new_end) == 0 || new_end < brk_base_ || raw(new_end) > abi::kUserTop - kPageSize) return brk_end_;
  const VirtAddr old_top = align_up(brk_end_, kPageSize), new_top = align_up(new_end, kPageSize);
  if (new_top > old_top) {
    for (unsigned i = 0; i < count_; ++i)  // would run into another mapping
      if (vmas_[i].start < new_top && vmas_[i].end > old_top) return brk_end_;
    Vma* heap = nullptr;
    for (unsigned i = 0; i < count_; ++i)
      if ((vmas_[i].flags & vm::Heap) && vmas_[i].end == old_top) heap = &vmas_[i];
    if (heap)
      heap->end = new_top;
    else if (add_vma(Vma{old_top, new_top, vm::Read | vm::Write, vm::Heap}).is_error())
      return brk_end_;
  } else if (new_top < old_top) {
    if (munmap_locked(new_top, old_top - new_top).is_error()) return brk_end_;
  }
  brk_end_ = new_end;
  return brk_end_;
}

ErrorOr<void> AddressSpace::map_frames(VirtAddr addr, const Pfn* frames_in, uint64_t count, uint32_t prot) {
  SpinGuard guard(lock_);
  return map_frames_locked(addr, frames_in, count, prot);
}

ErrorOr<void> AddressSpace::map_frames_locked(VirtAddr addr, const Pfn* frames_in, uint64_t count, uint32_t prot) {
  for (uint64_t i = 0; i < count; ++i) frame_refs().set(frames_in[i], 1);
  LazyMmuSection section(root_, tlb_, OnRefusal::Fail);  // what was not mapped is read back and undone
  auto r = finish(section, PVOP(range.map)(root_, addr, count, FrameSource{frames_in, {}}, leaf_flags(prot)));
  if (r.is_error()) {
    // The frames that made it into the tables belong to the space now (its
    // munmap drops them); the others go back.
    for (uint64_t i = 0; i < count; ++i) {
      auto e = PVOP(range.lookup)(root_, addr + i * kPageSize);
      if (e.is_error() || PVOP(pte_pfn)(e.value()) != frames_in[i]) {
        frame_refs().set(frames_in[i], 0);
        frames().must_free(frames_in[i]);
      }
    }
  }
  return r;
}

FaultOutcome AddressSpace::handle_fault(VirtAddr va, Access access, EntryHint hint) {
  // A write to a page that is not there most likely needs a fresh frame:
  // taken and cleared before the lock, so the clearing (most of such a
  // fault's time) of several threads' faults overlaps instead of queueing
  // behind the lock. Not while fail= is armed: its schedule stays as it was.
  SpareFrame spare;
  if (access == Access::Write && hint == EntryHint::NotPresent && !fault_inject_armed()) {
    if (auto f = frames().try_alloc(); !f.is_error()) {
      spare = {f.value(), true};
      clear_user_page(spare.pfn);
    }
  }
  FaultOutcome out = FaultOutcome::handled();
  {
    // Serialises this fault with the space's other faults (threads on other
    // CPUs, perhaps on the same page: the second finds the entry the first
    // made and only flushes) and with every change of its VMAs and tables.
    SpinGuard guard(lock_);
    out = handle_fault_locked(va, access, spare);
  }
  // Unused: another thread's fault mapped the page first, or the fault
  // turned out not to need a frame (or not to be allowed).
  if (spare.valid) frames().must_free(spare.pfn);
  return out;
}

FaultOutcome AddressSpace::handle_fault_locked(VirtAddr va, Access access, SpareFrame& spare) {
  count_event(g_mm_stats.page_faults);
  const bool write = access == Access::Write;
  const Vma* v = find(va);
  if (!v || !v->prot || (write && !(v->prot & vm::Write))) return FaultOutcome::bad_access();
  // An instruction fetch from memory without PROT_EXEC: the leaf carries NX,
  // so treating it as a stale translation would fault again forever.
  if (access == Access::Execute && !(v->prot & vm::Exec)) return FaultOutcome::bad_access();
  const VirtAddr page = align_down(va, kPageSize);
  const PteFlags flags = leaf_flags(v->prot);
  if (write && g_policy.ptshare) {
    // The L2 entry above may be a closed gate (a table shared since fork, or
    // one this space alone holds again): copy or open it first, in its own
    // section, so the leaf decision below reads the table as it now is.
    LazyMmuSection gate(root_, tlb_, OnRefusal::Fail);
    auto opened = finish(gate, PVOP(range.open_for_write)(root_, page,
                                                          leaf_rights_in_table(align_down(page, kTableSpan)), gate));
    if (opened.is_error()) return FaultOutcome::out_of_memory(opened.error());
  }
  auto pte = PVOP(range.lookup)(root_, page);

  // A fault only grants access, so a refused update is not retried: the
  // tables are read back afterwards and say whether the new frame made it.
  LazyMmuSection section(root_, tlb_, OnRefusal::Fail);
  ErrorOr<void> r;
  Pfn fresh{};          // a frame this fault took, if any
  Pfn replaced{};       // the shared frame a copy replaces (copied = true)
  bool took = false, copied = false;
  if (pte.is_error()) {
    if (!write && !(v->flags & vm::Shared) && g_policy.zero_page) {
      count_event(g_mm_stats.zero_page_maps);
      r = PVOP(range.remap)(root_, page, g_zero_page, flags.without(pte_bit::Write).with(pte_bit::Cow), section);
    } else {
      if (spare.valid) {
        fresh = spare.pfn;  // cleared already
        spare.valid = false;
      } else {
        auto f = frames().try_alloc();
        if (f.is_error()) {
          must(section.finish(), "fault section");
          return FaultOutcome::out_of_memory(f.error());
        }
        fresh = f.value();
        clear_user_page(fresh);
      }
      took = true;
      frame_refs().set(fresh, 1);
      r = PVOP(range.remap)(root_, page, fresh, flags, section);
    }
  } else if (write && pte_has(pte.value(), pte_bit::Cow)) {
    const Pfn old = PVOP(pte_pfn)(pte.value());
    if (old != g_zero_page && frame_refs().get(old) == 1) {
      r = PVOP(range.remap)(root_, page, old, flags, section);  // the last sharer keeps it
    } else {
      auto f = frames().try_alloc();
      if (f.is_error()) {
        must(section.finish(), "fault section");
        return FaultOutcome::out_of_memory(f.error());
      }
      fresh = f.value(), took = true, replaced = old, copied = true;
      // The zero page's copy is a cleared frame: a memset writes one page
      // where a copy would also read the zero page's (issue 14, seed 001).
      if (old == g_zero_page)
        clear_user_page(fresh);
      else
        copy_user_page(fresh, old);
      frame_refs().set(fresh, 1);
      r = PVOP(range.remap)(root_, page, fresh, flags, section);
    }
  } else if (write && !pte_has(pte.value(), pte_bit::Write)) {
    r = PVOP(range.remap)(root_, page, PVOP(pte_pfn)(pte.value()), flags, section);
  } else {
    section.invalidate(page);  // a stale translation: the entry already allows it
  }
  r = finish(section, r);
  if (!took) return r.is_error() ? FaultOutcome::out_of_memory(r.error()) : FaultOutcome::handled();
  const auto now = PVOP(range.lookup)(root_, page);
  if (now.is_error() || PVOP(pte_pfn)(now.value()) != fresh) {
    frame_refs().set(fresh, 0);  // never referenced by an entry: give it back
    frames().must_free(fresh);
    return FaultOutcome::out_of_memory(r.is_error() ? r.error() : Errno::ENOMEM);
  }
  if (copied) {
    count_event(g_mm_stats.cow_copies);
    if (frame_refs().dec(replaced) == 0) frames().must_free(replaced);
  }
  return FaultOutcome::handled();
}

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
