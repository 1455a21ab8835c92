// Address spaces and TLB shootdown: switch_mm keeps each
// space's CpuMask, and every mm operation that takes a translation away —
// mprotect, munmap, fork's write-protect, a COW break, teardown — sends one
// flush_tlb_multi per lazy-MMU section to the other CPUs of the mask, none
// when this CPU is the only one. The fake MMU records flush_tlb_multi; the
// fake cross-CPU layer (cross_cpu_host.h) plays "this CPU".
#include "host_compat.h"  // first: see there

#include "address_space_fixture.h"
#include "cross_cpu_host.h"
#include "panic_host.h"

namespace pvk::test {
namespace {

std::vector<unsigned> cpus_of(const CpuMask& m) {
  std::vector<unsigned> out;
  for (unsigned c : m.snapshot()) out.push_back(c);
  return out;
}

class ShootdownSpaceTest : public AddressSpaceTest {
 protected:
  void SetUp() override {
    AddressSpaceTest::SetUp();
    fake_xcpu().online = 4;
  }
  void TearDown() override {
    // Every CPU the test used leaves its space, as the scheduler would.
    for (unsigned cpu = 1; cpu < 4; ++cpu) on_cpu(cpu, [] { EXPECT_EQ(error_of(switch_to_kernel_mm()), Errno::Ok); });
    EXPECT_EQ(error_of(switch_to_kernel_mm()), Errno::Ok);
    AddressSpaceTest::TearDown();
  }
  template <typename F>
  static void on_cpu(unsigned cpu, F f) {
    const unsigned me = fake_xcpu().this_cpu;
    fake_xcpu().this_cpu = cpu;
    f();
    fake_xcpu().this_cpu = me;
  }
  // flush_tlb_multi calls since the events were last cleared.
  static std::vector<MmuEvent> multis() { return fake().events(Ev::FlushMulti); }
};

TEST_P(ShootdownSpaceTest, SwitchMmJoinsTheNextSpaceAndLeavesThePreviousOne) {
  AddressSpace* a = create();
  AddressSpace* b = create();
  ASSERT_TRUE(a && b);
  ASSERT_EQ(error_of(switch_mm(a)), Errno::Ok);
  EXPECT_EQ(cpus_of(a->cpus()), (std::vector<unsigned>{0}));
  EXPECT_EQ(g_current_root, a->root());
  on_cpu(1, [&] { ASSERT_EQ(error_of(switch_mm(a)), Errno::Ok); });
  EXPECT_EQ(cpus_of(a->cpus()), (std::vector<unsigned>{0, 1}));
  ASSERT_EQ(error_of(switch_mm(b)), Errno::Ok);
  EXPECT_EQ(cpus_of(a->cpus()), (std::vector<unsigned>{1}));
  EXPECT_EQ(cpus_of(b->cpus()), (std::vector<unsigned>{0}));
  EXPECT_EQ(loaded_mm(), b);
  // Lazy: a switch to a task without a space keeps the root and the mask.
  on_cpu(1, [&] {
    ASSERT_EQ(error_of(switch_mm(nullptr)), Errno::Ok);
    EXPECT_EQ(loaded_mm(), a);
  });
  EXPECT_EQ(cpus_of(a->cpus()), (std::vector<unsigned>{1}));
  on_cpu(1, [&] { ASSERT_EQ(error_of(switch_to_kernel_mm()), Errno::Ok); });
  EXPECT_TRUE(a->cpus().snapshot().empty());
  // Destroying the space this CPU runs on takes it off first.
  destroy(b);
  EXPECT_EQ(loaded_mm(), nullptr);
  EXPECT_EQ(g_current_root, root_) << "the kernel's root";
}

TEST_P(ShootdownSpaceTest, DestroyingASpaceNoLongerInCr3KeepsTheLoadedRoot) {
  // exec: the new image's root is loaded (by load_root, not switch_mm), then
  // the old space goes away — the CPU must stay on the new root.
  AddressSpace* old_image = create();
  AddressSpace* new_image = create();
  ASSERT_TRUE(old_image && new_image);
  ASSERT_EQ(error_of(switch_mm(old_image)), Errno::Ok);
  ASSERT_EQ(error_of(g_mmu.load_root(new_image->root())), Errno::Ok);
  destroy(old_image);
  EXPECT_EQ(g_current_root, new_image->root());
  EXPECT_EQ(loaded_mm(), nullptr);
  ASSERT_EQ(error_of(switch_mm(new_image)), Errno::Ok);
  EXPECT_EQ(cpus_of(new_image->cpus()), (std::vector<unsigned>{0}));
}

TEST_P(ShootdownSpaceTest, AloneInTheMaskNothingIsSentAndTheCountersStayZero) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok);
  const uint64_t a = mmap(as, pg(40), kRw);
  for (unsigned i = 0; i < 40; ++i) fill(as, a + pg(i), 1);
  AddressSpace* child = fork(as);
  ASSERT_NE(child, nullptr);
  write(as, a, 2);
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a}, pg(3), kRo)), Errno::Ok);
  ASSERT_EQ(error_of(as->munmap(VirtAddr{a}, pg(40))), Errno::Ok);
  destroy(child);
  EXPECT_TRUE(multis().empty());
  EXPECT_EQ(g_mmu_counters.shootdowns, 0u);
  EXPECT_EQ(g_mmu_counters.shootdown_cpus, 0u);
  EXPECT_EQ(g_mmu_counters.ipis_sent, 0u);
  EXPECT_EQ(g_mmu_counters.tlb_flush_multi, 0u);
}

// Each operation in turn, with CPU 1 also running the space: exactly one
// flush_tlb_multi to CPU 1 naming what the operation changed.
TEST_P(ShootdownSpaceTest, EveryOperationThatTakesAccessAwayShootsDownOnce) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok);
  on_cpu(1, [&] { ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok); });
  const uint64_t a = mmap(as, pg(8), kRw);
  for (unsigned i = 0; i < 8; ++i) fill(as, a + pg(i), 1);

  auto one_shootdown = [&](const char* what, std::vector<uint64_t> pages, bool full = false) {
    SCOPED_TRACE(what);
    const auto m = multis();
    ASSERT_EQ(m.size(), 1u) << "one shootdown per operation";
    EXPECT_EQ(cpus_of(m[0].cpus), (std::vector<unsigned>{1}));
    if (full) {
      EXPECT_TRUE(m[0].info.full);
      return;
    }
    ASSERT_FALSE(m[0].info.full);
    std::set<uint64_t> got;
    for (unsigned i = 0; i < m[0].info.count; ++i) got.insert(raw(m[0].info.pages[i]));
    for (uint64_t p : pages) EXPECT_EQ(got.count(p), 1u) << std::hex << p;
    fake().clear_events();
  };

  fake().clear_events();
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a}, pg(2), kRo)), Errno::Ok);
  one_shootdown("mprotect", {a, a + pg(1)});

  ASSERT_EQ(error_of(as->munmap(VirtAddr{a + pg(7)}, pg(1))), Errno::Ok);
  one_shootdown("munmap", {a + pg(7)});

  AddressSpace* child = fork(as);
  ASSERT_NE(child, nullptr);
  one_shootdown("fork write-protect", {a + pg(2), a + pg(3), a + pg(4), a + pg(5), a + pg(6)});

  write(as, a + pg(3), 9);  // a COW break replaces the frame CPU 1 may still map
  one_shootdown("cow break", {a + pg(3)});

  // The child runs nowhere: its changes shoot nothing down.
  write(child, a + pg(4), 9);
  ASSERT_EQ(error_of(child->mprotect(VirtAddr{a}, pg(7), kRo)), Errno::Ok);
  EXPECT_TRUE(multis().empty());
  destroy(child);
  EXPECT_TRUE(multis().empty());

  // An munmap that frees a page table reaches a CPU that still has the
  // space loaded lazily: its paging-structure caches may point there.
  on_cpu(1, [&] { ASSERT_EQ(error_of(switch_mm(nullptr)), Errno::Ok); });
  ASSERT_EQ(error_of(switch_to_kernel_mm()), Errno::Ok);
  fake().clear_events();
  ASSERT_EQ(error_of(as->munmap(VirtAddr{a}, pg(7))), Errno::Ok);
  EXPECT_GE(fake().count(Ev::RetireTable), 1u) << "the emptied L1 table was freed";
  one_shootdown("munmap seen by a lazy CPU", {a});
  EXPECT_EQ(g_mmu_counters.shootdown_lazy_skipped, 0u);
  EXPECT_EQ(g_mmu_counters.shootdown_cpus, g_mmu_counters.shootdowns) << "one target each time";
  on_cpu(1, [&] { ASSERT_EQ(error_of(switch_to_kernel_mm()), Errno::Ok); });
}

// Lazy TLB: CPU 1 ran the space and went idle on it. An mprotect (no
// table freed) leaves it out; when CPU 1 comes back to the space it is
// behind the space's generation and flushes everything — without a root
// load (the root never left). Once up to date, coming back costs nothing.
TEST_P(ShootdownSpaceTest, AnIdleCpuIsSkippedAndCatchesUpWhenItComesBack) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok);
  on_cpu(1, [&] { ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok); });
  const uint64_t a = mmap(as, pg(4), kRw);
  for (unsigned i = 0; i < 4; ++i) fill(as, a + pg(i), 1);
  on_cpu(1, [&] { ASSERT_EQ(error_of(switch_mm(nullptr)), Errno::Ok); });  // idle, lazily on the root
  EXPECT_TRUE(tlb_lazy(1));
  EXPECT_EQ(cpus_of(as->cpus()), (std::vector<unsigned>{0, 1})) << "a lazy CPU stays in the mask";

  fake().clear_events();
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a}, pg(2), kRo)), Errno::Ok);
  EXPECT_TRUE(multis().empty()) << "the only other CPU is lazy";
  EXPECT_EQ(g_mmu_counters.shootdowns, 0u);
  EXPECT_EQ(g_mmu_counters.shootdown_lazy_skipped, 1u);

  fake().clear_events();
  on_cpu(1, [&] { ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok); });
  EXPECT_FALSE(tlb_lazy(1));
  EXPECT_EQ(fake().count(Ev::FlushAll), 1u) << "behind: one full local flush";
  EXPECT_EQ(fake().count(Ev::LoadRoot), 0u) << "the root stayed loaded";
  EXPECT_EQ(g_mmu_counters.tlb_lazy_catchups, 1u);

  // Idle and back with nothing changed meanwhile: no flush.
  fake().clear_events();
  on_cpu(1, [&] {
    ASSERT_EQ(error_of(switch_mm(nullptr)), Errno::Ok);
    ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok);
  });
  EXPECT_EQ(fake().count(Ev::FlushAll), 0u);
  EXPECT_EQ(g_mmu_counters.tlb_lazy_catchups, 1u);

  // Running (not lazy), CPU 1 is sent the flush, which keeps it up to date:
  // idle and back again costs no flush either.
  fake().clear_events();
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a}, pg(2), kRw)), Errno::Ok);
  ASSERT_EQ(multis().size(), 1u);
  EXPECT_EQ(cpus_of(multis()[0].cpus), (std::vector<unsigned>{1}));
  on_cpu(1, [&] {
    ASSERT_EQ(error_of(switch_mm(nullptr)), Errno::Ok);
    ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok);
  });
  EXPECT_EQ(fake().count(Ev::FlushAll), 0u);
  EXPECT_EQ(g_mmu_counters.tlb_lazy_catchups, 1u);
}

// Lazy means "keeps a user root loaded without running it": leaving for the
// kernel's root ends it, and idling on the kernel's root does not start it.
TEST_P(ShootdownSpaceTest, ALazyCpuLeavingForTheKernelsRootIsNoLongerLazy) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  on_cpu(1, [&] {
    ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok);
    ASSERT_EQ(error_of(switch_mm(nullptr)), Errno::Ok);
    EXPECT_TRUE(tlb_lazy(1));
    ASSERT_EQ(error_of(switch_to_kernel_mm()), Errno::Ok);
    EXPECT_FALSE(tlb_lazy(1)) << "no user root left loaded";
    ASSERT_EQ(error_of(switch_mm(nullptr)), Errno::Ok);
    EXPECT_FALSE(tlb_lazy(1)) << "lazy on the kernel's root means nothing";
  });
  EXPECT_TRUE(as->cpus().snapshot().empty());
}

TEST_P(ShootdownSpaceTest, ALargeMprotectIsOneFullShootdown) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  on_cpu(2, [&] { ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok); });
  const uint64_t a = mmap(as, pg(64), kRw);
  for (unsigned i = 0; i < 64; ++i) fill(as, a + pg(i), 1);
  fake().clear_events();
  ASSERT_EQ(error_of(as->mprotect(VirtAddr{a}, pg(64), kRo)), Errno::Ok);
  const auto m = multis();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(m[0].info.full) << "past the ceiling: one full flush on the targets";
  EXPECT_EQ(cpus_of(m[0].cpus), (std::vector<unsigned>{2}));
  EXPECT_EQ(fake().count(Ev::FlushOne) + fake().count(Ev::FlushAll), 0u) << "not loaded on this CPU";
}

void no_flush(VirtAddr) {}
void no_flush_all() {}

TEST_P(ShootdownSpaceTest, ALazyCpuLeavesTheRootOfASpaceThatGoesAway) {
  init_tlb_shootdown({&no_flush, &no_flush_all});  // the IPI path, delivered by the fake
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  on_cpu(1, [&] {
    ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok);
    ASSERT_EQ(error_of(switch_mm(nullptr)), Errno::Ok);  // idle, lazily on the root
  });
  const Pfn root = as->root();
  fake_xcpu().sent.clear();
  destroy(as);
  ASSERT_EQ(fake_xcpu().sent.size(), 1u) << "CPU 1 was asked to leave";
  EXPECT_EQ(fake_xcpu().sent[0].to, 1u);
  on_cpu(1, [&] {
    EXPECT_EQ(loaded_mm(), nullptr);
    EXPECT_NE(g_current_root, root) << "CPU 1 left the dying root";
    EXPECT_EQ(g_current_root, root_) << "for the kernel's";
  });
}

TEST_P(ShootdownSpaceTest, TeardownWithALazyCpuThatCannotBeAskedPanics) {
  init_tlb_shootdown({&no_flush, &no_flush_all});
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  on_cpu(1, [&] { ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok); });
  fake_xcpu().refuse = true;
  live_.erase(std::remove(live_.begin(), live_.end(), as), live_.end());
  try {
    (void)as->destroy();
    ADD_FAILURE() << "destroy returned with CPU 1 still on the root";
  } catch (const PanicError& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("cannot be asked to leave"));
  }
  // Undo for the fixture's checks: CPU 1 leaves, the space goes.
  fake_xcpu().refuse = false;
  on_cpu(1, [&] { ASSERT_EQ(error_of(switch_to_kernel_mm()), Errno::Ok); });
  EXPECT_EQ(error_of(as->destroy()), Errno::Ok);
}

// What the frames looked like when the shootdown went out (recorded by the
// flush_tlb_multi wrapper below).
struct AtShootdown {
  std::vector<Pfn> watched;
  std::vector<bool> free;
  std::vector<uint16_t> refs;
  void (*real)(const CpuMask&, const TlbFlushInfo&) = nullptr;
};
AtShootdown g_at_shootdown;

// munmap drops an unmapped frame's reference only after the TLB flush has
// reached the space's other CPUs: page faults allocate without the kernel
// lock, so a frame freed before it could be handed to another space while
// CPU 1 still reaches it through a stale entry; and a COW sharer seeing the
// count fall to 1 early would make the frame writable under that entry.
TEST_P(ShootdownSpaceTest, MunmapLetsFramesGoOnlyAfterTheShootdown) {
  AddressSpace* as = create();
  ASSERT_NE(as, nullptr);
  ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok);
  on_cpu(1, [&] { ASSERT_EQ(error_of(switch_mm(as)), Errno::Ok); });
  const uint64_t a = mmap(as, pg(4), kRw);
  for (unsigned i = 0; i < 4; ++i) fill(as, a + pg(i), static_cast<uint8_t>(i + 1));
  // Pages 0-1 are shared copy-on-write with a child; 2-3 are the space's alone.
  AddressSpace* child = fork(as);
  ASSERT_NE(child, nullptr);
  write(as, a + pg(2), 7);
  write(as, a + pg(3), 7);
  g_at_shootdown = {};
  for (unsigned i = 0; i < 4; ++i) g_at_shootdown.watched.push_back(frame_at(as, a + pg(i)));
  EXPECT_EQ(refs(g_at_shootdown.watched[0]), 2u);
  EXPECT_EQ(refs(g_at_shootdown.watched[2]), 1u);

  g_at_shootdown.real = g_mmu.flush_tlb_multi;
  g_mmu.flush_tlb_multi = [](const CpuMask& cpus, const TlbFlushInfo& info) {
    for (Pfn p : g_at_shootdown.watched) {
      g_at_shootdown.free.push_back(frames().is_free(p));
      g_at_shootdown.refs.push_back(frame_refs().get(p));
    }
    g_at_shootdown.real(cpus, info);
  };
  fake().clear_events();
  const auto r = as->munmap(VirtAddr{a}, pg(4));
  g_mmu.flush_tlb_multi = g_at_shootdown.real;
  ASSERT_EQ(error_of(r), Errno::Ok);
  ASSERT_EQ(multis().size(), 1u);
  ASSERT_EQ(g_at_shootdown.free.size(), 4u);
  for (unsigned i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_FALSE(g_at_shootdown.free[i]) << "freed before CPU 1 dropped its translation";
    EXPECT_EQ(g_at_shootdown.refs[i], i < 2 ? 2u : 1u) << "reference dropped before the shootdown";
  }
  // Afterwards: the space's own frames are free, the shared ones the child's alone.
  EXPECT_EQ(refs(g_at_shootdown.watched[0]), 1u);
  EXPECT_EQ(refs(g_at_shootdown.watched[1]), 1u);
  EXPECT_TRUE(frames().is_free(g_at_shootdown.watched[2]));
  EXPECT_TRUE(frames().is_free(g_at_shootdown.watched[3]));
  destroy(child);
}

INSTANTIATE_TEST_SUITE_P(Modes, ShootdownSpaceTest, testing::ValuesIn(kAllWalkModes), walk_mode_name);

}  // namespace
}  // namespace pvk::test
