// MMU backend boot tests: every backend a platform offers, booted with the
// mm and reject selftests, judged by the counters that explain each
// strategy (docs/design.md, the backend table and "Measuring"). One suite,
// parameterised by (platform, backend); a strategy is a row of data, not a
// copy of the test.
#include "boot_support.hpp"

#include <functional>

namespace pvk::boot_test {
namespace {

// selftest=mm maps, write-protects, re-enables and unmaps this many pages.
constexpr uint64_t kPages = 4096;
// Entries per flush of the batched queue when batch= is not given (Linux PV
// uses multicalls of 32 too; docs/design.md, "Reference figures").
constexpr uint64_t kDefaultBatch = 32;
// Table pages allocated (and hooked up) on the way: one L1 per 512 PTEs and
// a few upper levels. N/64 is generous slack for their hypercalls.
constexpr uint64_t kTableSlack = kPages / 64;

// EXPECTs the relations a backend's strategy implies on one step's counters.
using StepCheck = std::function<void(const StepCounters&)>;

struct BackendCase {
  Platform platform;
  std::string mmu;
  bool page_table_write_refused;  // selftest=reject: does the platform refuse it?
  StepCheck map;                  // on the "map" step of selftest=mm
  StepCheck protect_ro;           // on the "protect_ro" step
  std::string extra = "";         // more boot parameters
};

void PrintTo(const BackendCase& c, std::ostream* out) { *out << platform_name(c.platform) << "/" << c.mmu; }

// Natively a PTE write is a plain store: nothing reaches a hypervisor.
void native_step(const StepCounters& c) {
  EXPECT_GE(c.pte_writes, c.pages);
  EXPECT_EQ(c.hypercalls, 0u);
  EXPECT_EQ(c.multicalls, 0u);
  EXPECT_EQ(c.mmu_update_entries, 0u);
  EXPECT_EQ(c.mmuext_ops, 0u);
  EXPECT_EQ(c.ptwr_traps, 0u);
}

// Batched: queued mmu_update entries, one hypercall per full queue.
void batched_map(const StepCounters& c) {
  const uint64_t n = c.pages;
  EXPECT_GE(c.mmu_update_entries, n);
  EXPECT_LE(c.hypercalls, n / kDefaultBatch + kTableSlack);
  EXPECT_GE(c.hypercalls, n / kDefaultBatch / 2);
  // Across backends: direct needs at least N hypercalls here (checked in its
  // own case), so this says batched * 10 < direct.
  EXPECT_LT(c.hypercalls * 10, n) << "batched must need ten times fewer hypercalls than direct (>= N)";
  EXPECT_EQ(c.ptwr_traps, 0u) << "batched never stores into a page table";
}
void batched_protect_ro(const StepCounters& c) {
  EXPECT_GE(c.mmu_update_entries, c.pages);
  EXPECT_LE(c.hypercalls, c.pages / kDefaultBatch + 8);
  EXPECT_EQ(c.ptwr_traps, 0u);
}

// Direct: one mmu_update hypercall per write.
void direct_map(const StepCounters& c) {
  EXPECT_GE(c.hypercalls, c.pages);
  EXPECT_GE(c.mmu_update_entries, c.pages);
  EXPECT_EQ(c.ptwr_traps, 0u) << "direct never stores into a page table";
}
void direct_protect_ro(const StepCounters& c) {
  EXPECT_GE(c.hypercalls, c.pages);
  EXPECT_GE(c.mmu_update_entries, c.pages);
  EXPECT_EQ(c.ptwr_traps, 0u);
}

// Writable page tables: L1 entries are plain stores Xen traps and emulates;
// only upper-level table hookups go by hypercall.
void wrpt_map(const StepCounters& c) {
  EXPECT_LE(c.mmu_update_entries, c.pages / 64);
  EXPECT_GE(c.ptwr_traps, c.pages);
}
void wrpt_protect_ro(const StepCounters& c) {
  EXPECT_LE(c.hypercalls, 8u);
  EXPECT_GE(c.ptwr_traps, c.pages);
}

// unhook and auto: a whole table is cleared from its L2 entry, written with
// plain stores and rehooked (one validation), so a step over 4,096 pages
// (8 whole tables) carries only the partial tables' and the hooks' entries.
// auto's calibrated threshold (at most 512) unhooks every whole table too.
void unhook_step(const StepCounters& c) {
  EXPECT_LE(c.mmu_update_entries, c.pages / 64) << "whole tables go as plain stores, not queued entries";
  EXPECT_LE(c.hypercalls, c.pages / 32);
  EXPECT_EQ(c.ptwr_traps, 0u) << "an unhooked table takes plain stores: nothing traps";
}

class Backend : public ::testing::TestWithParam<BackendCase> {
 protected:
  // Boots with mmu=<backend> and checks that backend is the one running.
  RunResult boot(const std::string& params) const {
    const std::string extra = GetParam().extra.empty() ? "" : GetParam().extra + " ";
    RunResult r = boot_test::boot(GetParam().platform, "mmu=" + GetParam().mmu + " " + extra + params);
    EXPECT_TRUE(booted_with(r, "mmu", GetParam().mmu)) << transcript(r);
    return r;
  }
};

// Every step of selftest=mm reports its work and the counters behind it.
TEST_P(Backend, MmSelftestReportsEveryStep) {
  const RunResult r = boot("selftest=mm");
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(find_record(r, "selftest", [](const json& rec) {
    return rec.value("name", "") == "mm" && rec.value("pass", false) == true;
  })) << "no {\"event\":\"selftest\",\"name\":\"mm\",...,\"pass\":true} record" << transcript(r);
  for (const char* step : {"map", "protect_ro", "protect_rw", "unmap"}) {
    std::string why;
    const auto c = step_counters(r, "mm", step, &why);
    EXPECT_TRUE(c) << why << transcript(r);
    if (c) {
      EXPECT_EQ(c->pages, kPages) << "step " << step << transcript(r);
    }
  }
}

// The counters of the map and protect_ro steps match the backend's strategy.
TEST_P(Backend, MmCountersMatchStrategy) {
  const RunResult r = boot("selftest=mm");
  ASSERT_TRUE(r.pass) << transcript(r);
  const std::pair<const char*, const StepCheck*> checks[] = {{"map", &GetParam().map},
                                                             {"protect_ro", &GetParam().protect_ro}};
  for (const auto& [step, check] : checks) {
    std::string why;
    const auto c = step_counters(r, "mm", step, &why);
    ASSERT_TRUE(c) << why << transcript(r);
    SCOPED_TRACE(::testing::Message() << "step " << step << ": "
                                      << r.records[*find_record(r, "selftest_step", "step", step)].dump());
    (*check)(*c);
  }
}

// selftest=reject maps a page-table frame writable. Under Xen every backend
// must see the request refused (a hypercall_error record with Xen's
// negative rc, then the selftest record) and the entry left as it was;
// natively there is no such rule and the store goes in.
TEST_P(Backend, RejectSelftest) {
  const bool refused = GetParam().page_table_write_refused;
  const RunResult r = boot("selftest=reject");
  ASSERT_TRUE(r.pass) << transcript(r);

  const auto result = find_record(r, "selftest", "name", "reject");
  ASSERT_TRUE(result) << "no {\"event\":\"selftest\",\"name\":\"reject\",...} record" << transcript(r);
  const json& rec = r.records[*result];
  EXPECT_EQ(rec.value("pass", false), true) << rec.dump();
  EXPECT_EQ(rec.value("refused", !refused), refused) << rec.dump();
  EXPECT_EQ(rec.value("entry_unchanged", !refused), refused) << rec.dump();

  const auto error = find_record(r, "hypercall_error");
  if (refused) {
    ASSERT_TRUE(error) << "no {\"event\":\"hypercall_error\",...} record" << transcript(r);
    EXPECT_LT(*error, *result) << "the hypercall_error record must come before the selftest record";
    const json& err = r.records[*error];
    ASSERT_TRUE(err.contains("rc") && err["rc"].is_number_integer()) << err.dump();
    EXPECT_LT(err["rc"].get<int64_t>(), 0) << err.dump();
  } else {
    EXPECT_FALSE(error) << "unexpected " << r.records[*error].dump();
  }
}

std::string backend_name(const ::testing::TestParamInfo<BackendCase>& info) { return info.param.mmu; }

INSTANTIATE_TEST_SUITE_P(Native, Backend,
                         ::testing::Values(BackendCase{Platform::native, "native", false, native_step, native_step}),
                         backend_name);

INSTANTIATE_TEST_SUITE_P(Xen, Backend,
                         ::testing::Values(BackendCase{Platform::xen, "batched", true, batched_map, batched_protect_ro},
                                           BackendCase{Platform::xen, "direct", true, direct_map, direct_protect_ro},
                                           BackendCase{Platform::xen, "wrpt", true, wrpt_map, wrpt_protect_ro},
                                           BackendCase{Platform::xen, "unhook", true, unhook_step, unhook_step},
                                           // A given threshold: the calibrated one moves with the
                                           // host's load, and selftest=mm's part-filled tables at
                                           // its boundaries would go either way.
                                           BackendCase{Platform::xen, "auto", true, unhook_step, unhook_step,
                                                       "auto_threshold=1"}),
                         backend_name);

// batch= sets the size of the batched queue: mapping N pages takes N/batch
// flushes, plus a few for the page tables allocated on the way.
class BatchSize : public ::testing::TestWithParam<uint64_t> {};

TEST_P(BatchSize, MapStepFlushesOncePerBatch) {
  const uint64_t batch = GetParam();
  const RunResult r = boot(Platform::xen, "mmu=batched batch=" + std::to_string(batch) + " selftest=mm");
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(booted_with(r, "mmu", "batched")) << transcript(r);
  std::string why;
  const auto c = step_counters(r, "mm", "map", &why);
  ASSERT_TRUE(c) << why << transcript(r);
  SCOPED_TRACE(r.records[*find_record(r, "selftest_step", "step", "map")].dump());
  EXPECT_GE(c->mmu_update_entries, c->pages);
  EXPECT_GE(c->hypercalls, c->pages / batch);
  EXPECT_LE(c->hypercalls, c->pages / batch + kTableSlack);
}

// 1 and 512 are the ends of the accepted range; 8 is well off the default.
INSTANTIATE_TEST_SUITE_P(Xen, BatchSize, ::testing::Values(1u, 8u, 512u),
                         [](const ::testing::TestParamInfo<uint64_t>& info) {
                           return "batch" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace pvk::boot_test
