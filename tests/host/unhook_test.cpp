// Unhook-and-rehook (pvops/backends/unhook_tables.h) on the fake MMU: the state
// machine (unhook on the first announced store, plain stores after, rehook on
// flush and leave, fallbacks), the invariant that nothing reaches an unhooked
// range inside a section, and auto's decision function (pvops/backends/auto_choice.h).
#include "host_compat.h"  // first: see there

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "base/frames/frame_refs.h"
#include "base/frames/physmap.h"
#include "base/arch/platform.h"
#include "base/layout.h"
#include "mmu_fixture.h"
#include "panic_host.h"
#include "pvops/backends/auto_choice.h"
#include "pvops/ops_builder.h"
#include "pvops/backends/unhook_tables.h"

namespace pvk {
extern Platform* g_platform;  // console_test.cpp defines it
}

namespace pvk::test {
namespace {

// The console, for the fallback's one line.
std::string g_console;
void capture(const char* s, size_t n) { g_console.append(s, n); }
[[noreturn]] void no_shutdown(ExitStatus) { abort(); }
Platform g_test_platform{};

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr VirtAddr kUser{5 * kGiB};  // 2 MiB aligned: table k covers kUser + k * 2 MiB
constexpr VirtAddr kScratch{PVK_SCRATCH_BASE + kGiB};
constexpr VirtAddr kKernelText{PVK_KERNEL_VMA};
constexpr Pfn kLeafPfn{0x40000};
constexpr uint64_t kTable = kEntriesPerTable;

// The environment of the state machine on the fake: L2 updates go through
// the fake policy (which keeps its own count of who references a table), the
// alias rights are recorded, and a test may make Xen refuse the alias.
struct FakeEnv {
  struct AliasChange {
    Pfn l1;
    bool writable;
  };
  static inline std::vector<AliasChange> aliases;
  static inline std::map<uint64_t, bool> writable;  // pfn -> alias writable now
  static inline bool refuse_alias = false;
  static inline unsigned current_cpu = 0;  // the CPU the state machine runs on

  static bool lazy() { return fake().lazy_depth() > 0; }
  static unsigned cpu() { return current_cpu; }
  static Pfn pfn_of(Pte e) { return FakePolicy::pfn_of(e); }
  static Pfn pfn_of_slot(const Pte* slot) { return virt_to_pfn(slot); }
  static unsigned holders(Pfn l1) {
    const unsigned n = frame_refs().get(l1);
    return n ? n : 1;
  }
  static unsigned present_leaves(Pfn l1) {
    const Pte* t = phys_to_virt<const Pte>(l1);
    return static_cast<unsigned>(std::count_if(t, t + kEntriesPerTable, [](Pte e) { return (e.raw & pte_bit::Present) != 0; }));
  }
  static bool queue_busy() { return fake().pending() != 0; }
  static ErrorOr<void> set_l2(Pte* slot, Pte v) {
    // Xen sends its queue before an immediate update; so does the fake's flush.
    TRY(FakePolicy::flush_queue());
    return FakePolicy::store(slot, v, Level::L2);
  }
  static ErrorOr<void> set_alias(Pfn l1, bool w) {
    if (w && refuse_alias) return Errno::EINVAL;
    // Xen's rule: a writable alias only while no L2 entry references the table.
    if (w && fake().uppers(l1) != 0) fake().violations().push_back("writable alias of a hooked L1 table");
    aliases.push_back({l1, w});
    writable[raw(l1)] = w;
    return {};
  }
  static ErrorOr<void> queued(Pte* slot, Pte v, bool preserve_ad) {
    if (preserve_ad) return FakePolicy::modify_prot_commit(slot, Pte{slot->raw}, v);
    return FakePolicy::store(slot, v, Level::L1);
  }
  [[noreturn]] static void fatal(const char* what) { panic("unhook: %s", what); }
};

using Tables = UnhookTables<FakeEnv>;

// XenPolicy<UnhookL1Writer>'s shape over the fake policy.
struct UnhookFakePolicy : FakePolicy {
  static ErrorOr<void> store(Pte* slot, Pte v, Level level) {
    if (level == Level::L1) return Tables::store(slot, v, false);
    if (level == Level::L2) {
      // The fake must never see an L1 table hooked while its alias is writable.
      if ((v.raw & pte_bit::Present) && FakeEnv::writable[raw(FakePolicy::pfn_of(v))] && !Tables::is_unhooked(FakePolicy::pfn_of(v)))
        fake().violations().push_back("L1 hooked with a writable alias");
      TRY(Tables::before_l2_store(slot, v));
    }
    return FakePolicy::store(slot, v, level);
  }
  static Pte modify_prot_start(Pte* slot) {
    if (Tables::is_unhooked(virt_to_pfn(slot))) return *slot;
    return FakePolicy::modify_prot_start(slot);
  }
  static ErrorOr<void> modify_prot_commit(Pte* slot, Pte old, Pte v) {
    if (Tables::is_unhooked(virt_to_pfn(slot))) return Tables::store(slot, v, true);
    return FakePolicy::modify_prot_commit(slot, old, v);
  }
  static ErrorOr<void> flush_queue() {
    TRY(Tables::rehook_all());
    return FakePolicy::flush_queue();
  }
  static constexpr bool kTableHints = true;
  static ErrorOr<void> begin_table(Pte* slot, VirtAddr base, unsigned n) { return Tables::begin_table(slot, base, n); }
  static Pte l2_entry(const Pte* slot) { return Tables::l2_entry(slot); }
};
static_assert(MmuPolicy<UnhookFakePolicy>);

ErrorOr<void> (*g_fake_leave)() = nullptr;

class UnhookTest : public FakeMmuTest {
 protected:
  void SetUp() override {
    start({4096, PteAccess::Attrs, /*defer_l1=*/true});
    g_test_platform.console_write = &capture;
    g_test_platform.shutdown = &no_shutdown;
    g_platform = &g_test_platform;
    g_console.clear();
    FakeEnv::aliases.clear();
    FakeEnv::writable.clear();
    FakeEnv::refuse_alias = false;
    FakeEnv::current_cpu = 0;
    Tables::configure(TableMode::Unhook, {});
    // The fake's lazy, TLB and root hooks; the unhook policy's entry verbs
    // and walk; flush and leave rehook first, as pvops/backends/unhook_policy.h wires them.
    MmuOps ops = g_mmu;
    const MmuOps u = make_mmu_ops<UnhookFakePolicy>("unhook-fake", PteAccess::Attrs);
    ops.set_pte = u.set_pte;
    ops.set_pmd = u.set_pmd;
    ops.ptep_modify_prot_start = u.ptep_modify_prot_start;
    ops.ptep_modify_prot_commit = u.ptep_modify_prot_commit;
    ops.range = u.range;
    g_fake_leave = ops.leave_lazy_mmu;
    ops.flush_lazy_mmu = &UnhookFakePolicy::flush_queue;
    ops.leave_lazy_mmu = []() -> ErrorOr<void> {
      TRY(Tables::rehook_all());
      return g_fake_leave();
    };
    g_mmu = ops;
  }
  void TearDown() override {
    EXPECT_EQ(Tables::unhooked(), 0u) << "a table was left unhooked after its section";
    EXPECT_EQ(g_unhooked_tables, 0u);
    FakeMmuTest::TearDown();
    g_platform = nullptr;
  }

  void map_rw(VirtAddr va, uint64_t pages, FrameSource src = FrameSource{nullptr, kLeafPfn}) {
    Tables::configure(TableMode::Auto, {});  // setup goes queued: only the step under test unhooks
    ASSERT_EQ(error_of(map(va, pages, src, pte_flags::UserRw)), Errno::Ok);
    Tables::configure(TableMode::Unhook, {});
    g_mmu_counters = {};
    fake().clear_events();
    FakeEnv::aliases.clear();
  }
  Pte* l2_slot(VirtAddr va) { return fake().slot(root_, va, Level::L2); }
  Pfn l1_of(VirtAddr va) { return FakePolicy::pfn_of(*l2_slot(va)); }
  size_t l1_stores() {
    size_t n = 0;
    for (const MmuEvent& e : fake().events(Ev::Store)) n += e.level == Level::L1;
    return n;
  }
  size_t l2_stores() {
    size_t n = 0;
    for (const MmuEvent& e : fake().events(Ev::Store)) n += e.level == Level::L2;
    return n;
  }
};

TEST_F(UnhookTest, FirstWriteUnhooksLaterWritesArePlainLeaveRehooks) {
  map_rw(kUser, kTable);
  const Pfn l1 = l1_of(kUser);
  {
    LazyMmuSection section(root_);
    ASSERT_EQ(error_of(g_mmu.range.protect(root_, kUser, kTable, {}, PteFlags{pte_bit::Write}, section)), Errno::Ok);
    // Inside the section: the L2 entry is empty in memory, the alias writable,
    // the leaves already changed by plain stores (no L1 update went out).
    EXPECT_TRUE(l2_slot(kUser)->none());
    EXPECT_EQ(fake().uppers(l1), 0u) << "Xen no longer sees the table";
    EXPECT_TRUE(FakeEnv::writable[raw(l1)]);
    EXPECT_EQ(l1_stores(), 0u);
    EXPECT_FALSE(fake().table(l1)[7].raw & pte_bit::Write);
    EXPECT_EQ(g_mmu_counters.unhooks, 1u);
    EXPECT_EQ(g_unhooked_tables, 1u);
    ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  }
  // Rehooked: alias read-only first, then the saved entry, one each.
  ASSERT_EQ(FakeEnv::aliases.size(), 2u);
  EXPECT_TRUE(FakeEnv::aliases[0].writable);
  EXPECT_FALSE(FakeEnv::aliases[1].writable);
  EXPECT_EQ(FakePolicy::pfn_of(*l2_slot(kUser)), l1);
  EXPECT_EQ(fake().uppers(l1), 1u);
  EXPECT_EQ(g_mmu_counters.rehooks, 1u);
  EXPECT_EQ(l2_stores(), 2u) << "one clear, one rehook";
  for (uint64_t i = 0; i < kTable; ++i) {
    auto e = lookup(kUser + i * kPageSize);
    ASSERT_FALSE(e.is_error());
    EXPECT_FALSE(e.value().raw & pte_bit::Write) << i;
  }
}

// Page operations of different spaces run on different CPUs at once (no
// kernel lock): each CPU's unhooked tables are its own section's, and only
// the count over all CPUs is shared.
TEST_F(UnhookTest, EachCpuKeepsItsOwnUnhookedTables) {
  const VirtAddr second = kUser + kTable * kPageSize;  // the next L1 table
  map_rw(kUser, 2 * kTable);
  const Pfn first_l1 = l1_of(kUser), second_l1 = l1_of(second);
  LazyMmuSection section(root_);
  FakeEnv::current_cpu = 1;
  ASSERT_EQ(error_of(g_mmu.range.protect(root_, kUser, 8, {}, PteFlags{pte_bit::Write}, section)), Errno::Ok);
  EXPECT_EQ(Tables::unhooked(), 1u);
  FakeEnv::current_cpu = 0;
  // CPU 0 has nothing unhooked, though another CPU has: its walk reads the
  // memory's L2 entry, its stores into the other CPU's table are not plain.
  EXPECT_EQ(Tables::unhooked(), 0u);
  EXPECT_EQ(g_unhooked_tables, 1u);
  EXPECT_FALSE(Tables::is_unhooked(first_l1));
  EXPECT_TRUE(Tables::l2_entry(l2_slot(kUser)).none());
  ASSERT_EQ(error_of(g_mmu.range.protect(root_, second, 8, {}, PteFlags{pte_bit::Write}, section)), Errno::Ok);
  EXPECT_EQ(Tables::unhooked(), 1u);
  EXPECT_TRUE(Tables::is_unhooked(second_l1));
  EXPECT_EQ(g_unhooked_tables, 2u);
  // A flush on CPU 0 rehooks CPU 0's table only.
  ASSERT_EQ(error_of(Tables::rehook_all()), Errno::Ok);
  EXPECT_EQ(FakePolicy::pfn_of(*l2_slot(second)), second_l1);
  EXPECT_TRUE(l2_slot(kUser)->none());
  EXPECT_EQ(g_unhooked_tables, 1u);
  FakeEnv::current_cpu = 1;
  EXPECT_TRUE(Tables::is_unhooked(first_l1));
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  EXPECT_EQ(Tables::unhooked(), 0u);
  EXPECT_EQ(FakePolicy::pfn_of(*l2_slot(kUser)), first_l1);
  EXPECT_EQ(g_mmu_counters.unhooks, 2u);
  EXPECT_EQ(g_mmu_counters.rehooks, 2u);
  FakeEnv::current_cpu = 0;
}

TEST_F(UnhookTest, FlushRehooksAndTheNextWriteUnhooksAgain) {
  map_rw(kUser, kTable);
  LazyMmuSection section(root_);
  ASSERT_EQ(error_of(g_mmu.range.protect(root_, kUser, 8, {}, PteFlags{pte_bit::Write}, section)), Errno::Ok);
  EXPECT_EQ(Tables::unhooked(), 1u);
  ASSERT_EQ(error_of(g_mmu.flush_lazy_mmu()), Errno::Ok);
  EXPECT_EQ(Tables::unhooked(), 0u);
  EXPECT_FALSE(l2_slot(kUser)->none());
  EXPECT_EQ(g_mmu_counters.rehooks, 1u);
  ASSERT_EQ(error_of(g_mmu.range.protect(root_, kUser + 8 * kPageSize, 8, {}, PteFlags{pte_bit::Write}, section)),
            Errno::Ok);
  EXPECT_EQ(g_mmu_counters.unhooks, 2u);
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  EXPECT_EQ(g_mmu_counters.rehooks, 2u);
}

TEST_F(UnhookTest, OutsideASectionStoresAreQueuedUpdates) {
  map_rw(kUser, 4);
  ASSERT_EQ(error_of(g_mmu.set_pte(fake().slot(root_, kUser, Level::L1), Pte{})), Errno::Ok);
  EXPECT_EQ(g_mmu_counters.unhooks, 0u);
  EXPECT_EQ(l1_stores(), 1u);
}

TEST_F(UnhookTest, SharedTableFallsBackToQueuedUpdates) {
  // The walk copies a shared table out before storing into it, so the state
  // machine meets one only if that rule breaks: it must still refuse (a
  // second L2 entry keeps Xen's type count up and sees every store).
  map_rw(kUser, kTable);
  frame_refs().set(l1_of(kUser), 2);
  {
    LazyMmuSection section(root_);
    ASSERT_EQ(error_of(Tables::begin_table(l2_slot(kUser), kUser, kTable)), Errno::Ok);
    ASSERT_EQ(error_of(g_mmu.set_pte(fake().slot(root_, kUser, Level::L1), Pte{})), Errno::Ok);
    frame_refs().set(l1_of(kUser), 0);
    ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  }
  EXPECT_EQ(g_mmu_counters.unhooks, 0u);
  EXPECT_EQ(g_mmu_counters.unhook_fallbacks, 1u);
  EXPECT_EQ(l1_stores(), 1u) << "the store went as a queued update";
  EXPECT_FALSE(l2_slot(kUser)->none());
  EXPECT_THAT(g_console, testing::HasSubstr("ptshare shares it")) << "the fallback says which";
}

TEST_F(UnhookTest, KernelTablesFallBackScratchTablesDoNot) {
  for (VirtAddr va : {kKernelText, kScratch}) {
    Tables::configure(TableMode::Auto, {});
    ASSERT_EQ(error_of(map(va, 4, FrameSource{nullptr, kLeafPfn}, pte_flags::KernelRw)), Errno::Ok);
    Tables::configure(TableMode::Unhook, {});
  }
  g_mmu_counters = {};
  ASSERT_EQ(error_of(protect(kKernelText, 4, {}, PteFlags{pte_bit::Write})), Errno::Ok);
  EXPECT_EQ(g_mmu_counters.unhook_fallbacks, 1u);
  EXPECT_EQ(g_mmu_counters.unhooks, 0u);
  ASSERT_EQ(error_of(protect(kScratch, 4, {}, PteFlags{pte_bit::Write})), Errno::Ok);
  EXPECT_EQ(g_mmu_counters.unhooks, 1u);
  EXPECT_EQ(g_mmu_counters.rehooks, 1u);
  for (VirtAddr va : {kKernelText, kScratch}) ASSERT_EQ(error_of(unmap(va, 4)), Errno::Ok);
}

TEST_F(UnhookTest, RefusedAliasPutsTheEntryBackAndQueues) {
  map_rw(kUser, kTable);
  const Pte before = *l2_slot(kUser);
  FakeEnv::refuse_alias = true;
  ASSERT_EQ(error_of(protect(kUser, kTable, {}, PteFlags{pte_bit::Write})), Errno::Ok);
  EXPECT_EQ(l2_slot(kUser)->raw, before.raw);
  EXPECT_EQ(g_mmu_counters.unhook_fallbacks, 1u);
  EXPECT_EQ(g_mmu_counters.unhooks, 0u);
  EXPECT_EQ(l1_stores(), kTable);
}

TEST_F(UnhookTest, TheWalkSeesAnUnhookedTableAndNeverHooksASecondOne) {
  map_rw(kUser, 16);
  const size_t tables = fake().table_count(Level::L1);
  LazyMmuSection section(root_);
  ASSERT_EQ(error_of(g_mmu.range.protect(root_, kUser, 8, {}, PteFlags{pte_bit::Write}, section)), Errno::Ok);
  ASSERT_TRUE(l2_slot(kUser)->none());
  // Looked up through the saved entry, not taken for a hole.
  auto e = g_mmu.range.lookup(root_, kUser + 3 * kPageSize);
  ASSERT_FALSE(e.is_error());
  EXPECT_FALSE(e.value().raw & pte_bit::Write);
  // A map into the same 2 MiB lands in the unhooked table: no new table.
  ASSERT_EQ(error_of(g_mmu.range.map(root_, kUser + 100 * kPageSize, 1, FrameSource{nullptr, kLeafPfn},
                                     pte_flags::UserRw)),
            Errno::Ok);
  EXPECT_EQ(fake().table_count(Level::L1), tables);
  EXPECT_EQ(fake().count(Ev::PrepareTable), 0u);
  // An unmap of part of it must not take the L2 table for empty either.
  ASSERT_EQ(error_of(g_mmu.range.unmap(root_, kUser + 100 * kPageSize, 1, {}, section)), Errno::Ok);
  EXPECT_EQ(fake().table_count(Level::L2), 1u);
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  EXPECT_TRUE(lookup(kUser + 100 * kPageSize).is_error());
  EXPECT_EQ(lookup(kUser + 15 * kPageSize).value().raw & pte_bit::Write, pte_bit::Write);
}

TEST_F(UnhookTest, AccessIntoAnUnhookedRangeInsideASectionIsCaught) {
  map_rw(kUser, 16);
  LazyMmuSection section(root_);
  ASSERT_EQ(error_of(g_mmu.range.protect(root_, kUser, 8, {}, PteFlags{pte_bit::Write}, section)), Errno::Ok);
  // The debug check the walk's callers use, and a fault's own section.
  EXPECT_THROW(Tables::check_access(l2_slot(kUser), kUser + kPageSize), PanicError);
  try {
    LazyMmuSection fault(root_);
    ADD_FAILURE() << "a section opened while a table is unhooked";
  } catch (const PanicError& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("unhooked"));
  }
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  Tables::check_access(l2_slot(kUser), kUser + kPageSize);  // rehooked: fine
}

TEST_F(UnhookTest, WholeTableUnmapForgetsTheTableWithoutRehook) {
  map_rw(kUser, kTable);
  LazyMmuSection section(root_);
  ASSERT_EQ(error_of(g_mmu.range.protect(root_, kUser, 4, {}, PteFlags{pte_bit::Write}, section)), Errno::Ok);
  ASSERT_EQ(error_of(g_mmu.range.unmap(root_, kUser, kTable, {}, section)), Errno::Ok);
  EXPECT_EQ(Tables::unhooked(), 0u);
  ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  EXPECT_EQ(g_mmu_counters.unhooks, 1u);
  EXPECT_EQ(g_mmu_counters.rehooks, 0u) << "a table released needs no validation";
  EXPECT_EQ(fake().table_count(Level::L1), 0u);
  EXPECT_EQ(fake().table_count(Level::L2), 0u);
  EXPECT_EQ(frames().free_count(), baseline_ - 1) << "the L1 and L2 tables came back (the L3 lives with the space)";
}

TEST_F(UnhookTest, MoreTablesThanSlotsRehookTheOldest) {
  constexpr unsigned kTables = Tables::kMaxUnhooked + 3;
  map_rw(kUser, kTables * kTable);
  ASSERT_EQ(error_of(protect(kUser, kTables * kTable, {}, PteFlags{pte_bit::Write})), Errno::Ok);
  EXPECT_EQ(g_mmu_counters.unhooks, kTables);
  EXPECT_EQ(g_mmu_counters.rehooks, kTables);
  EXPECT_EQ(l1_stores(), 0u);
  for (unsigned t = 0; t < kTables; ++t) EXPECT_EQ(fake().uppers(l1_of(kUser + t * kTable * kPageSize)), 1u) << t;
}

TEST_F(UnhookTest, ForkWriteProtectsTheParentThroughAnUnhookedTable) {
  // Leaves need real frames here: fork_range counts references to them.
  std::vector<Pfn> leaves(kTable);
  for (Pfn& p : leaves) p = frames().try_alloc().value();
  map_rw(kUser, kTable, FrameSource{leaves.data(), {}});
  const Pfn child = fake().new_root();
  fake().clear_events();
  {
    LazyMmuSection section(root_);
    ASSERT_EQ(error_of(g_mmu.range.fork_range(root_, child, kUser, kTable, ForkMode::CopyOnWrite, section)), Errno::Ok);
    ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  }
  EXPECT_EQ(g_mmu_counters.unhooks, 1u);
  EXPECT_EQ(g_mmu_counters.rehooks, 1u);
  EXPECT_EQ(l1_stores(), 0u) << "the parent's 512 write-protects were plain stores; the child's table was built fresh";
  for (uint64_t i = 0; i < kTable; i += 37) {
    const Pte p = lookup(kUser + i * kPageSize).value();
    EXPECT_EQ(p.raw & (pte_bit::Write | pte_bit::Cow), pte_bit::Cow);
    EXPECT_EQ(g_mmu.range.lookup(child, kUser + i * kPageSize).value().raw, p.raw);
  }
  {
    LazyMmuSection section(child);
    ASSERT_EQ(error_of(g_mmu.range.teardown(child, {}, section)), Errno::Ok);
    ASSERT_EQ(error_of(g_mmu.range.release_user_tables(child, section)), Errno::Ok);
    ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  }
  for (Pfn p : leaves) frame_refs().dec(p);
  must(g_mmu.release_pt_page(child, Level::L4), "child root");
  frames().must_free(child);
  ASSERT_EQ(error_of(unmap(kUser, kTable)), Errno::Ok);
  for (Pfn p : leaves) frames().must_free(p);
}

TEST_F(UnhookTest, AutoQueuesSmallChangesAndUnhooksLargeOnes) {
  map_rw(kUser, kTable);
  Tables::configure(TableMode::Auto, {64, 0});
  ASSERT_EQ(error_of(protect(kUser, 63, {}, PteFlags{pte_bit::Write})), Errno::Ok);
  EXPECT_EQ(g_mmu_counters.auto_queued, 1u);
  EXPECT_EQ(g_mmu_counters.unhooks, 0u);
  EXPECT_EQ(l1_stores(), 63u);
  ASSERT_EQ(error_of(protect(kUser, 64, {PteFlags{pte_bit::Write}}, {})), Errno::Ok);
  EXPECT_EQ(g_mmu_counters.auto_unhooked, 1u);
  EXPECT_EQ(g_mmu_counters.unhooks, 1u);
  EXPECT_EQ(l1_stores(), 63u) << "the 64 went as plain stores";
}

TEST_F(UnhookTest, AutoPricesTheEarlySendOfABusyQueue) {
  // Two tables; 64 entries unhook a table, 72 when something is queued.
  map_rw(kUser, 2 * kTable);
  Tables::configure(TableMode::Auto, {64, 0, 0, 8});
  const VirtAddr second = kUser + kTable * kPageSize;
  {
    LazyMmuSection section(root_);
    // One queued store in the second table, then 64 into the first: the
    // unhook would send that store on its own, so the table is queued too.
    ASSERT_EQ(error_of(g_mmu.range.protect(root_, second, 1, {}, PteFlags{pte_bit::Write}, section)), Errno::Ok);
    ASSERT_EQ(error_of(g_mmu.range.protect(root_, kUser, 64, {}, PteFlags{pte_bit::Write}, section)), Errno::Ok);
    ASSERT_EQ(error_of(section.finish()), Errno::Ok);
  }
  EXPECT_EQ(g_mmu_counters.auto_queued, 2u);
  EXPECT_EQ(g_mmu_counters.unhooks, 0u);
  // With the queue empty the same 64 stores unhook it.
  ASSERT_EQ(error_of(protect(kUser, 64, {PteFlags{pte_bit::Write}}, {})), Errno::Ok);
  EXPECT_EQ(g_mmu_counters.auto_unhooked, 1u);
  EXPECT_EQ(g_mmu_counters.unhooks, 1u);
}

// ---- auto's decision function ----

TEST(AutoChoice, ThresholdSplitsQueueFromUnhook) {
  const AutoThresholds t{100, 32};
  EXPECT_EQ(choose_strategy(1, t), Strategy::Queue);
  EXPECT_EQ(choose_strategy(99, t), Strategy::Queue);
  EXPECT_EQ(choose_strategy(100, t), Strategy::Unhook);
  EXPECT_EQ(choose_strategy(512, t), Strategy::Unhook);
  EXPECT_EQ(choose_strategy(512, AutoThresholds{0, 0}), Strategy::Queue) << "0: never unhook";
  EXPECT_EQ(choose_strategy(1, AutoThresholds{1, 0}), Strategy::Unhook) << "1: always";
  EXPECT_FALSE(choose_share(31, t));
  EXPECT_TRUE(choose_share(32, t));
}

TEST(AutoChoice, ATablesThresholdFollowsItsPresentLeaves) {
  // 200 entries for a full table, 20 for an empty one.
  const AutoThresholds t{200, 32, 20};
  EXPECT_EQ(unhook_threshold(t, 0), 20u);
  EXPECT_EQ(unhook_threshold(t, 512), 200u);
  EXPECT_EQ(unhook_threshold(t, 64), 43u) << "20 + 180 * 64 / 512, rounded up";
  EXPECT_EQ(unhook_threshold(t, 1000), 200u) << "clamped to a table";
  unsigned asked = 0;
  auto present = [&](unsigned p) {
    return [&asked, p] {
      ++asked;
      return p;
    };
  };
  EXPECT_EQ(choose_strategy(64, t, present(64)), Strategy::Unhook) << "a 64-leaf table rehooks cheaply";
  EXPECT_EQ(choose_strategy(64, t, present(512)), Strategy::Queue) << "a full one does not";
  EXPECT_EQ(asked, 2u);
  EXPECT_EQ(choose_strategy(19, t, present(0)), Strategy::Queue);
  EXPECT_EQ(choose_strategy(200, t, present(512)), Strategy::Unhook);
  EXPECT_EQ(asked, 2u) << "below the empty table's threshold and at the full one's, the table is not read";
  // One threshold (auto_threshold=, or no empty-table figure): no reading.
  EXPECT_EQ(choose_strategy(64, AutoThresholds{100, 32}, present(0)), Strategy::Queue);
  EXPECT_EQ(choose_strategy(64, AutoThresholds{64, 32}, present(512)), Strategy::Unhook);
  EXPECT_EQ(asked, 2u);
  EXPECT_EQ(unhook_threshold(AutoThresholds{0, 0, 5}, 0), 0u) << "0 still never unhooks";
}

TEST(AutoChoice, ABusyQueueRaisesTheThreshold) {
  // 200 / 20 entries as above, 6 more while the queue holds updates.
  const AutoThresholds t{200, 32, 20, 6};
  EXPECT_EQ(unhook_threshold(t, 64), 43u);
  EXPECT_EQ(unhook_threshold(t, 64, true), 49u);
  EXPECT_EQ(unhook_threshold(t, 0, true), 26u);
  EXPECT_EQ(unhook_threshold(AutoThresholds{510, 32, 20, 6}, 512, true), 512u) << "clamped to a table";
  EXPECT_EQ(unhook_threshold(AutoThresholds{0, 0, 5, 6}, 0, true), 0u) << "0 still never unhooks";
  EXPECT_EQ(choose_strategy(45, t, [] { return 64u; }), Strategy::Unhook);
  EXPECT_EQ(choose_strategy(45, t, [] { return 64u; }, true), Strategy::Queue) << "the early send tips it";
  EXPECT_EQ(choose_strategy(200, t, [] { return 512u; }, true), Strategy::Queue);
  EXPECT_EQ(choose_strategy(206, t, [] { return 512u; }, true), Strategy::Unhook);
  EXPECT_EQ(choose_strategy(512, t, [] { return 512u; }, true), Strategy::Unhook) << "a whole table still unhooks";
  // One threshold (auto_threshold= gives no extra, the calibration may).
  EXPECT_EQ(choose_strategy(100, AutoThresholds{100, 32, 0, 0}, [] { return 0u; }, true), Strategy::Unhook);
  EXPECT_EQ(choose_strategy(100, AutoThresholds{100, 32, 0, 3}, [] { return 0u; }, true), Strategy::Queue);
}

TEST(AutoChoice, ThresholdIsTheBreakEvenOfTheMeasuredCosts) {
  // 1 µs per queued entry, 10 ns per plain store, 99 µs per unhook+rehook:
  // n * 1000 >= 99000 + n * 10 from n = 100.
  EXPECT_EQ(threshold_from_costs(1000, 10, 99000), 100u);
  EXPECT_EQ(threshold_from_costs(1000, 0, 1000), 1u);
  EXPECT_EQ(threshold_from_costs(1000, 0, 0), 1u);
  EXPECT_EQ(threshold_from_costs(10, 0, 1000000), 512u) << "clamped: a table has 512 entries";
  EXPECT_EQ(threshold_from_costs(10, 10, 5), 0u) << "plain stores no cheaper: never unhook";
  // The early send: 4 µs against 990 ns saved per entry, 5 entries.
  EXPECT_EQ(busy_extra_from_costs(1000, 10, 4000), 5u);
  EXPECT_EQ(busy_extra_from_costs(1000, 10, 0), 0u);
  EXPECT_EQ(busy_extra_from_costs(10, 10, 4000), 0u) << "the queue wins anyway";
  EXPECT_EQ(busy_extra_from_costs(2, 1, 100000), 512u);
  EXPECT_EQ(share_threshold_from_costs(1000, 15000, 100000), 80u);
  EXPECT_EQ(share_threshold_from_costs(0, 1, 1), 512u);
}

}  // namespace
}  // namespace pvk::test
