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
// bytes of the frames, not on the kernel's own idea of them.
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

inline bool has(Pte e, uint64_t bits) { return (e.raw & bits) == bits; }
inline bool lacks(Pte e, uint64_t bits) { return (e.raw & bits) == 0; }

class AddressSpaceTest : public FakeMmuTest, public testing::WithParamInterface<WalkMode> {
 protected:
  void SetUp() override {
    start({kFrames, GetParam().access, GetParam().defer});
    // root_ plays the kernel's root: two kernel-half L4 entries (physmap and
    // image) hooking L3 tables, which every new root must copy.
    ASSERT_EQ(error_of(g_mmu.range.populate(root_, VirtAddr{PVK_PHYSMAP_BASE}, Level::L3)), Errno::Ok);
    ASSERT_EQ(error_of(g_mmu.range.populate(root_, VirtAddr{PVK_KERNEL_VMA}, Level::L3)), Errno::Ok);
    set_kernel_root(root_);
    set_mm_policy({.zero_page = true, .pgd_cache = true});
    g_mm_stats = {};
    ASSERT_EQ(error_of(init_user_mm()), Errno::Ok);
    // The zero page is the one frame with a reference (the kernel's own).
    for (uint64_t p = 0; p < kFrames; ++p)
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
    auto r = as->mmap(0, len, prot, flags, false);
    EXPECT_EQ(error_of(r), Errno::Ok);
    return r.is_error() ? 0 : r.value();
  }
  uint64_t mmap_fixed(AddressSpace* as, uint64_t addr, uint64_t len, uint32_t prot, uint32_t flags = 0) {
    auto r = as->mmap(addr, len, prot, flags, true);
    EXPECT_EQ(error_of(r), Errno::Ok);
    if (!r.is_error()) {
      EXPECT_EQ(r.value(), addr);
    }
    return addr;
  }

  static std::vector<V> vmas(const AddressSpace* as) {
    std::vector<V> out;
    for (unsigned i = 0; i < as->vma_count(); ++i) {
      const Vma& v = as->vma(i);
      out.push_back({v.start, v.end, v.prot, v.flags});
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

  // A user access to one byte, as the CPU does it: through the entry if it
  // allows the access, else a fault and one retry. A second fault for the
  // same access is a kernel bug (the handler did not fix the entry).
  FaultOutcome access(AddressSpace* as, uint64_t va, bool write, uint8_t* byte) {
    for (int faults = 0;; ++faults) {
      const Pte e = entry(as, va);
      if (has(e, pte_bit::Present | pte_bit::User) && (!write || has(e, pte_bit::Write))) {
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
      if (faults == 1) {
        ADD_FAILURE() << "0x" << std::hex << va << " faulted again after a handled fault (entry 0x" << e.raw << ")";
        return FaultOutcome::BadAccess;
      }
      const FaultOutcome o = as->handle_fault(va, write ? Access::Write : Access::Read);
      if (o != FaultOutcome::Handled) return o;
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
    if (has(entry(as, va), pte_bit::Present | pte_bit::Write)) memset(bytes(frame_at(as, va)), v, kPageSize);
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
  uint64_t baseline_tables_ = 0;
  std::vector<AddressSpace*> live_;
  std::vector<Pfn> hoard_;
  bool ready_ = false;
};

}  // namespace test
}  // namespace pvk
