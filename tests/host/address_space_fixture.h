// The fixture of the address-space tests (address_space_*_test.cpp), over
// the fake MMU. The tests cover VMA
// bookkeeping (mmap/munmap/mprotect/brk splitting and merging), fault
// decisions (zero page, fresh frames, COW copy, last-sharer takeover,
// PROT_NONE), fork's copy-on-write bookkeeping (frame reference counts) and
// the root cache, in both pte= modes with L1 stores immediate or deferred to
// the lazy flush (Xen's batched semantics).
//
// User accesses are played by access(): it walks the tables independently of
// the kernel (FakeMmu::slot) like the CPU would, calls handle_fault() when
// the entry does not allow the access, and then reads or writes the frame
// the entry maps. So "the child sees the parent's content" is checked on the
// bytes of the frames, not on the kernel's own idea of them. The rights it
// obeys are the effective ones (effective()): the leaf's AND every upper
// entry's, as the CPU combines them, since with ptshare=on an L2 entry
// without RW makes the whole L1 table under it read-only.
//
// expect_consistent() checks every live space against its VMAs through the
// same independent walk: no mapped leaf outside every VMA, no effective right
// looser than the VMA's (W, presence for PROT_NONE, NX), an L1 table under
// several L2 entries only behind read-only ones (and its share count in
// frame_refs() saying how many), a private frame writable somewhere mapped
// nowhere else, and each data frame's reference count equal to the number of
// leaf slots holding it.
//
// Every test ends (TearDown) by destroying the spaces it left, draining the
// root cache and checking the free-frame count, the page-table count and the
// zero page's reference count are back to their baselines: a leak anywhere
// fails the test that caused it.
#pragma once
#include "host_compat.h"  // first: see there

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/layout.h"
#include "base/abi.h"
#include "kernel_space_host.h"
#include "mm/address_space.h"
#include "base/frames/frame_refs.h"
#include "base/frames/physmap.h"
#include "mmu_fixture.h"
#include "panic_host.h"

namespace pvk {

inline void PrintTo(FaultOutcome::Kind k, std::ostream* os) {
  switch (k) {
    case FaultOutcome::Handled: *os << "Handled"; return;
    case FaultOutcome::BadAccess: *os << "BadAccess"; return;
    case FaultOutcome::OutOfMemory: *os << "OutOfMemory"; return;
  }
  *os << "FaultOutcome?";
}
inline void PrintTo(FaultOutcome o, std::ostream* os) {
  switch (o.kind) {
    case FaultOutcome::Handled: *os << "Handled"; return;
    case FaultOutcome::BadAccess: *os << "BadAccess"; return;
    case FaultOutcome::OutOfMemory: *os << "OutOfMemory"; return;
  }
  *os << "FaultOutcome?";
}

namespace test {

using testing::ElementsAre;
using testing::IsEmpty;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kBase = abi::kUserMmapBase;
constexpr uint32_t kNone = 0, kRo = vm::Read, kRw = vm::Read | vm::Write, kRx = vm::Read | vm::Exec;
constexpr uint64_t kFrames = 2048;

constexpr uint64_t pg(uint64_t n) { return n * kPageSize; }

// A VMA as the tests spell it.
struct V {
  uint64_t start, end;
  uint32_t prot, flags = 0;
  bool operator==(const V&) const = default;
};
inline void PrintTo(const V& v, std::ostream* os) {
  *os << std::hex << "[0x" << v.start << ", 0x" << v.end << ") prot " << v.prot << " flags " << v.flags << std::dec;
}

// The ptshare counters (table sharing), wherever base/counters.inc puts them: in
// mm's g_mm_stats (PVK_MM_COUNTER) or the walk's g_mmu_counters
// (PVK_MMU_COUNTER).
struct PtCounters {
  uint64_t pt_shares = 0, pt_copyouts = 0, pt_gate_opens = 0, pt_pushdowns = 0, l2_protects = 0;
};
#define PVK_TEST_PT_COUNTERS(X) X(pt_shares) X(pt_copyouts) X(pt_gate_opens) X(pt_pushdowns) X(l2_protects)
template <typename Mm = MmStats, typename Mmu = MmuCounters>
PtCounters pt_counters(const Mm& mm = g_mm_stats, const Mmu& mmu = g_mmu_counters) {
  PtCounters c;
#define PVK_TEST_READ(name)                     \
  if constexpr (requires { mm.name; })          \
    c.name = mm.name;                           \
  else if constexpr (requires { mmu.name; })    \
    c.name = mmu.name;
  PVK_TEST_PT_COUNTERS(PVK_TEST_READ)
#undef PVK_TEST_READ
  return c;
}
// Zeroes g_mm_stats and the ptshare counters.
template <typename Mm = MmStats, typename Mmu = MmuCounters>
void reset_stats(Mm& mm = g_mm_stats, Mmu& mmu = g_mmu_counters) {
  mm = {};
#define PVK_TEST_ZERO(name)                     \
  if constexpr (requires { mmu.name; }) mmu.name = 0;
  PVK_TEST_PT_COUNTERS(PVK_TEST_ZERO)
#undef PVK_TEST_ZERO
}
#undef PVK_TEST_PT_COUNTERS

inline bool has(Pte e, uint64_t bits) { return (e.raw & bits) == bits; }
inline bool lacks(Pte e, uint64_t bits) { return (e.raw & bits) == 0; }

class AddressSpaceTest : public FakeMmuTest, public testing::WithParamInterface<WalkMode> {
 protected:
  // The fake RAM's size, for fixtures that need more.
  virtual uint64_t fake_frames() const { return kFrames; }
  // References to a frame held outside every address space (a fake file's
  // own, in the file-mapping tests): expect_consistent adds them.
  virtual uint16_t outside_refs(Pfn) const { return 0; }
  // The walk mode the fake runs in (a fixture may switch it mid-test).
  virtual WalkMode mode() const { return GetParam(); }

  void SetUp() override {
    start({fake_frames(), mode().access, mode().defer});
    // root_ plays the kernel's root: two kernel-half L4 entries (physmap and
    // image) hooking L3 tables, which every new root must copy.
    ASSERT_EQ(error_of(g_mmu.range.populate(root_, VirtAddr{PVK_PHYSMAP_BASE}, Level::L3)), Errno::Ok);
    ASSERT_EQ(error_of(g_mmu.range.populate(root_, VirtAddr{PVK_KERNEL_VMA}, Level::L3)), Errno::Ok);
    set_kernel_root(root_);
    set_mm_policy({.zero_page = true, .pgd_cache = true});
    g_mm_stats = {};
    ASSERT_EQ(error_of(init_user_mm()), Errno::Ok);
    // The zero page is the one frame with a reference (the kernel's own).
    for (uint64_t p = 0; p < fake_frames(); ++p)
      if (frame_refs().get(Pfn{p}) == 1) zero_page_ = Pfn{p};
    ASSERT_NE(raw(zero_page_), 0u);
    baseline_ = frames().free_count();
    baseline_tables_ = fake().table_count();
    fake().clear_events();
    ready_ = true;
  }

  void TearDown() override {
    release_hoard();
    if (ready_) {
      if (!HasFailure()) expect_consistent("at the end of the test");
      while (!live_.empty()) destroy(live_.back());
      EXPECT_EQ(error_of(drain_root_cache()), Errno::Ok);
      EXPECT_EQ(frames().free_count(), baseline_) << "frames leaked (or freed twice)";
      EXPECT_EQ(fake().table_count(), baseline_tables_) << "page tables left behind";
      EXPECT_EQ(frame_refs().get(zero_page_), 1u) << "zero page references left behind";
    }
    FakeMmuTest::TearDown();
  }

  // ---- spaces ----

  AddressSpace* create() {
    auto r = AddressSpace::try_create();
    EXPECT_EQ(error_of(r), Errno::Ok);
    if (r.is_error()) return nullptr;
    live_.push_back(r.value());
    return r.value();
  }
  ErrorOr<AddressSpace*> try_fork(AddressSpace* as) {
    auto r = as->try_fork();
    if (!r.is_error()) live_.push_back(r.value());
    return r;
  }
  AddressSpace* fork(AddressSpace* as) {
    auto r = try_fork(as);
    EXPECT_EQ(error_of(r), Errno::Ok);
    return r.is_error() ? nullptr : r.value();
  }
  void destroy(AddressSpace* as) {
    live_.erase(std::remove(live_.begin(), live_.end(), as), live_.end());
    EXPECT_EQ(error_of(as->destroy()), Errno::Ok);
  }

  // Anonymous private (or shared) memory placed by the kernel.
  uint64_t mmap(AddressSpace* as, uint64_t len, uint32_t prot, uint32_t flags = 0) {
    auto r = as->mmap(VirtAddr{0}, len, prot, flags, false);
    EXPECT_EQ(error_of(r), Errno::Ok);
    return r.is_error() ? 0 : raw(r.value());
  }
  uint64_t mmap_fixed(AddressSpace* as, uint64_t addr, uint64_t len, uint32_t prot, uint32_t flags = 0) {
    auto r = as->mmap(VirtAddr{addr}, len, prot, flags, true);
    EXPECT_EQ(error_of(r), Errno::Ok);
    if (!r.is_error()) {
      EXPECT_EQ(raw(r.value()), addr);
    }
    return addr;
  }

  static std::vector<V> vmas(const AddressSpace* as) {
    std::vector<V> out;
    for (unsigned i = 0; i < as->vma_count(); ++i) {
      const Vma& v = as->vma(i);
      out.push_back({raw(v.start), raw(v.end), v.prot, v.flags});
    }
    return out;
  }

  // ---- what the hardware sees ----

  static Pte entry(const AddressSpace* as, uint64_t va) {
    Pte* s = fake().slot(as->root(), VirtAddr{va}, Level::L1);
    return s ? *s : Pte{};
  }
  static Pfn frame_at(const AddressSpace* as, uint64_t va) {
    const Pte e = entry(as, va);
    if (e.none()) {
      ADD_FAILURE() << "nothing mapped at 0x" << std::hex << va;
      return Pfn{0};  // reserved, never handed out: harmless to look at
    }
    return entry_pfn(e);
  }
  static uint8_t* bytes(Pfn pfn) {
    if (!fake().in_arena(pfn)) {
      ADD_FAILURE() << "frame 0x" << std::hex << raw(pfn) << " is outside the fake RAM";
      return phys_to_virt<uint8_t>(Pfn{0});
    }
    return phys_to_virt<uint8_t>(pfn);
  }
  static bool page_is(Pfn pfn, uint8_t v) {
    const uint8_t* b = bytes(pfn);
    return std::all_of(b, b + kPageSize, [v](uint8_t x) { return x == v; });
  }
  static uint16_t refs(Pfn pfn) { return frame_refs().get(pfn); }

  // The rights the CPU derives for va: Present, User and Write must be set at
  // every level, NX at any level forbids execution.
  struct Effective {
    Pte leaf{};
    Pte l2{};
    bool present = false, user = false, write = false, nx = false;
  };
  static Effective effective(const AddressSpace* as, uint64_t va) {
    Effective r;
    r.present = r.user = r.write = true;
    Pte* t = fake().table(as->root());
    for (Level l = Level::L4;; l = below(l)) {
      const Pte e = t[index_at(VirtAddr{va}, l)];
      if (l == Level::L2) r.l2 = e;
      r.present = r.present && has(e, pte_bit::Present);
      r.user = r.user && has(e, pte_bit::User);
      r.write = r.write && has(e, pte_bit::Write);
      r.nx = r.nx || has(e, pte_bit::Nx);
      if (l == Level::L1) {
        r.leaf = e;
        break;
      }
      if (!has(e, pte_bit::Present)) {
        r.present = r.user = r.write = false;
        return r;
      }
      t = fake().table(entry_pfn(e));
      if (!t) return Effective{};
    }
    if (!r.present) r.user = r.write = false;
    return r;
  }
  static bool writable(const AddressSpace* as, uint64_t va) {
    const Effective e = effective(as, va);
    return e.present && e.user && e.write;
  }

  // A user access to one byte, as the CPU does it: through the entry if it
  // allows the access, else a fault and one retry. A second fault for the
  // same access is a kernel bug (the handler did not fix the entry), unless
  // the first one changed the L2 entry (ptshare: a table copied out or its
  // gate opened, the leaf left for the next fault); those are counted in
  // refaults_, and a third fault is a bug in any case.
  FaultOutcome access(AddressSpace* as, uint64_t va, bool write, uint8_t* byte) {
    bool l2_changed = false;
    for (int faults = 0;; ++faults) {
      const Effective eff = effective(as, va);
      const Pte e = eff.leaf;
      if (eff.present && eff.user && (!write || eff.write)) {
        if (!fake().in_arena(entry_pfn(e))) {
          ADD_FAILURE() << "the entry for 0x" << std::hex << va << " maps a frame outside RAM";
          return FaultOutcome::BadAccess;
        }
        uint8_t* p = bytes(entry_pfn(e)) + va % kPageSize;
        if (write)
          *p = *byte;
        else
          *byte = *p;
        return FaultOutcome::Handled;
      }
      if (faults == 2 || (faults == 1 && !l2_changed)) {
        ADD_FAILURE() << "0x" << std::hex << va << " faulted again after a handled fault (entry 0x" << e.raw
                      << ", L2 entry 0x" << eff.l2.raw << ")";
        return FaultOutcome::BadAccess;
      }
      if (faults == 1) ++refaults_;
      const FaultOutcome o = as->handle_fault(VirtAddr{va}, write ? Access::Write : Access::Read);
      if (o != FaultOutcome::Handled) return o;
      l2_changed = effective(as, va).l2.raw != eff.l2.raw;
    }
  }
  FaultOutcome try_write(AddressSpace* as, uint64_t va, uint8_t v) { return access(as, va, true, &v); }
  FaultOutcome try_read(AddressSpace* as, uint64_t va) {
    uint8_t v;
    return access(as, va, false, &v);
  }
  void write(AddressSpace* as, uint64_t va, uint8_t v) {
    EXPECT_EQ(access(as, va, true, &v), FaultOutcome::Handled) << "write to 0x" << std::hex << va;
  }
  uint8_t read(AddressSpace* as, uint64_t va) {
    uint8_t v = 0xee;
    EXPECT_EQ(access(as, va, false, &v), FaultOutcome::Handled) << "read of 0x" << std::hex << va;
    return v;
  }
  // Writes a whole page with one value (the first byte through access(),
  // which faults the page in; the rest straight into the frame it maps).
  void fill(AddressSpace* as, uint64_t va, uint8_t v) {
    write(as, va, v);
    if (writable(as, va)) memset(bytes(frame_at(as, va)), v, kPageSize);
  }

  // ---- consistency of every live space (see the top of the file) ----

  struct LeafSeen {
    uint64_t frame;
    uint64_t slot;  // L1 frame << 9 | index
    uint64_t va;
    bool eff_write;
    bool shared_vma;
  };
  // Checks every live space; each problem is one failure (at most a few
  // dozen reported). Returns true if all is well.
  bool expect_consistent(const char* when = "") {
    std::vector<std::string> problems;
    auto problem = [&](std::string s) {
      if (problems.size() < 40) problems.push_back(std::move(s));
    };
    auto hexs = [](uint64_t v) {
      std::ostringstream o;
      o << "0x" << std::hex << v;
      return o.str();
    };
    std::vector<LeafSeen> seen;                            // every mapping of a data frame, per space
    std::map<uint64_t, std::vector<bool>> l2_rw_of;        // L1 frame -> RW of each L2 entry hooking it
    for (const AddressSpace* as : live_) {
      const Pte* l4 = fake().table(as->root());
      for (unsigned i4 = 0; i4 < kEntriesPerTable / 2; ++i4) {
        if (!has(l4[i4], pte_bit::Present)) continue;
        const Pte* l3 = fake().table(entry_pfn(l4[i4]));
        for (unsigned i3 = 0; l3 && i3 < kEntriesPerTable; ++i3) {
          if (!has(l3[i3], pte_bit::Present)) continue;
          const Pte* l2 = fake().table(entry_pfn(l3[i3]));
          for (unsigned i2 = 0; l2 && i2 < kEntriesPerTable; ++i2) {
            const Pte e2 = l2[i2];
            if (!has(e2, pte_bit::Present)) continue;
            const Pfn l1_pfn = entry_pfn(e2);
            const Pte* l1 = fake().table(l1_pfn);
            if (!l1) continue;
            l2_rw_of[raw(l1_pfn)].push_back(has(e2, pte_bit::Write));
            const bool upper_w = has(l4[i4], pte_bit::Write) && has(l3[i3], pte_bit::Write) && has(e2, pte_bit::Write);
            const bool upper_u = has(l4[i4], pte_bit::User) && has(l3[i3], pte_bit::User) && has(e2, pte_bit::User);
            const bool upper_nx = has(l4[i4], pte_bit::Nx) || has(l3[i3], pte_bit::Nx) || has(e2, pte_bit::Nx);
            for (unsigned i1 = 0; i1 < kEntriesPerTable; ++i1) {
              const Pte e = l1[i1];
              if (lacks(e, pte_bit::Present | pte_bit::ProtNone)) continue;
              const uint64_t va = (uint64_t{i4} << 39) | (uint64_t{i3} << 30) | (uint64_t{i2} << 21) |
                                  (uint64_t{i1} << 12);
              auto at = [&] {
                return "space root " + hexs(raw(as->root())) + " va " + hexs(va) + " (leaf " + hexs(e.raw) +
                       ", L2 " + hexs(e2.raw) + ")";
              };
              // The independent walk FakeMmu::slot must agree.
              if (fake().slot(as->root(), VirtAddr{va}, Level::L1) != &l1[i1]) problem(at() + ": slot() disagrees");
              const Vma* v = as->find(VirtAddr{va});
              if (!v) {
                problem(at() + ": a mapped leaf outside every VMA");
                continue;
              }
              const bool present = has(e, pte_bit::Present);
              const bool eff_w = present && upper_w && upper_u && has(e, pte_bit::Write | pte_bit::User);
              const bool eff_nx = upper_nx || has(e, pte_bit::Nx);
              if (v->prot == kNone && present) problem(at() + ": present under a PROT_NONE VMA");
              if (eff_w && !(v->prot & vm::Write)) problem(at() + ": effectively writable, the VMA is not");
              if (present && !(v->prot & vm::Exec) && !eff_nx) problem(at() + ": executable, the VMA is not");
              const Pfn f = entry_pfn(e);
              if (f == zero_page_) {
                if (eff_w) problem(at() + ": the zero page is writable");
                continue;
              }
              seen.push_back({raw(f), (raw(l1_pfn) << 9) | i1, va, eff_w, (v->flags & vm::Shared) != 0});
            }
          }
        }
      }
    }
    for (const auto& [l1, rw] : l2_rw_of) {
      const unsigned n = fake().uppers(Pfn{l1});
      if (n != rw.size())
        problem("L1 table " + hexs(l1) + ": hooked by " + std::to_string(rw.size()) +
                " L2 entries of live spaces, the fake counts " + std::to_string(n));
      if (rw.size() > 1) {
        if (std::count(rw.begin(), rw.end(), true) != 0)
          problem("L1 table " + hexs(l1) + " is shared by " + std::to_string(rw.size()) +
                  " L2 entries, not all read-only");
        if (frame_refs().get(Pfn{l1}) != rw.size())
          problem("L1 table " + hexs(l1) + " is shared by " + std::to_string(rw.size()) +
                  " L2 entries, its share count (frame_refs) says " + std::to_string(frame_refs().get(Pfn{l1})));
      }
    }
    std::sort(seen.begin(), seen.end(),
              [](const LeafSeen& a, const LeafSeen& b) { return a.frame != b.frame ? a.frame < b.frame : a.slot < b.slot; });
    for (size_t i = 0; i < seen.size();) {
      const uint64_t f = seen[i].frame;
      size_t j = i, slots = 0;
      bool shared = false, any_w = false;
      for (; j < seen.size() && seen[j].frame == f; ++j) {
        slots += j == i || seen[j].slot != seen[j - 1].slot;
        shared |= seen[j].shared_vma, any_w |= seen[j].eff_write;
      }
      if (refs(Pfn{f}) != slots + outside_refs(Pfn{f}))
        problem("frame " + hexs(f) + ": reference count " + std::to_string(refs(Pfn{f})) + ", held by " +
                std::to_string(slots) + " leaf slot(s) and " + std::to_string(outside_refs(Pfn{f})) +
                " owner(s) outside the spaces");
      if (!shared && any_w && j - i > 1)
        problem("private frame " + hexs(f) + " is writable at va " + hexs(seen[i].va) + " and mapped " +
                std::to_string(j - i) + " times");
      i = j;
    }
    for (const std::string& p : problems) ADD_FAILURE() << when << (*when ? ": " : "") << p;
    return problems.empty();
  }

  // ---- frames ----

  // Takes frames until only `leave` are free (kept until release_hoard()).
  void hoard(uint64_t leave) {
    while (frames().free_count() > leave) hoard_.push_back(frames().must_alloc());
  }
  void release_hoard() {
    for (Pfn p : hoard_) frames().must_free(p);
    hoard_.clear();
  }
  // Scribbles over every free frame, so "the new frame is zeroed" means the
  // kernel zeroed it.
  void dirty_free_frames() {
    std::vector<Pfn> all;
    while (frames().free_count()) all.push_back(frames().must_alloc());
    for (Pfn p : all) {
      memset(bytes(p), 0xa5, kPageSize);
      frames().must_free(p);
    }
  }
  size_t prepared(Level level) {
    size_t n = 0;
    for (const MmuEvent& e : fake().events(Ev::PrepareTable)) n += e.level == level;
    return n;
  }
  size_t retired(Level level) {
    size_t n = 0;
    for (const MmuEvent& e : fake().events(Ev::RetireTable)) n += e.level == level;
    return n;
  }

  Pfn zero_page_{};
  uint64_t refaults_ = 0;  // accesses that needed a second fault (see access())
  uint64_t baseline_tables_ = 0;
  std::vector<AddressSpace*> live_;
  std::vector<Pfn> hoard_;
  bool ready_ = false;
};

}  // namespace test
}  // namespace pvk
