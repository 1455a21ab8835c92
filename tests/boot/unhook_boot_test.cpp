// mmu=unhook and mmu=auto as the benchmarks see them: fork after
// dirtying whole tables and mprotect of whole tables unhook and rehook L1
// tables, a single entry goes as a queued update under auto, a sparse fork
// (two densities) works; auto's calibration (or auto_threshold=) is reported
// in the boot record; natively both backends are refused, and so is
// auto_threshold= with another backend.
#include "boot_support.hpp"

namespace pvk::boot_test {
namespace {

// The bench records of one item and parameter (the driver prints one per
// size / stride): {"bench":name, key:value, ...}.
const json* bench_record(const RunResult& r, std::string_view name, std::string_view key, uint64_t value) {
  for (const json& rec : r.records)
    if (rec.value("bench", "") == name && rec.value(std::string(key), uint64_t{0}) == value) return &rec;
  return nullptr;
}

uint64_t n(const json& rec, const char* key) { return rec.value(key, uint64_t{0}); }

// The boot record's auto_threshold (a number).
::testing::AssertionResult boot_threshold_is(const RunResult& r, uint64_t want) {
  const auto at = find_record(r, "boot");
  if (!at) return ::testing::AssertionFailure() << "no boot record";
  const json& rec = r.records[*at];
  if (!rec.contains("auto_threshold") || !rec["auto_threshold"].is_number_unsigned() ||
      rec["auto_threshold"].get<uint64_t>() != want)
    return ::testing::AssertionFailure() << "boot record should have \"auto_threshold\":" << want << ": " << rec.dump();
  return ::testing::AssertionSuccess();
}

struct StrategyCase {
  std::string mmu;
  unsigned auto_threshold;  // 0: not given
};

void PrintTo(const StrategyCase& c, std::ostream* out) { *out << c.mmu << " auto_threshold=" << c.auto_threshold; }

class UnhookCounters : public ::testing::TestWithParam<StrategyCase> {};

// fork after dirtying 1,280 pages (every page, then every 100th) and
// mprotect of 1 and 1,024 pages, with the counters each record carries.
TEST_P(UnhookCounters, ForkAndMprotectShowTheStrategy) {
  const StrategyCase& c = GetParam();
  const bool is_auto = c.mmu == "auto";
  std::string params = "mmu=" + c.mmu;
  if (c.auto_threshold) params += " auto_threshold=" + std::to_string(c.auto_threshold);
  params += " bench=fork_dirty:pages=1280:stride=1+100:reps=2,mprotect:pages=1+1024:reps=2";
  const RunResult r = boot(Platform::xen, params);
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(booted_with(r, "mmu", c.mmu)) << transcript(r);
  EXPECT_TRUE(no_frame_leak(r)) << transcript(r);

  const json* dense = bench_record(r, "fork_dirty", "stride", 1);
  const json* sparse = bench_record(r, "fork_dirty", "stride", 100);
  const json* one = bench_record(r, "mprotect", "pages", 1);
  const json* whole = bench_record(r, "mprotect", "pages", 1024);
  ASSERT_TRUE(dense && sparse && one && whole) << "a bench record is missing" << transcript(r);
  SCOPED_TRACE(dense->dump() + "\n" + sparse->dump() + "\n" + one->dump() + "\n" + whole->dump());

  // Dense fork: the parent's full tables are unhooked, written, rehooked.
  EXPECT_GT(n(*dense, "unhooks"), 0u);
  EXPECT_EQ(n(*dense, "rehooks"), n(*dense, "unhooks")) << "every table unhooked in a fork is back at its end";
  EXPECT_EQ(n(*dense, "unhook_fallbacks"), 0u);
  EXPECT_EQ(n(*dense, "dirtied_pages"), 1280u);
  // Sparse fork (13 dirty pages, 2-3 per table): unhook still unhooks; auto
  // sends the few entries as queued updates.
  EXPECT_EQ(n(*sparse, "dirtied_pages"), 13u);
  if (is_auto) {
    EXPECT_EQ(n(*sparse, "unhooks"), 0u);
    EXPECT_GT(n(*sparse, "auto_queued"), 0u);
    EXPECT_GT(n(*sparse, "mmu_update_entries"), 0u);
  } else {
    EXPECT_GT(n(*sparse, "unhooks"), 0u);
  }
  // mprotect of one page: a single entry. auto queues it; unhook unhooks.
  if (is_auto) {
    EXPECT_EQ(n(*one, "unhooks"), 0u);
    EXPECT_GE(n(*one, "auto_queued"), 2 * n(*one, "loops")) << "RO and RW, each one queued table";
    EXPECT_GE(n(*one, "mmu_update_entries"), 2 * n(*one, "loops"));
  } else {
    EXPECT_GE(n(*one, "unhooks"), 2 * n(*one, "loops"));
    EXPECT_EQ(n(*one, "rehooks"), n(*one, "unhooks"));
  }
  // mprotect of 1,024 pages: at least one whole table each way per loop,
  // its 512 entries as plain stores (far fewer queued entries than pages).
  EXPECT_GE(n(*whole, "unhooks"), 2 * n(*whole, "loops"));
  EXPECT_EQ(n(*whole, "rehooks"), n(*whole, "unhooks"));
  EXPECT_LT(n(*whole, "mmu_update_entries"), n(*whole, "loops") * 1024) << "the whole tables went unqueued";
  if (is_auto) EXPECT_GE(n(*whole, "auto_unhooked"), 2 * n(*whole, "loops"));
  if (!is_auto) EXPECT_EQ(n(*whole, "auto_queued") + n(*whole, "auto_unhooked"), 0u) << "unhook makes no choices";

  if (is_auto) {
    const auto cal = find_record(r, "auto_calibration");
    ASSERT_TRUE(cal) << "no auto_calibration record" << transcript(r);
    const json& rec = r.records[*cal];
    EXPECT_EQ(rec.value("calibrated", true), false) << rec.dump();
    EXPECT_EQ(n(rec, "auto_threshold"), c.auto_threshold) << rec.dump();
    EXPECT_GT(n(rec, "queued_entry_ns"), 0u) << "the costs are measured even when the threshold is given";
    EXPECT_TRUE(boot_threshold_is(r, c.auto_threshold)) << transcript(r);
  }
}

std::string strategy_name(const ::testing::TestParamInfo<StrategyCase>& info) {
  return info.param.mmu + (info.param.auto_threshold ? std::to_string(info.param.auto_threshold) : "");
}

INSTANTIATE_TEST_SUITE_P(Xen, UnhookCounters,
                         ::testing::Values(StrategyCase{"unhook", 0}, StrategyCase{"auto", 64}), strategy_name);

class AutoCalibration : public ::testing::TestWithParam<int> {};

// Without auto_threshold= auto measures a queued entry, a plain store and an
// unhook + rehook at boot and derives its threshold from them.
TEST_P(AutoCalibration, ThresholdIsMeasuredAndReported) {
  const RunResult r = boot(Platform::xen, "mmu=auto selftest=mm");
  ASSERT_TRUE(r.pass) << transcript(r);
  const auto cal = find_record(r, "auto_calibration");
  ASSERT_TRUE(cal) << "no auto_calibration record" << transcript(r);
  const json& rec = r.records[*cal];
  EXPECT_EQ(rec.value("calibrated", false), true) << rec.dump();
  const uint64_t at = n(rec, "auto_threshold");
  EXPECT_GE(at, 1u) << rec.dump();
  EXPECT_LE(at, 512u) << rec.dump();
  EXPECT_GT(n(rec, "queued_entry_ns"), 0u) << rec.dump();
  EXPECT_GT(n(rec, "unhook_rehook_ns"), n(rec, "queued_entry_ns")) << "a table cycle costs more than one entry";
  EXPECT_GT(n(rec, "l2_store_ns"), 0u) << rec.dump();
  EXPECT_LT(n(rec, "calibration_us"), 200000u) << "calibration must stay short";
  EXPECT_TRUE(boot_threshold_is(r, at)) << transcript(r);
}

INSTANTIATE_TEST_SUITE_P(Xen, AutoCalibration, ::testing::Values(0));

// Refusals: one line naming the parameter, a failing status.
struct RefusalCase {
  Platform platform;
  std::string params;
  std::string word;  // the line must name it
};
void PrintTo(const RefusalCase& c, std::ostream* out) { *out << platform_name(c.platform) << ": " << c.params; }

class UnhookRefusal : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(UnhookRefusal, IsAOneLineBootError) {
  const RunResult r = boot(GetParam().platform, GetParam().params);
  EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
  EXPECT_TRUE(any_text_line(r, [&](std::string_view l) { return contains(l, GetParam().word) && contains(l, "pvk:"); }))
      << "expected an error line naming " << GetParam().word << transcript(r);
}

INSTANTIATE_TEST_SUITE_P(Native, UnhookRefusal,
                         ::testing::Values(RefusalCase{Platform::native, "mmu=unhook", "mmu=unhook"},
                                           RefusalCase{Platform::native, "mmu=auto", "mmu=auto"}),
                         [](const auto& info) { return info.index == 0 ? std::string("unhook") : "auto"; });
INSTANTIATE_TEST_SUITE_P(Xen, UnhookRefusal,
                         ::testing::Values(RefusalCase{Platform::xen, "mmu=batched auto_threshold=64", "auto_threshold"}),
                         [](const auto&) { return std::string("auto_threshold_without_auto"); });

}  // namespace
}  // namespace pvk::boot_test
