// A user address space: a root page table (whose kernel half is shared with
// every other root) and the VMAs describing what the user half may hold.
// Anonymous memory is demand-paged; fork shares frames copy-on-write; all
// page-table work goes through the pvops range operations inside lazy-MMU
// sections, so each backend decides how the writes travel.
//
// SMP: each space has its own lock (rank Mm, inside the kernel lock, outside
// the frame allocator's). Page faults take only it — they run without the
// kernel lock, several CPUs at once — so every path that changes the space's
// page tables or VMAs takes it too (mmap, munmap, mprotect, brk, fork,
// map_frames, teardown; those also hold the kernel lock), and a fault can
// never see a VMA or a table half changed. Faults of two threads of one
// space take turns; faults in different spaces run side by side, sharing
// only frames (reference counts are atomic, base/frames/frame_refs.h).
#pragma once
#include "base/lib/cpumask.h"
#include "base/lib/error_or.h"
#include "base/lib/spinlock.h"
#include "mm/page_source.h"
#include "pvops/mmu_ops.h"

namespace pvk {

namespace vm {
inline constexpr uint32_t Read = 1, Write = 2, Exec = 4;  // = PROT_READ/WRITE/EXEC
inline constexpr uint32_t Shared = 1, Heap = 2, Stack = 4;
}  // namespace vm

struct Vma {
  VirtAddr start;  // page aligned
  VirtAddr end;    // exclusive, page aligned
  uint32_t prot;   // vm::Read | vm::Write | vm::Exec
  uint32_t flags;  // vm::Shared, vm::Heap, vm::Stack
  PageSource source = {};  // file-backed (private): where its pages come from
  uint64_t pages() const { return (end - start) >> kPageShift; }
};

// What a page fault came to, and the error behind it: Ok when Handled,
// EFAULT for a BadAccess, and for OutOfMemory what failed (ENOMEM when no
// frame was free, or the error of the page-table update that did not stick).
struct FaultOutcome {
  enum Kind : uint8_t { Handled, BadAccess, OutOfMemory };
  Kind kind;
  Errno error;
  constexpr FaultOutcome(Kind k, Errno e = Errno::Ok) : kind(k), error(e) {}
  constexpr bool operator==(Kind k) const { return kind == k; }
  static constexpr FaultOutcome handled() { return {Handled, Errno::Ok}; }
  static constexpr FaultOutcome bad_access() { return {BadAccess, Errno::EFAULT}; }
  static constexpr FaultOutcome out_of_memory(Errno why) { return {OutOfMemory, why}; }
};
// What the faulting access tried to do (from the page-fault error code).
enum class Access : uint8_t { Read, Write, Execute };
// What the error code says of the entry: not present (a write will most
// likely need a fresh frame), or nothing known.
enum class EntryHint : uint8_t { Unknown, NotPresent };

// Boot-time policy switches (zero_page=, pgd_cache=).
struct MmPolicy {
  bool zero_page = true;
  bool pgd_cache = true;
  // ptshare=on: fork shares whole L1 tables behind read-only L2 entries
  // (copied on the first write through them), and mprotect of whole tables
  // changes the L2 entry instead of 512 leaves.
  bool ptshare = false;
  // file_map=demand: file-backed VMAs (exec's segments, mmap of a file) are
  // demand-paged, a read fault mapping the aligned window of fault_around
  // pages around it (a power of two, 1..512; Linux's default is 16). Off
  // (eager): every page the file has is mapped when the VMA is made.
  bool file_demand = false;
  unsigned fault_around = 16;
};
void set_mm_policy(const MmPolicy& policy);
const MmPolicy& mm_policy();
ErrorOr<void> init_user_mm();  // the zero page
// Frees the cached roots (before a leak check).
ErrorOr<void> drain_root_cache();

// The fields are the PVK_MM_COUNTER lines of base/counters.inc.
struct MmStats {
#define PVK_MM_COUNTER(name) uint64_t name = 0;
#include "base/counters.inc"
};
extern MmStats g_mm_stats;

// Zeroing / copying a user page's frame, each timed with the TSC into
// page_clear_cycles / page_copy_cycles (and counted), so a fault's time can be
// split into the fault path and the memset it contains (seed 001: ~900 cycles
// of fault path, ~1,400 of clearing, on a Pentium-M).
void clear_user_page(Pfn frame);
void copy_user_page(Pfn to, Pfn from);

inline constexpr LockClass kAddressSpaceLockClass{"address_space", LockRank::Mm, LockStat::address_space};

class AddressSpace {
 public:
  static constexpr unsigned kMaxVmas = 64;
  // Pages a file-backed VMA's mapping takes from its source per section.
  static constexpr unsigned kSourceChunk = 64;

  static ErrorOr<AddressSpace*> try_create();
  ErrorOr<AddressSpace*> try_fork();
  // Unmaps everything and gives the root back (to the cache if enabled).
  ErrorOr<void> destroy();

  // Anonymous mappings, or private mappings of a page source (a file:
  // demand-paged from it, copy-on-write; the new VMA holds the source).
  // mmap places the region itself unless fixed. Addresses are VirtAddr,
  // lengths byte counts; the syscall layer converts the user's register
  // values at its boundary.
  ErrorOr<VirtAddr> mmap(VirtAddr addr, uint64_t len, uint32_t prot, uint32_t flags, bool fixed,
                         PageSource source = {});
  ErrorOr<void> munmap(VirtAddr addr, uint64_t len);
  ErrorOr<void> mprotect(VirtAddr addr, uint64_t len, uint32_t prot);
  ErrorOr<VirtAddr> brk(VirtAddr new_end);
  void set_brk_base(VirtAddr base) { brk_base_ = brk_end_ = base; }

  // Maps frames the caller filled (program loading); they become this
  // space's (reference count 1 each). On failure the frames that were not
  // mapped are freed; the caller only unmaps the range.
  ErrorOr<void> map_frames(VirtAddr addr, const Pfn* frames, uint64_t count, uint32_t prot);

  FaultOutcome handle_fault(VirtAddr va, Access access, EntryHint hint = EntryHint::Unknown);
  // The VMA containing va, or null (inline: the fault path's first step).
  const Vma* find(VirtAddr va) const {
    for (unsigned i = 0; i < count_; ++i)
      if (va >= vmas_[i].start && va < vmas_[i].end) return &vmas_[i];
    return nullptr;
  }
  Pfn root() const { return root_; }
  // The CPUs that may cache this space's translations (Linux's
  // mm_cpumask): set by switch_mm when a CPU loads the root, cleared when
  // that CPU loads another space's. A CPU that goes idle keeps the root
  // loaded and stays in it, lazily (pvops/tlb/tlb_shootdown.h): the space's
  // flushes skip it unless they free page tables, and it catches up
  // through the space's TLB generation when it comes back.
  const CpuMask& cpus() const { return tlb_.cpus; }
  // The mask with the generations (what the space's sections carry).
  const SpaceTlb& tlb() const { return tlb_; }
  unsigned vma_count() const { return count_; }
  const Vma& vma(unsigned i) const { return vmas_[i]; }

 private:
  // The public operations take lock_ and call these (which expect it held),
  // so an operation made of others (mmap over a fixed range, brk shrinking)
  // takes it once.
  ErrorOr<void> munmap_locked(VirtAddr addr, uint64_t len);
  // mprotect compiled once per page-table encoding (pick_encoding_copy,
  // pvops/call/pvop.h), so that natively each inlines its own encoding's
  // protect walk as the compiled-in image does: mprotect_attrs and
  // mprotect_flags, each a function of its own with its own registers.
  template <PteAccess E>
  ErrorOr<void> mprotect_in(VirtAddr addr, uint64_t len, uint32_t prot);
  ErrorOr<void> mprotect_attrs(VirtAddr addr, uint64_t len, uint32_t prot);
  ErrorOr<void> mprotect_flags(VirtAddr addr, uint64_t len, uint32_t prot);
  // A cleared frame handle_fault took before the lock; the locked part maps
  // it (and clears valid) if the page needs a fresh frame.
  struct SpareFrame {
    Pfn pfn{};
    bool valid = false;
  };
  FaultOutcome handle_fault_locked(VirtAddr va, Access access, SpareFrame& spare);
  // A not-present page of a file-backed VMA whose source has a frame for
  // it (mm/source_fault.cpp); false: the source has none, map zeros.
  bool fault_from_source(const Vma& v, VirtAddr page, bool write, SpareFrame& spare, FaultOutcome& out);
  // Maps what v's source has of [lo, hi) (at most kSourceChunk pages of
  // it), copy-on-write, in one lazy-MMU section; skip_mapped leaves pages
  // this space maps already. On error, what did not stick is given back.
  ErrorOr<void> map_source_pages(const Vma& v, VirtAddr lo, VirtAddr hi, bool skip_mapped);
  // file_map=eager: every page of a fresh file-backed VMA the source has.
  ErrorOr<void> populate_from_source(const Vma& v);
  // Drops the VMAs' holds on their sources (teardown).
  void drop_sources();
  ErrorOr<void> map_frames_locked(VirtAddr addr, const Pfn* frames, uint64_t count, uint32_t prot);
  // Everything but the lock, as a fresh space has it.
  void reset();
  ErrorOr<void> add_vma(const Vma& v);
  ErrorOr<void> carve(VirtAddr start, VirtAddr end);  // split VMAs at both ends
  void merge_neighbours();  // join touching VMAs with equal rights and kind
  ErrorOr<void> populate_shared(VirtAddr addr, uint64_t size, uint32_t prot);
  ErrorOr<void> unmap_pages(VirtAddr start, VirtAddr end);
  // fork under ptshare: whole tables of private memory are shared, the rest
  // copied leaf by leaf.
  ErrorOr<void> fork_vma_sharing_tables(AddressSpace& child, const Vma& v, ForkMode mode, LazyMmuSection& section);
  // Whether a VMA overlapping [start, end) satisfies pred.
  template <typename Pred>
  bool any_vma_in(VirtAddr start, VirtAddr end, Pred pred) const;
  bool table_holds_only_private_memory(VirtAddr table) const;
  // Copies out shared tables the next change of [addr, end) would write into.
  ErrorOr<void> unshare(VirtAddr addr, VirtAddr end, Coverage which);
  LeafRights leaf_rights_in_table(VirtAddr table) const;

  // switch_mm's bookkeeping: CPU `cpu` no longer runs the space it loaded
  // last (unless that is `staying`), whose mask it leaves.
  static void forget_loaded(unsigned cpu, AddressSpace* staying = nullptr);
  static void go_lazy(unsigned cpu);
  ErrorOr<void> return_from_lazy(unsigned cpu);
  friend ErrorOr<void> switch_mm(AddressSpace* next);
  friend ErrorOr<void> switch_to_kernel_mm();

  Spinlock lock_{kAddressSpaceLockClass};
  Pfn root_{};
  SpaceTlb tlb_;
  Vma vmas_[kMaxVmas] = {};
  unsigned count_ = 0;
  VirtAddr brk_base_{};
  VirtAddr brk_end_{};
  bool in_use_ = false;
  VirtAddr shared_tables_up_to_{};  // during try_fork: the end of the last table shared
};

// Makes `next` the address space this CPU runs on: its root is loaded
// through pvops (load_root) and the CpuMasks follow — this CPU joins next's
// before the load and leaves the previous space's after it, so no shootdown
// of either can miss it. Null next is a lazy switch: the loaded root stays
// (a kernel-only task needs only the kernel half), as does the mask bit,
// and the CPU is marked lazy. Back to the space still loaded: no reload,
// and a full local flush if flushes skipped the CPU meanwhile.
ErrorOr<void> switch_mm(AddressSpace* next);
// This CPU leaves the space it runs on for the kernel's root (a CPU that
// must stop holding a root: the space is going away, or a test is done).
ErrorOr<void> switch_to_kernel_mm();
// The space switch_mm last loaded on this CPU (null: none, or the kernel's).
AddressSpace* loaded_mm();

}  // namespace pvk
