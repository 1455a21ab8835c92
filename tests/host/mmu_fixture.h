// GoogleTest fixtures over the fake MMU: a fresh fake RAM, allocator and
// root per test, helpers that run one range operation in its own lazy-MMU
// section (a LazyMmuSection, as kernel callers do), and a TearDown that fails the
// test on anything the fake noticed (violations, queued stores, open
// sections).
#pragma once
#include "host_compat.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "fake_mmu.h"
#include "base/frames/frame_allocator.h"
#include "pvops/tlb/lazy_mmu_section.h"
#include "base/frames/physmap.h"
#include "pvops/mmu_ops.h"

namespace pvk {

// Readable gtest output for the kernel's types.
inline void PrintTo(Errno e, std::ostream* os) { *os << errno_name(e); }
inline void PrintTo(Pfn p, std::ostream* os) { *os << "Pfn{0x" << std::hex << raw(p) << std::dec << "}"; }
inline void PrintTo(VirtAddr v, std::ostream* os) { *os << "VA{0x" << std::hex << raw(v) << std::dec << "}"; }
inline void PrintTo(Level l, std::ostream* os) { *os << "L" << static_cast<unsigned>(l); }
inline void PrintTo(const Pte& e, std::ostream* os) { *os << "Pte{0x" << std::hex << e.raw << std::dec << "}"; }
inline void PrintTo(const PteFlags& f, std::ostream* os) { *os << "PteFlags{0x" << std::hex << f.bits << std::dec << "}"; }

namespace test {

// The error of an ErrorOr, Errno::Ok if none (for EXPECT_EQ).
template <typename T>
Errno error_of(const ErrorOr<T>& r) {
  return r.is_error() ? r.error() : Errno::Ok;
}

struct WalkMode {
  PteAccess access;
  bool defer;
};

inline void PrintTo(const WalkMode& m, std::ostream* os) {
  *os << (m.access == PteAccess::Flags ? "pte=flags" : "pte=attrs") << (m.defer ? ", deferred L1" : ", immediate L1");
}

inline std::string walk_mode_name(const testing::TestParamInfo<WalkMode>& info) {
  return std::string(info.param.access == PteAccess::Flags ? "PteFlags" : "PteAttrs") +
         (info.param.defer ? "_DeferredL1" : "_Immediate");
}

inline const WalkMode kAllWalkModes[] = {
    {PteAccess::Attrs, false}, {PteAccess::Attrs, true}, {PteAccess::Flags, false}, {PteAccess::Flags, true}};

class FakeMmuTest : public testing::Test {
 protected:
  // Fresh fake RAM and a root; baseline_ is the free count with the root taken.
  void start(const FakeConfig& config) {
    fake().reset(config);
    root_ = fake().new_root();
    baseline_ = frames().free_count();
    fake().clear_events();
  }

  void TearDown() override {
    EXPECT_EQ(fake().lazy_depth(), 0) << "a lazy-MMU section was left open";
    EXPECT_EQ(fake().pending(), 0u) << "L1 stores still queued after the sections ended";
    EXPECT_THAT(fake().violations(), testing::IsEmpty());
  }

  ErrorOr<void> map(VirtAddr va, uint64_t pages, FrameSource src, PteFlags flags) {
    LazyMmuSection section(root_);
    auto r = g_mmu.range.map(root_, va, pages, src, flags);
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
    return r;
  }
  ErrorOr<void> protect(VirtAddr va, uint64_t pages, PteFlags set, PteFlags clear) {
    LazyMmuSection section(root_);
    auto r = g_mmu.range.protect(root_, va, pages, set, clear, section);
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
    return r;
  }
  ErrorOr<void> unmap(VirtAddr va, uint64_t pages, UnmapVisitor visit = {}) {
    LazyMmuSection section(root_);
    auto r = g_mmu.range.unmap(root_, va, pages, visit, section);
    EXPECT_EQ(error_of(section.finish()), Errno::Ok);
    return r;
  }
  ErrorOr<Pte> lookup(VirtAddr va) { return g_mmu.range.lookup(root_, va); }

  // The distinct tables at `level` a range of pages lies in, counted from
  // addresses alone (independently of the walk).
  static size_t tables_spanned(VirtAddr va, uint64_t pages, Level level) {
    std::set<uint64_t> ids;
    for (uint64_t i = 0; i < pages; ++i) ids.insert((raw(va) + i * kPageSize) / entry_span(level) / kEntriesPerTable);
    return ids.size();
  }

  Pfn root_{};
  uint64_t baseline_ = 0;
};

class WalkTest : public FakeMmuTest, public testing::WithParamInterface<WalkMode> {
 protected:
  void SetUp() override { start(config()); }
  FakeConfig config(uint64_t frames = 2048) const { return {frames, GetParam().access, GetParam().defer}; }
};

}  // namespace test
}  // namespace pvk
