// The matrix: which configurations boot, with which command lines, items,
// machines and repetitions.
#include "pvk/bench/matrix.hpp"

#include "pvk/bench/catalog.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace pvk::bench {
namespace {

// The sparse fork series, in the first boot of each configuration
// that runs fork_dirty.
const std::string kDensity = "fork_dirty:pages=12800:stride=2+10+100+512";
// The seed variations' benchmarks (forkwait, forkexec and kernbench
// beside each seed's own; shell exec too).
const std::string kPgdCacheOff = "getpid,getppid,segv,divzero,forkwait,lat_pipe,ctx,forkexec,shell_exec,kernbench";
// ptshare=on: fork and mprotect, and shell exec for its target.
const std::string kPtshareOn = "fork_dirty,mprotect,shell_exec";
const std::string kZeroPageOff =
    "fault_zero_read,fault_zero_cow,fault_write,poke_full,memset_present,forkexec,forkwait,shell_exec,kernbench";

std::set<std::string> ids(const Plan& plan) {
  std::set<std::string> out;
  for (const auto& c : plan.configs) out.insert(c.id());
  return out;
}

std::vector<const Boot*> boots_of(const Plan& plan, const std::string& id) {
  std::vector<const Boot*> out;
  for (const auto& b : plan.boots)
    if (plan.configs[b.config].id() == id) out.push_back(&b);
  return out;
}

TEST(Config, IdLabelAndEffectiveValues) {
  const Config c = make_config("xen", {{"pgd_cache", "off"}, {"mmu", "wrpt"}, {"batch", "8"}});
  EXPECT_EQ(c.cmdline(), "mmu=wrpt batch=8 pgd_cache=off");
  EXPECT_EQ(c.id(), "xen mmu=wrpt batch=8 pgd_cache=off");
  EXPECT_EQ(c.label(), "xen/wrpt batch=8 pgd_cache=off");
  EXPECT_EQ(make_config("native", {{"mmu", "native"}}).label(), "native");
  EXPECT_EQ(c.get("platform"), "xen");
  EXPECT_EQ(c.get("zero_page"), std::nullopt);
  EXPECT_EQ(c.effective("zero_page"), "on");  // the kernel's default
  EXPECT_EQ(c.effective("pgd_cache"), "off");
  EXPECT_EQ(c.effective("no_such_switch"), std::nullopt);
  EXPECT_EQ(config_from_id(c.id()).id(), c.id());
  EXPECT_EQ(config_from_id("linux-native").platform, "linux-native");
  EXPECT_THROW(make_config("xen", {{"mmu", "wrpt"}, {"mmu", "batched"}}), std::invalid_argument);
}

TEST(Matrix, DefaultIsEveryBackendPlusTheSeedVariations) {
  const Plan plan = build_plan(MatrixOptions{});
  const std::set<std::string> expected{
      "native mmu=native",           "native mmu=native pgd_cache=off", "native mmu=native zero_page=off",
      "native mmu=native pte=flags", "native mmu=native ptshare=on",    "xen mmu=batched",
      "xen mmu=batched pgd_cache=off", "xen mmu=batched zero_page=off", "xen mmu=batched pte=flags",
      "xen mmu=batched ptshare=on",  "xen mmu=direct",                  "xen mmu=direct pgd_cache=off",
      "xen mmu=direct zero_page=off", "xen mmu=direct pte=flags",       "xen mmu=direct ptshare=on",
      "xen mmu=wrpt",                "xen mmu=wrpt pgd_cache=off",      "xen mmu=wrpt zero_page=off",
      "xen mmu=wrpt pte=flags",      "xen mmu=wrpt ptshare=on",
      // pvops costs, natively and under batched: unpatched pvops calls, and
      // seed 002's flag reads through them.
      "native mmu=native pvpatch=off", "native mmu=native pte=flags pvpatch=off", "xen mmu=batched pvpatch=off",
      "xen mmu=batched pte=flags pvpatch=off",
      // Unhook and auto, with fork and mprotect only.
      "xen mmu=unhook", "xen mmu=auto",
      // SMP: two CPUs, natively and under batched with each shootdown.
      "native mmu=native smp=2", "xen mmu=batched sched_cpus=all shootdown=hypercall smp=2",
      "xen mmu=batched sched_cpus=all shootdown=ipi smp=2",
  };
  EXPECT_EQ(ids(plan), expected);
  // One boot per configuration, plus the 128,000-page sizes of the targets
  // once on each configuration they compare with another of this run:
  // table sharing's batched ptshare=on and wrpt (ptshare=off), unhook-and-auto's auto
  // against batched, wrpt and unhook; fork_dirty. (The others compare with
  // Linux: --linux.) The two-CPU configurations: one boot each (no
  // MatrixOptions::smp_reps here).
  EXPECT_EQ(plan.boots.size(), 34u);
  std::map<std::string, std::string> sized;  // configuration -> bench= of its 128000 boot
  for (const auto& b : plan.boots)
    if (b.group == "128000") sized[plan.configs[b.config].id()] = b.bench;
  EXPECT_EQ(sized, (std::map<std::string, std::string>{
                       {"xen mmu=batched ptshare=on", "fork_dirty:pages=128000:reps=1"},
                       {"xen mmu=wrpt", "fork_dirty:pages=128000:reps=1"},
                       {"xen mmu=batched", "fork_dirty:pages=128000:reps=1"},
                       {"xen mmu=unhook", "fork_dirty:pages=128000:reps=1"},
                       {"xen mmu=auto", "fork_dirty:pages=128000:reps=1"},
                   }));
  // unhook and auto: fork and mprotect (with the density series), no variations.
  for (const char* id : {"xen mmu=unhook", "xen mmu=auto"}) {
    std::map<std::string, std::string> focused;  // group -> command line
    for (const Boot* b : boots_of(plan, id)) focused[b->group] = b->cmdline;
    const std::string mmu = config_from_id(id).cmdline();
    EXPECT_EQ(focused, (std::map<std::string, std::string>{
                           {mmu + ": fork_dirty,mprotect", mmu + " bench=fork_dirty,mprotect," + kDensity},
                           {"128000", mmu + " bench=fork_dirty:pages=128000:reps=1"},
                       }))
        << id;
  }
  for (const auto& c : plan.configs)
    if (c.get("mmu") == "unhook" || c.get("mmu") == "auto") EXPECT_EQ(c.switches.size(), 1u) << c.id();
  std::map<std::string, std::string> wrpt;  // group -> command line
  for (const Boot* b : boots_of(plan, "xen mmu=wrpt")) wrpt[b->group] = b->cmdline;
  EXPECT_EQ(wrpt["all"], "mmu=wrpt bench=all," + kDensity);
  EXPECT_EQ(wrpt["128000"], "mmu=wrpt bench=fork_dirty:pages=128000:reps=1");
  // The seed 000/001 variations also run forkwait, forkexec and
  // kernbench.
  EXPECT_EQ(boots_of(plan, "xen mmu=wrpt pgd_cache=off")[0]->cmdline, "mmu=wrpt pgd_cache=off bench=" + kPgdCacheOff);
  EXPECT_EQ(boots_of(plan, "native mmu=native zero_page=off")[0]->bench, kZeroPageOff);
  EXPECT_EQ(boots_of(plan, "xen mmu=batched pte=flags")[0]->bench, "seed002");
  EXPECT_EQ(boots_of(plan, "xen mmu=direct ptshare=on")[0]->cmdline,
            "mmu=direct ptshare=on bench=" + kPtshareOn + "," + kDensity);
  // Standard machines except for the 128,000-page boots, and the heaviest
  // boots are scheduled first.
  for (const auto& b : plan.boots) {
    const bool large = b.bench.find("pages=128000") != std::string::npos;
    EXPECT_EQ(b.machine.memory.empty(), !large) << plan.describe_boot(b);
  }
  EXPECT_TRUE(std::is_sorted(plan.boots.begin(), plan.boots.end(),
                             [](const Boot& a, const Boot& b) { return a.weight > b.weight; }));
  EXPECT_EQ(plan.configs[plan.boots.front().config].id(), "xen mmu=wrpt");
  EXPECT_EQ(plan.boots.front().group, "128000");
}

// --one-cpu: the default matrix without its two-CPU configurations, and
// nothing else left out.
TEST(Matrix, OneCpuLeavesOutOnlyTheSmpConfigurations) {
  const Plan all = build_plan(MatrixOptions{});
  MatrixOptions o;
  o.with_smp = false;
  const Plan one = build_plan(o);
  std::set<std::string> expected;
  for (const auto& id : ids(all))
    if (id.find("smp=") == std::string::npos) expected.insert(id);
  EXPECT_LT(expected.size(), ids(all).size());
  EXPECT_EQ(ids(one), expected);
}

TEST(Matrix, PtshareOnIsAVariationOfForkAndMprotectOnEveryBackend) {
  MatrixOptions o;
  o.reps = 3;
  const Plan plan = build_plan(o);
  for (const char* base : {"native mmu=native", "xen mmu=batched", "xen mmu=direct", "xen mmu=wrpt"}) {
    const std::string on = std::string(base) + " ptshare=on";
    ASSERT_TRUE(ids(plan).count(on)) << on;
    const Config c = config_from_id(on);
    EXPECT_EQ(c.effective("ptshare"), "on");
    const PlatformSpec* spec = find_platform(c.platform);
    ASSERT_NE(spec, nullptr);
    // The standard sizes each rep, on the standard machine; 128,000 pages
    // (where a target needs them) once, on the large one.
    int standard = 0;
    for (const Boot* b : boots_of(plan, on)) {
      if (b->group == "128000") {
        EXPECT_EQ(b->machine.memory, spec->large.memory) << on;
        EXPECT_EQ(b->machine.dom0_memory, spec->large.dom0_memory) << on;
        continue;
      }
      ++standard;
      EXPECT_EQ(b->group, "ptshare=on: " + kPtshareOn);
      EXPECT_EQ(b->machine.memory, spec->standard.memory) << on;
      EXPECT_EQ(b->cmdline, c.cmdline() + " bench=" + kPtshareOn + (b->rep == 1 ? "," + kDensity : ""));
    }
    EXPECT_EQ(standard, 3) << on;
  }
  // The seed variations do not get the large sizes.
  for (const Boot* b : boots_of(plan, "xen mmu=wrpt pgd_cache=off")) EXPECT_EQ(b->bench, kPgdCacheOff);
  // 22 configurations x 3 (unhook and auto among them), 4 ptshare=on x 3,
  // five 128,000-page boots, 3 two-CPU configurations x 3.
  EXPECT_EQ(plan.boots.size(), 92u);
}

// The sparse fork series rides in the first boot of every
// configuration that runs fork_dirty (no boot of its own), once whatever
// --reps; not with the seed variations that do not run fork_dirty, not with
// --bench or --smoke.
TEST(Matrix, DensitySeriesOnceInTheFirstBootOfEachForkConfiguration) {
  EXPECT_EQ(join_items(density_items()), kDensity);
  MatrixOptions o;
  o.reps = 3;
  const Plan plan = build_plan(o);
  EXPECT_EQ(plan.boots.size(), 92u);  // as many boots as without it
  std::map<std::string, int> with;    // configuration -> boots carrying the series
  for (const auto& b : plan.boots) {
    const bool has = b.bench.find("stride=") != std::string::npos;
    const bool runs_fork = b.group == "all" || b.group == "ptshare=on: " + kPtshareOn ||
                           b.group == "mmu=unhook: fork_dirty,mprotect" || b.group == "mmu=auto: fork_dirty,mprotect" ||
                           b.group == "pvpatch=off: fork_dirty,mprotect,fault_write,forkwait";
    EXPECT_EQ(has, b.rep == 1 && runs_fork) << plan.describe_boot(b);
    if (has) {
      ++with[plan.configs[b.config].id()];
      EXPECT_TRUE(b.bench.ends_with("," + kDensity)) << b.bench;
      EXPECT_TRUE(b.machine.memory.empty()) << plan.describe_boot(b);  // the standard machine
    }
  }
  EXPECT_EQ(with, (std::map<std::string, int>{{"native mmu=native", 1},
                                             {"xen mmu=unhook", 1},
                                             {"xen mmu=auto", 1},
                                             {"native mmu=native ptshare=on", 1},
                                             {"native mmu=native pvpatch=off", 1},
                                             {"xen mmu=batched", 1},
                                             {"xen mmu=batched ptshare=on", 1},
                                             {"xen mmu=batched pvpatch=off", 1},
                                             {"xen mmu=direct", 1},
                                             {"xen mmu=direct ptshare=on", 1},
                                             {"xen mmu=wrpt", 1},
                                             {"xen mmu=wrpt ptshare=on", 1}}));
  // Linux runs the same driver: the series too.
  o.platforms = {"linux-native"};
  o.reps = 2;
  const Plan linux_plan = build_plan(o);
  int linux_with = 0;
  for (const auto& b : linux_plan.boots) linux_with += b.bench.find(kDensity) != std::string::npos;
  EXPECT_EQ(linux_with, 1);
  // Not with explicit items or the smoke suite.
  o = {};
  o.items = parse_items("fork_dirty");
  for (const auto& b : build_plan(o).boots) EXPECT_EQ(b.bench.find("stride="), std::string::npos) << b.bench;
  o = {};
  o.smoke = true;
  for (const auto& b : build_plan(o).boots) EXPECT_EQ(b.bench, "smoke");
}

TEST(Matrix, TableItemsFollowTheTargets) {
  auto text = [](const char* id) { return join_items(table_items(config_from_id(id))); };
  EXPECT_EQ(text("xen mmu=batched ptshare=on"), "fork_dirty:pages=128000:reps=1,mprotect:pages=128000:reps=1");
  EXPECT_EQ(text("xen mmu=wrpt"), "fork_dirty:pages=128000:reps=1");
  EXPECT_EQ(text("xen mmu=wrpt ptshare=off"), "fork_dirty:pages=128000:reps=1");
  EXPECT_EQ(text("native mmu=native ptshare=on"), "fork_dirty:pages=128000:reps=1");
  EXPECT_EQ(text("linux-xen"), "fork_dirty:pages=128000:reps=1,mprotect:pages=128000:reps=1");
  EXPECT_EQ(text("linux-native"), "fork_dirty:pages=128000:reps=1");
  // Auto against the best of batched, wrpt and unhook.
  EXPECT_EQ(text("xen mmu=auto"), "fork_dirty:pages=128000:reps=1");
  EXPECT_EQ(text("xen mmu=unhook"), "fork_dirty:pages=128000:reps=1");
  EXPECT_EQ(text("xen mmu=batched"), "fork_dirty:pages=128000:reps=1");
  // Not a side of any of them: other backends, other switches.
  EXPECT_EQ(text("xen mmu=direct"), "");
  EXPECT_EQ(text("xen mmu=direct ptshare=on"), "");
  EXPECT_EQ(text("xen mmu=wrpt pgd_cache=off"), "");
  EXPECT_EQ(text("xen mmu=batched batch=8 ptshare=on"), "");
  // Only for a target whose other side this run boots too.
  MatrixOptions run;
  const Config batched_on = config_from_id("xen mmu=batched ptshare=on");
  EXPECT_EQ(join_items(table_items(batched_on, &run)), "fork_dirty:pages=128000:reps=1");  // vs wrpt
  EXPECT_EQ(join_items(table_items(config_from_id("native mmu=native ptshare=on"), &run)), "");
  run.platforms = {"native", "xen", "linux-native", "linux-xen"};  // --linux
  EXPECT_EQ(join_items(table_items(batched_on, &run)), "fork_dirty:pages=128000:reps=1,mprotect:pages=128000:reps=1");
  EXPECT_EQ(join_items(table_items(config_from_id("native mmu=native ptshare=on"), &run)),
            "fork_dirty:pages=128000:reps=1");
  EXPECT_EQ(join_items(table_items(config_from_id("linux-xen"), &run)),
            "fork_dirty:pages=128000:reps=1,mprotect:pages=128000:reps=1");
  run.mmus = {"batched"};  // no wrpt
  run.platforms = {"xen"};
  EXPECT_EQ(join_items(table_items(batched_on, &run)), "");
  run.mmus = {"wrpt", "batched"};  // no auto
  run.with_variations = false;      // no ptshare=on
  EXPECT_EQ(join_items(table_items(config_from_id("xen mmu=wrpt"), &run)), "");
  run.mmus = {};
  run.sets = {parse_set("ptshare=off,on")};
  EXPECT_EQ(join_items(table_items(config_from_id("xen mmu=wrpt ptshare=off"), &run)), "fork_dirty:pages=128000:reps=1");
}

TEST(Matrix, FullReplacesTheTableSizesWithTheLargeGroup) {
  MatrixOptions o;
  o.full = true;
  o.reps = 2;
  o.mmus = {"batched"};
  const Plan plan = build_plan(o);
  for (const auto& b : plan.boots) EXPECT_NE(b.group, "128000") << plan.describe_boot(b);
  std::map<std::string, int> on;
  for (const Boot* b : boots_of(plan, "xen mmu=batched ptshare=on")) ++on[b->bench];
  EXPECT_EQ(on, (std::map<std::string, int>{{kPtshareOn + "," + kDensity, 1},
                                           {kPtshareOn, 1},
                                           {"fork_dirty:pages=64000+128000,mprotect:pages=65536+128000", 2}}));
}

TEST(Matrix, SetPtshareCrossesInsteadOfTheVariation) {
  MatrixOptions o;
  o.platforms = {"native"};
  o.sets = {parse_set("ptshare=off,on")};
  const Plan plan = build_plan(o);
  EXPECT_TRUE(ids(plan).count("native mmu=native ptshare=off"));
  EXPECT_TRUE(ids(plan).count("native mmu=native ptshare=on"));
  EXPECT_TRUE(ids(plan).count("native mmu=native pgd_cache=off ptshare=on"));
  // Both values run the whole list (natively no target compares without Linux).
  EXPECT_EQ(boots_of(plan, "native mmu=native ptshare=on").size(), 1u);
  EXPECT_EQ(boots_of(plan, "native mmu=native ptshare=on")[0]->bench, "all," + kDensity);
  EXPECT_EQ(boots_of(plan, "native mmu=native ptshare=off").size(), 1u);
}

TEST(Matrix, NoVariationsNoTableSizes) {
  MatrixOptions o;
  o.with_variations = false;
  o.mmus = {"native", "batched", "direct", "wrpt"};
  const Plan plan = build_plan(o);
  EXPECT_EQ(plan.configs.size(), 7u);  // and the three on two CPUs
  EXPECT_EQ(plan.boots.size(), 7u);  // no ptshare=on to compare wrpt's 128,000-page fork with, no auto
  // With auto (the default list), auto's target boots 128,000 pages on it
  // and on batched, wrpt and unhook; not on direct.
  o.mmus = {};
  const Plan all = build_plan(o);
  EXPECT_EQ(all.configs.size(), 9u);
  EXPECT_EQ(all.boots.size(), 13u);
  std::set<std::string> sized;
  for (const auto& b : all.boots)
    if (b.group == "128000") sized.insert(all.configs[b.config].id());
  EXPECT_EQ(sized, (std::set<std::string>{"xen mmu=auto", "xen mmu=batched", "xen mmu=unhook", "xen mmu=wrpt"}));
}

// Unhook and auto boot with every benchmark when --mmu names them,
// and not at all with --smoke or a --bench list that has none of theirs.
TEST(Matrix, UnhookAndAutoAreFocusedUnlessNamed) {
  MatrixOptions o;
  o.with_variations = false;
  o.mmus = {"unhook"};
  const Plan named = build_plan(o);
  ASSERT_EQ(ids(named), (std::set<std::string>{"xen mmu=unhook"}));
  EXPECT_EQ(boots_of(named, "xen mmu=unhook")[0]->bench, "all," + kDensity);
  o = {};
  o.smoke = true;
  for (const auto& c : build_plan(o).configs) EXPECT_NE(c.get("mmu"), "auto") << c.id();
  o = {};
  o.items = parse_items("getppid");
  for (const auto& c : build_plan(o).configs) EXPECT_NE(c.get("mmu"), "unhook") << c.id();
  o.items = parse_items("getppid,mprotect:pages=64");
  EXPECT_EQ(boots_of(build_plan(o), "xen mmu=auto")[0]->bench, "mprotect:pages=64");
}

TEST(Matrix, FullAddsTheLargeSizesOnBigMachines) {
  MatrixOptions o;
  o.full = true;
  o.with_variations = false;
  o.mmus = {"native", "batched", "direct", "wrpt"};
  const Plan plan = build_plan(o);
  EXPECT_EQ(plan.configs.size(), 10u);  // and the three on two CPUs and on four
  const auto xen = boots_of(plan, "xen mmu=batched");
  ASSERT_EQ(xen.size(), 2u);
  const Boot* large = xen[0]->group == "large" ? xen[0] : xen[1];
  EXPECT_EQ(large->bench, "fork_dirty:pages=64000+128000,mprotect:pages=65536+128000");
  EXPECT_EQ(large->machine.memory, "2560");
  EXPECT_EQ(large->machine.dom0_memory, "2000M");
  const Boot* native_large = nullptr;
  for (const Boot* b : boots_of(plan, "native mmu=native"))
    if (b->group == "large") native_large = b;
  ASSERT_NE(native_large, nullptr);
  EXPECT_EQ(native_large->machine.memory, "2G");
}

TEST(Matrix, SetCrossesAnySwitchOnlyWhereItMatters) {
  MatrixOptions o;
  o.sets = {parse_set("batch=1,32"), parse_set("pvpatch=off")};
  o.with_variations = false;
  const Plan plan = build_plan(o);
  // batch= only matters to the batched queue; pvpatch= (any switch) everywhere.
  const std::set<std::string> expected{
      "native mmu=native pvpatch=off",        "xen mmu=batched batch=1 pvpatch=off",
      "xen mmu=batched batch=32 pvpatch=off", "xen mmu=direct pvpatch=off",
      "xen mmu=wrpt pvpatch=off",          "xen mmu=unhook pvpatch=off",
      "xen mmu=auto pvpatch=off",
  };
  EXPECT_EQ(ids(plan), expected);
}

TEST(Matrix, SetOfAVariationKeyReplacesTheVariation) {
  MatrixOptions o;
  o.platforms = {"native"};
  o.sets = {parse_set("pgd_cache=on,off")};
  const Plan plan = build_plan(o);
  const std::set<std::string> expected{
      "native mmu=native pgd_cache=on",
      "native mmu=native pgd_cache=off",
      "native mmu=native pgd_cache=on zero_page=off",
      "native mmu=native pgd_cache=off zero_page=off",
      "native mmu=native pgd_cache=on pte=flags",
      "native mmu=native pgd_cache=off pte=flags",
      "native mmu=native pgd_cache=on ptshare=on",
      "native mmu=native pgd_cache=off ptshare=on",
      "native mmu=native pgd_cache=on pvpatch=off",
      "native mmu=native pgd_cache=off pvpatch=off",
      "native mmu=native pgd_cache=on pte=flags pvpatch=off",
      "native mmu=native pgd_cache=off pte=flags pvpatch=off",
  };
  EXPECT_EQ(ids(plan), expected);
  // Both pgd_cache values run the whole list.
  EXPECT_EQ(boots_of(plan, "native mmu=native pgd_cache=off")[0]->bench, "all," + kDensity);
}

TEST(Matrix, PlatformsBackendsAndRepetitions) {
  MatrixOptions o;
  o.mmus = {"wrpt"};
  o.reps = 3;
  const Plan plan = build_plan(o);
  EXPECT_EQ(ids(plan), (std::set<std::string>{"xen mmu=wrpt", "xen mmu=wrpt pgd_cache=off",
                                             "xen mmu=wrpt zero_page=off", "xen mmu=wrpt pte=flags",
                                             "xen mmu=wrpt ptshare=on"}));
  ASSERT_EQ(plan.notes.size(), 1u);  // native has no wrpt backend
  const auto boots = boots_of(plan, "xen mmu=wrpt");
  ASSERT_EQ(boots.size(), 3u);  // the list three times (no batched ptshare=on for a 128,000-page fork)
  std::set<int> reps;
  for (const Boot* b : boots)
    if (b->group == "all") reps.insert(b->rep);
  EXPECT_EQ(reps, (std::set<int>{1, 2, 3}));
}

TEST(Matrix, SmokeIsOneBackendPerPlatform) {
  MatrixOptions o;
  o.smoke = true;
  const Plan plan = build_plan(o);
  EXPECT_EQ(ids(plan), (std::set<std::string>{"native mmu=native", "xen mmu=batched"}));
  for (const auto& b : plan.boots) EXPECT_EQ(b.bench, "smoke");
}

TEST(Matrix, ItemsLongerThanOneBootAreSplit) {
  MatrixOptions o;
  o.platforms = {"native"};
  o.with_variations = false;
  for (int i = 0; i < 40; ++i) o.items.push_back(Item{"getpid", {{"iters", std::to_string(100 + i)}}});
  const Plan plan = build_plan(o);
  // 40 items of 16 characters: 15 fit in 255 characters.
  ASSERT_EQ(plan.boots.size(), 3u);
  std::set<int> parts;
  for (const auto& b : plan.boots) parts.insert(b.part);
  EXPECT_EQ(parts, (std::set<int>{0, 1, 2}));
  for (const auto& b : plan.boots) EXPECT_LE(b.bench.size(), max_bench_chars);
}

// SMP: with --smp N the default list runs kernbench at N/2, N and 2N
// workers and adds the smp suite at threads 0, 1 and N-1; at N = 1 it is
// the one-vCPU list, unchanged.
TEST(Matrix, SmpDefaultListHasKernbenchLoadsAndTheThreadBenchmarks) {
  EXPECT_EQ(kernbench_procs(1), "1+4+8");
  EXPECT_EQ(kernbench_procs(2), "1+2+4");
  EXPECT_EQ(kernbench_procs(3), "1+3+6");
  EXPECT_EQ(kernbench_procs(4), "2+4+8");
  EXPECT_EQ(kernbench_procs(16), "8+16+20");  // the driver's limit
  EXPECT_EQ(join_items(default_items(1)), "all");
  EXPECT_EQ(join_items(default_items(2)),
            "seed000,seed001,seed002:procs=1+2+4:jobs=8,seed003,smp:threads=0+1:reps=3");
  EXPECT_EQ(join_items(default_items(4)),
            "seed000,seed001,seed002:procs=2+4+8:jobs=8,seed003,smp:threads=0+1+3:reps=3");
  EXPECT_EQ(join_items(default_items(8)),
            "seed000,seed001,seed002:procs=4+8+16:jobs=16,seed003,smp:threads=0+1+7:reps=3");

  auto boots_with = [](const Plan& plan, const std::string& id, const std::string& what) {
    int n = 0;
    for (const auto* b : boots_of(plan, id)) n += b->bench.find(what) != std::string::npos;
    return n;
  };
  // --smp 2: every configuration of the one-CPU matrix on two CPUs (an
  // smp=2 key, never on the kernel's command line), and no others.
  MatrixOptions two;
  two.smp = 2;
  two.platforms = {"native", "xen", "linux-native"};
  const Plan plan = build_plan(two);
  MatrixOptions one_cpu;
  one_cpu.platforms = two.platforms;
  std::set<std::string> one_cpu_ids;
  for (const auto& c : build_plan(one_cpu).configs)
    if (c.cpus() == 1) one_cpu_ids.insert(c.id());
  std::set<std::string> two_cpu_ids;
  for (const auto& c : plan.configs) {
    EXPECT_EQ(c.cpus(), 2u) << c.id();
    Config without = c;
    std::erase_if(without.switches, [](const auto& s) { return s.first == kSmpKey; });
    two_cpu_ids.insert(without.id());
  }
  EXPECT_EQ(two_cpu_ids, one_cpu_ids);
  for (const auto& b : plan.boots) {
    EXPECT_EQ(b.machine.cpus, 2u) << plan.describe_boot(b);
    EXPECT_FALSE(b.exclusive) << "virtual time: one host thread runs every vCPU; " << plan.describe_boot(b);
    EXPECT_EQ(b.cmdline.find("smp="), std::string::npos) << b.cmdline;
  }
  // In wall time (MTTCG) a machine with several CPUs boots alone.
  MatrixOptions two_wall = two;
  two_wall.wall_time = true;
  for (const auto& b : build_plan(two_wall).boots) EXPECT_TRUE(b.exclusive) << build_plan(two_wall).describe_boot(b);
  for (const char* id : {"native mmu=native smp=2", "xen mmu=batched smp=2", "xen mmu=wrpt smp=2", "linux-native smp=2"}) {
    EXPECT_EQ(boots_with(plan, id, "smp:threads=0+1:reps=3"), 1) << id;
    EXPECT_EQ(boots_with(plan, id, "procs=1+2+4"), 1) << id;
  }
  // Variations keep their benchmarks: kernbench at the SMP loads, no thread benchmarks.
  EXPECT_EQ(boots_with(plan, "native mmu=native pgd_cache=off smp=2", "kernbench:procs=1+2+4:jobs=8"), 1);
  EXPECT_EQ(boots_with(plan, "native mmu=native pgd_cache=off smp=2", "smp"), 0);
  EXPECT_EQ(boots_with(plan, "xen mmu=unhook smp=2", "smp"), 0);
  // One CPU: the list of before, and the machine has one CPU.
  one_cpu.platforms = {"native"};
  const Plan one = build_plan(one_cpu);
  EXPECT_EQ(boots_with(one, "native mmu=native", "all,"), 1);  // all, then the density series
  EXPECT_EQ(boots_with(one, "native mmu=native", "smp"), 0);
  for (const Boot* b : boots_of(one, "native mmu=native")) {
    EXPECT_EQ(b->machine.cpus, 1u);
    EXPECT_FALSE(b->exclusive);
  }
}

// SMP: without --smp the default matrix boots, besides its one-CPU
// configurations, each platform's smp_switches on two CPUs (--full: and
// four) with kernbench at that machine's loads and the smp suite (in wall
// time each boot alone); not with --bench, --smoke or
// --set, and not for a backend --mmu leaves out.
TEST(Matrix, DefaultAddsTwoCpuMachinesNativelyAndUnderBatchedWithEachShootdown) {
  EXPECT_EQ(join_items(smp_matrix_items(2)), "kernbench:procs=1+2+4:jobs=8,smp:threads=0+1:reps=3");
  EXPECT_EQ(join_items(smp_matrix_items(4)), "kernbench:procs=2+4+8:jobs=8,smp:threads=0+1+3:reps=3");
  MatrixOptions o;
  o.platforms = {"native", "native-builtin", "xen", "linux-native", "linux-xen"};
  o.reps = 3;  // a wall-time run: three boots a configuration, the SMP ones alone
  o.wall_time = true;
  const Plan plan = build_plan(o);
  std::map<std::string, int> several;  // configuration -> boots
  for (const auto& b : plan.boots) {
    const Config& c = plan.configs[b.config];
    EXPECT_EQ(b.machine.cpus, c.cpus()) << plan.describe_boot(b);
    EXPECT_EQ(b.exclusive, c.cpus() > 1) << plan.describe_boot(b);
    if (c.cpus() == 1) continue;
    ++several[c.id()];
    EXPECT_EQ(b.bench, join_items(smp_matrix_items(2))) << plan.describe_boot(b);
    EXPECT_EQ(b.cmdline.find("smp="), std::string::npos) << b.cmdline;
  }
  EXPECT_EQ(several, (std::map<std::string, int>{
                         {"native mmu=native smp=2", 3},
                         {"xen mmu=batched sched_cpus=all shootdown=hypercall smp=2", 3},
                         {"xen mmu=batched sched_cpus=all shootdown=ipi smp=2", 3},
                         {"linux-native smp=2", 3},
                         {"linux-xen smp=2", 3},
                     }));
  EXPECT_EQ(boots_of(plan, "xen mmu=batched sched_cpus=all shootdown=ipi smp=2")[0]->cmdline,
            "mmu=batched sched_cpus=all shootdown=ipi bench=" + join_items(smp_matrix_items(2)));
  // --full: four CPUs too.
  o.full = true;
  std::set<std::string> full_ids;
  for (const auto& c : build_plan(o).configs)
    if (c.cpus() > 1) full_ids.insert(c.id());
  EXPECT_EQ(full_ids.size(), 10u);
  EXPECT_TRUE(full_ids.count("xen mmu=batched sched_cpus=all shootdown=hypercall smp=4"));
  EXPECT_TRUE(full_ids.count("native mmu=native smp=4"));
  // --mmu without batched: natively only; --bench, --smoke, --set: none.
  auto several_cpus = [](const MatrixOptions& options) {
    std::set<std::string> out;
    for (const auto& c : build_plan(options).configs)
      if (c.cpus() > 1) out.insert(c.id());
    return out;
  };
  o = {};
  o.mmus = {"native", "wrpt"};
  EXPECT_EQ(several_cpus(o), (std::set<std::string>{"native mmu=native smp=2"}));
  o = {};
  o.items = parse_items("getppid");
  EXPECT_TRUE(several_cpus(o).empty());
  o = {};
  o.smoke = true;
  EXPECT_TRUE(several_cpus(o).empty());
  o = {};
  o.sets = {parse_set("pte=flags")};
  EXPECT_TRUE(several_cpus(o).empty());
  // The key is checked: 1..16 CPUs.
  EXPECT_EQ(make_config("native", {{"mmu", "native"}, {"smp", "4"}}).cpus(), 4u);
  EXPECT_EQ(make_config("native", {{"mmu", "native"}}).cpus(), 1u);
  EXPECT_THROW(make_config("native", {{"smp", "0"}}), std::invalid_argument);
  EXPECT_THROW(make_config("native", {{"smp", "17"}}), std::invalid_argument);
  EXPECT_THROW(make_config("native", {{"smp", "two"}}), std::invalid_argument);
  EXPECT_EQ(make_config("native", {{"mmu", "native"}, {"smp", "2"}}).cmdline(), "mmu=native");
}

TEST(Matrix, Errors) {
  MatrixOptions o;
  o.platforms = {"solaris"};
  EXPECT_THROW(build_plan(o), std::invalid_argument);
  o = {};
  o.mmus = {"fast"};
  EXPECT_THROW(build_plan(o), std::invalid_argument);
  o = {};
  o.platforms = {"native"};
  o.mmus = {"wrpt"};
  EXPECT_THROW(build_plan(o), std::invalid_argument);  // nothing left
  EXPECT_THROW(parse_set("mmu=wrpt"), std::invalid_argument);
  EXPECT_THROW(parse_set("batch"), std::invalid_argument);
  EXPECT_THROW(parse_set("batch=1,,2"), std::invalid_argument);
  o = {};
  o.sets = {parse_set("batch=1"), parse_set("batch=2")};
  EXPECT_THROW(build_plan(o), std::invalid_argument);
}

TEST(Matrix, TimeoutOverride) {
  MatrixOptions o;
  o.timeout = std::chrono::seconds{42};
  for (const auto& b : build_plan(o).boots) EXPECT_EQ(b.timeout.count(), 42);
}

}  // namespace
}  // namespace pvk::bench
