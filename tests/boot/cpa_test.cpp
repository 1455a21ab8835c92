// selftest=cpa (memory types): a page mapped WC yields the platform's
// WC bits — pvk's own PAT natively (slot 1, PWT), Xen's fixed PAT under PV
// (slot 4, the PAT bit) — every logical type round-trips, and
// set_memory_wc/wb are timed on 1..4096 pages with the counters that explain
// each backend's cost. Natively with both pte= modes; under Xen batched with
// both, direct and wrpt with pte=attrs (each Xen boot costs 5-15 s).
#include "boot_support.hpp"

namespace pvk::boot_test {
namespace {

constexpr uint64_t kBatch = 32;  // the batched queue's default size
// pvk's native layout (WB WC UC- UC | WB WP UC- WT) and Xen's XEN_MSR_PAT
// (WB WT UC- UC | WC WP UC UC), as the PAT MSR holds them.
constexpr uint64_t kNativePat = 0x0407050600070106ull;
constexpr uint64_t kXenPat = 0x0000050100070406ull;
constexpr uint64_t kPwt = 1u << 3, kPat = 1u << 7;

struct CpaCase {
  Platform platform;
  std::string mmu;
  std::string pte;
};

void PrintTo(const CpaCase& c, std::ostream* out) { *out << platform_name(c.platform) << "/" << c.mmu << "/" << c.pte; }

uint64_t u64(const json& rec, const char* key) {
  const auto it = rec.find(key);
  if (it == rec.end() || !it->is_number_unsigned()) {
    ADD_FAILURE() << "no unsigned \"" << key << "\" in " << rec.dump();
    return 0;
  }
  return it->get<uint64_t>();
}

// The counters of one set_memory_wc call on `pages` pages match the backend.
void expect_strategy(const std::string& mmu, const json& rec) {
  const uint64_t pages = u64(rec, "pages");
  const uint64_t hypercalls = u64(rec, "hypercalls"), entries = u64(rec, "mmu_update_entries"),
                 traps = u64(rec, "ptwr_traps");
  if (mmu == "native") {
    EXPECT_EQ(hypercalls, 0u);
    EXPECT_EQ(traps, 0u);
    EXPECT_GE(u64(rec, "pte_writes"), pages);
  } else if (mmu == "batched") {
    EXPECT_GE(entries, pages);
    EXPECT_LE(hypercalls, pages / kBatch + 4) << "one hypercall per queue of " << kBatch;
    EXPECT_EQ(traps, 0u);
  } else if (mmu == "direct") {
    EXPECT_GE(hypercalls, pages) << "one mmu_update per leaf";
    EXPECT_EQ(traps, 0u);
  } else if (mmu == "wrpt") {
    EXPECT_GE(traps, pages) << "each leaf store trapped and emulated";
    EXPECT_LE(entries, 4u);
  }
}

class Cpa : public ::testing::TestWithParam<CpaCase> {};

TEST_P(Cpa, WcBitsMatchThePlatformAndTimingIsReported) {
  const CpaCase& c = GetParam();
  const bool xen = c.platform == Platform::xen;
  const RunResult r = boot(c.platform, "mmu=" + c.mmu + " pte=" + c.pte + " selftest=cpa");
  ASSERT_TRUE(r.pass) << transcript(r);
  EXPECT_TRUE(booted_with(r, "mmu", c.mmu)) << transcript(r);
  EXPECT_TRUE(booted_with(r, "pte", c.pte)) << transcript(r);
  EXPECT_TRUE(find_record(r, "selftest", [](const json& rec) {
    return rec.value("name", "") == "cpa" && rec.value("pass", false) == true;
  })) << "no {\"event\":\"selftest\",\"name\":\"cpa\",...,\"pass\":true} record" << transcript(r);

  const auto wc = find_record(r, "selftest_step", [](const json& rec) {
    return rec.value("name", "") == "cpa" && rec.value("step", "") == "wc_bits";
  });
  ASSERT_TRUE(wc) << "no wc_bits step" << transcript(r);
  const json& bits = r.records[*wc];
  SCOPED_TRACE(bits.dump());
  EXPECT_EQ(bits.value("pass", false), true);
  EXPECT_EQ(bits.value("layout", ""), xen ? "xen" : "pvk");
  EXPECT_EQ(u64(bits, "pat"), xen ? kXenPat : kNativePat);
  EXPECT_EQ(u64(bits, "pat_msr"), xen ? kXenPat : kNativePat);
  EXPECT_EQ(u64(bits, "wc_bits"), xen ? kPat : kPwt) << "WC is " << (xen ? "Xen's slot 4 (PAT)" : "pvk's slot 1 (PWT)");
  EXPECT_EQ(u64(bits, "wc_slot"), xen ? 4u : 1u);

  const auto types = find_record(r, "selftest_step", [](const json& rec) {
    return rec.value("name", "") == "cpa" && rec.value("step", "") == "types";
  });
  ASSERT_TRUE(types) << "no types step" << transcript(r);
  EXPECT_EQ(r.records[*types].value("pass", false), true) << r.records[*types].dump();
  EXPECT_EQ(u64(r.records[*types], "types"), 6u) << "WB WT UC- UC WC WP";

  for (uint64_t pages : {1u, 64u, 512u, 4096u}) {
    const auto at = find_record(r, "selftest_step", [&](const json& rec) {
      return rec.value("name", "") == "cpa" && rec.value("step", "") == "timing" && rec.value("pages", 0u) == pages;
    });
    ASSERT_TRUE(at) << "no timing step for " << pages << " pages" << transcript(r);
    const json& rec = r.records[*at];
    SCOPED_TRACE(rec.dump());
    EXPECT_EQ(rec.value("pass", false), true);
    EXPECT_EQ(rec.value("mmu", ""), c.mmu);
    EXPECT_GT(u64(rec, "wc_ns"), 0u);
    EXPECT_GT(u64(rec, "wb_ns"), 0u);
    EXPECT_LE(u64(rec, "wc_ns_min"), u64(rec, "wc_ns"));
    EXPECT_GE(u64(rec, "wc_ns_max"), u64(rec, "wc_ns"));
    EXPECT_EQ(u64(rec, "wc_ns_per_page"), u64(rec, "wc_ns") / pages);
    expect_strategy(c.mmu, rec);
  }
}

std::string case_name(const ::testing::TestParamInfo<CpaCase>& info) { return info.param.mmu + "_" + info.param.pte; }

INSTANTIATE_TEST_SUITE_P(Native, Cpa,
                         ::testing::Values(CpaCase{Platform::native, "native", "attrs"},
                                           CpaCase{Platform::native, "native", "flags"}),
                         case_name);

INSTANTIATE_TEST_SUITE_P(Xen, Cpa,
                         ::testing::Values(CpaCase{Platform::xen, "batched", "attrs"},
                                           CpaCase{Platform::xen, "batched", "flags"},
                                           CpaCase{Platform::xen, "direct", "attrs"},
                                           CpaCase{Platform::xen, "wrpt", "attrs"}),
                         case_name);

}  // namespace
}  // namespace pvk::boot_test
