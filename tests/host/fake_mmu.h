// A fake MMU backend for host tests of the shared page walk and LazyMmuSection.
//
// "RAM" is an in-memory arena of 4 KiB frames; g_physmap_offset points at it
// so phys_to_virt(Pfn{k}) is frame k, and frames() hands out its frames
// (frame 0 reserved). The arena sits at the start of a large PROT_NONE
// reservation: entries hold "machine" frame numbers mfn = pfn + kMfnOffset,
// so a walk that took an entry's frame field for a pfn (instead of asking
// P::pfn_of) would touch the guard region and crash, not pass by accident.
//
// FakePolicy satisfies MmuPolicy. Every store is logged and checked against
// what the fake knows about page-table frames (prepared at which level, still
// live, not free). With defer_l1, L1 stores made inside a lazy-MMU section
// are queued and only reach memory at flush/leave — Xen's batched semantics —
// which proves the walk never depends on reading back an L1 entry it wrote in
// the same section; upper levels are always immediate (the MmuPolicy rule).
//
// A retired table must be empty; a retired root (L4) only in its user half,
// since every root shares the kernel half's entries.
//
// A table may have several parents: every root hooks the kernel's L3 tables,
// and with ptshare=on one L1 table can sit under several L2 entries (in one
// or several address spaces). The fake counts, from every upper-level store
// (the entry it replaces and the one it writes) and every retired upper
// table, how many upper entries reference each table frame (uppers()). A
// store into an L1 table referenced by more than one L2 entry (immediate,
// queued or applied from the queue, a modify_prot_start/commit included)
// changes what every sharer sees and is a violation; so is retiring a table
// that an upper entry still references.
//
// Problems the fake detects are collected in violations() rather than
// failing on the spot, so a test can also assert that one happened;
// FakeMmuTest::TearDown fails the test if any are left.
#pragma once
#include "host_compat.h"
#include <stdint.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pvops/mmu_policy.h"
#include "pvops/mmu_ops.h"

namespace pvk::test {

// pfn -> "mfn" offset used in entries. 4 GiB worth of frames: well past the
// arena, inside the guard reservation.
inline constexpr uint64_t kMfnOffset = 0x100000;
// make_table() marks its entries with this software-available bit (ignored
// by the MMU in table entries), so the fake can tell a table entry built by
// make_table() from a leaf built by make(), and check each level got the
// right one. It must be a bit mm never puts in a leaf: bits 9 and 10 are its
// Cow and ProtNone markers, so one of the high available bits.
inline constexpr uint64_t kTableMarker = uint64_t{1} << 52;
static_assert((kTableMarker & (pte_bit::FrameMask | pte_bit::Cow | pte_bit::ProtNone | pte_bit::Nx)) == 0);

enum class Ev : uint8_t {
  Store,         // an entry store (commit of a protect included); deferred ones are queued
  Apply,         // a queued L1 store reaching memory at flush/leave
  ProtStart,     // modify_prot_start
  PrepareTable,  // prepare_table (alloc_pt_page)
  RetireTable,   // retire_table (release_pt_page)
  FlushOne,
  FlushAll,
  LazyEnter,
  LazyFlush,
  LazyLeave,
  LoadRoot,
  FlushMulti,  // flush_tlb_multi: cpus and info below
};
const char* ev_name(Ev e);

struct MmuEvent {
  Ev kind;
  Pfn table{};         // Store/Apply/ProtStart: frame holding the slot; table hooks, LoadRoot: the frame
  unsigned index = 0;  // slot index in its table
  uint64_t value = 0;  // raw entry value written
  Level level = Level::L1;
  VirtAddr va{};          // FlushOne
  bool deferred = false;  // Store: queued, not yet in memory
  CpuMask cpus{};         // FlushMulti: the targets
  TlbFlushInfo info{};    // FlushMulti: what they were asked to drop
};

struct FakeConfig {
  uint64_t frames = 2048;
  PteAccess access = PteAccess::Attrs;
  bool defer_l1 = false;
};

struct FakePolicy {
  static ErrorOr<void> store(Pte* slot, Pte v, Level level);
  static Pte modify_prot_start(Pte* slot);
  static ErrorOr<void> modify_prot_commit(Pte* slot, Pte old, Pte v);
  static Pte make(Pfn pfn, PteFlags flags);
  static Pte make_table(Pfn pfn);
  static Pfn pfn_of(Pte e);
  static ErrorOr<void> prepare_table(Pfn pfn, Level level);
  static ErrorOr<void> retire_table(Pfn pfn, Level level);
  static ErrorOr<void> flush_queue();
  static constexpr bool kTableHints = false;
  static ErrorOr<void> begin_table(Pte*, VirtAddr, unsigned) { return {}; }
  static Pte l2_entry(const Pte* slot) { return *slot; }
};
static_assert(MmuPolicy<FakePolicy>);

// The pvops table of the fake: make_mmu_ops<FakePolicy> plus the fake's
// lazy-MMU, TLB and root hooks.
MmuOps make_fake_ops(PteAccess access);

class FakeMmu {
 public:
  // Fresh RAM (zeroed), allocator, logs and g_mmu / g_current_root.
  void reset(const FakeConfig& config);
  const FakeConfig& config() const { return config_; }

  // A new empty root, prepared as an L4 table.
  Pfn new_root();

  // An independent walk (not PageWalk's): the entry at `level` covering va,
  // or nullptr if a table above it is missing.
  Pte* slot(Pfn root, VirtAddr va, Level level);
  Pte* table(Pfn pfn);  // frame pfn of the arena as a table
  bool in_arena(Pfn pfn) const { return raw(pfn) < config_.frames; }

  // Page-table frames the fake considers live (prepared, not retired).
  bool is_table(Pfn pfn) const { return tables_.count(raw(pfn)) != 0; }
  Level table_level(Pfn pfn) const { return tables_.at(raw(pfn)); }
  size_t table_count() const { return tables_.size(); }
  size_t table_count(Level level) const;
  // How many upper-level entries (in live tables) reference table frame pfn.
  unsigned uppers(Pfn pfn) const {
    auto it = uppers_.find(raw(pfn));
    return it == uppers_.end() ? 0 : it->second;
  }

  const std::vector<MmuEvent>& events() const { return events_; }
  std::vector<MmuEvent> events(Ev kind) const;
  size_t count(Ev kind) const;
  void clear_events() { events_.clear(); }

  size_t pending() const { return queue_.size(); }
  int lazy_depth() const { return lazy_depth_; }
  uint64_t pte_flags_calls() const { return pte_flags_calls_; }

  std::vector<std::string>& violations() { return violations_; }

  // Fault injection: called before a Store, PrepareTable or RetireTable takes
  // effect; returning anything but Errno::Ok makes that hook fail with it.
  std::function<Errno(const MmuEvent&)> fault;

 private:
  friend struct FakePolicy;
  friend MmuOps make_fake_ops(PteAccess);
  struct Queued {
    Pte* slot;
    Pte value;
    bool preserve_ad;
  };

  void violation(std::string what);
  bool locate(const Pte* slot, Pfn& table, unsigned& index, const char* who);
  Errno inject(const MmuEvent& e) { return fault ? fault(e) : Errno::Ok; }
  ErrorOr<void> write(Pte* slot, Pte v, Level level, bool preserve_ad);
  void apply_queue();
  // Upper-entry bookkeeping: an entry of a `level` table changes from old to v.
  void rehook(Pte old, Pte v, Level level);
  bool references_table(Pte e, Level level) const {
    return level != Level::L1 && (e.raw & pte_bit::Present) && !(e.raw & pte_bit::Huge);
  }
  void check_unshared_l1(Pfn table, const std::string& what);
  Pfn decode(Pte e) const { return Pfn{((e.raw & pte_bit::FrameMask) >> kPageShift) - kMfnOffset}; }

  FakeConfig config_;
  std::vector<uint64_t> bitmap_;
  std::vector<uint16_t> refcounts_;  // frame_refs() storage, where the kernel has it
  std::map<uint64_t, Level> tables_;  // live page-table frames
  std::map<uint64_t, unsigned> uppers_;  // table frame -> upper entries referencing it
  std::set<const Pte*> started_;      // modify_prot_start without commit yet
  std::vector<Queued> queue_;
  std::vector<MmuEvent> events_;
  std::vector<std::string> violations_;
  int lazy_depth_ = 0;
  uint64_t pte_flags_calls_ = 0;
};

FakeMmu& fake();

// Raw helpers for tests.
inline Pfn entry_pfn(Pte e) { return FakePolicy::pfn_of(e); }
inline uint64_t entry_frame_field(Pte e) { return (e.raw & pte_bit::FrameMask) >> kPageShift; }

}  // namespace pvk::test
