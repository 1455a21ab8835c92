// The scaling run (--smp 1,2,4,8): its plan (each platform's SMP
// configurations at every count, the count's workers on the items), and
// what the summary makes of its records: the scaling table, its JSON and
// the 8÷1-CPU target on disjoint data, from a fixture results.json
// (data/scaling/results.json: a native run of fault_threads, mmap_churn and
// munmap_threads at 1, 2, 4 and 8 CPUs, trimmed to the fields the table
// reads, with lock counters added as the kernel's lock_<class>_... ones
// will appear).
#include "pvk/bench/cli.hpp"
#include "pvk/bench/matrix.hpp"
#include "pvk/bench/ratio.hpp"
#include "pvk/bench/report.hpp"
#include "pvk/bench/scaling.hpp"
#include "pvk/bench/targets.hpp"
#include "pvk/bench/text_file.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;

MatrixOptions scaling_options(std::vector<std::string> platforms) {
  MatrixOptions m;
  m.platforms = std::move(platforms);
  m.scaling = {1, 2, 4, 8};
  return m;
}

TEST(ScalingPlan, EverySmpConfigurationAtEveryCount) {
  const Plan plan = build_plan(scaling_options({"native", "native-builtin", "xen", "linux-native"}));
  std::map<std::string, std::set<unsigned>> counts;
  for (const auto& c : plan.configs) {
    // The count is in every name, one CPU included.
    ASSERT_TRUE(c.get("smp")) << c.id();
    EXPECT_EQ(std::to_string(c.cpus()), *c.get("smp")) << c.id();
    Config bare = c;
    std::erase_if(bare.switches, [](const auto& s) { return s.first == "smp"; });
    counts[bare.id()].insert(c.cpus());
  }
  const std::set<unsigned> all{1, 2, 4, 8};
  EXPECT_EQ(counts, (std::map<std::string, std::set<unsigned>>{
                        {"native mmu=native", all},
                        {"xen mmu=batched sched_cpus=all shootdown=hypercall", all},
                        {"xen mmu=batched sched_cpus=all shootdown=ipi", all},
                        {"linux-native", all}}));
  EXPECT_EQ(plan.boots.size(), 16u);  // one boot each: no variations, no targets' sizes
  for (const auto& b : plan.boots) {
    const Config& c = plan.configs[b.config];
    EXPECT_EQ(b.machine.cpus, c.cpus()) << plan.describe_boot(b);
    EXPECT_EQ(b.cmdline.find("smp="), std::string::npos) << b.cmdline;
    EXPECT_NE(b.bench.find("kernbench:procs=" + kernbench_procs(c.cpus())), std::string::npos) << b.bench;
    EXPECT_NE(b.bench.find("smp:threads=" + smp_threads(c.cpus())), std::string::npos) << b.bench;
  }
  // The compiled-in image has no SMP configurations: said, not booted.
  EXPECT_TRUE(std::any_of(plan.notes.begin(), plan.notes.end(),
                          [](const std::string& n) { return n.find("native-builtin skipped") != std::string::npos; }));
}

TEST(ScalingPlan, ItemsGetTheCountsWorkersWhereTheyLeaveThemOpen) {
  const auto items = parse_items("fault_threads:pages=64,mmap_churn:mode=threads:threads=2,smp,getpid,kernbench:jobs=4");
  EXPECT_EQ(join_items(scaling_items(items, 4)),
            "fault_threads:pages=64:threads=0+1+3,mmap_churn:mode=threads:threads=2,smp:threads=0+1+3,getpid,"
            "kernbench:jobs=4:procs=2+4+8");
  EXPECT_EQ(join_items(scaling_items(items, 1)),
            "fault_threads:pages=64:threads=0+1,mmap_churn:mode=threads:threads=2,smp:threads=0+1,getpid,"
            "kernbench:jobs=4:procs=1+4+8");
  EXPECT_EQ(join_items(scaling_items({}, 8)), "kernbench:procs=4+8+16:jobs=16,smp:threads=0+1+7:reps=3");
}

// One jobs= at every count, the largest count's: else the 8-CPU kernbench
// (jobs=16) and the 1-CPU one (jobs=8) were two lines, and the table had
// no 8-CPU row for it.
TEST(ScalingPlan, KernbenchRunsTheLargestCountsJobsAtEveryCount) {
  EXPECT_EQ(join_items(scaling_items({}, 1, 8)), "kernbench:procs=1+4+8:jobs=16,smp:threads=0+1:reps=3");
  EXPECT_EQ(join_items(scaling_items(parse_items("kernbench"), 2, 8)), "kernbench:procs=1+2+4:jobs=16");
  MatrixOptions m = scaling_options({"native"});
  m.scaling = {1, 8};
  const Plan plan = build_plan(m);
  std::set<std::string> jobs;
  for (const auto& b : plan.boots) {
    const auto at = b.bench.find("jobs=");
    ASSERT_NE(at, std::string::npos) << b.bench;
    jobs.insert(b.bench.substr(at, b.bench.find_first_of(",:", at) - at));
  }
  EXPECT_EQ(jobs, std::set<std::string>{"jobs=16"});
}

TEST(ScalingPlan, SetReplacesTheSwitchAndMmuNarrows) {
  MatrixOptions m = scaling_options({"xen"});
  m.scaling = {1, 2};
  m.sets = {parse_set("shootdown=hypercall")};
  std::set<std::string> got;
  for (const auto& c : build_plan(m).configs) got.insert(c.id());
  EXPECT_EQ(got, (std::set<std::string>{"xen mmu=batched sched_cpus=all shootdown=hypercall smp=1",
                                        "xen mmu=batched sched_cpus=all shootdown=hypercall smp=2"}));
  MatrixOptions native_only = scaling_options({"native", "xen"});
  native_only.mmus = {"native"};
  EXPECT_EQ(build_plan(native_only).configs.size(), 4u);
}

TEST(ScalingPlan, NotWithSmokeOrFull) {
  MatrixOptions m = scaling_options({"native"});
  m.smoke = true;
  EXPECT_THROW(build_plan(m), std::invalid_argument);
  m.smoke = false;
  m.full = true;
  EXPECT_THROW(build_plan(m), std::invalid_argument);
}

// The command line: one count is the old --smp N, several a scaling run;
// each count must be a machine's (1..16).
TEST(ScalingCli, SmpTakesAList) {
  auto parse = [](std::vector<std::string> args) {
    CLI::App app;
    Commands commands(app, fs::temp_directory_path(), fs::path(PVK_SOURCE_DIR));
    std::vector<std::string> words{"pvk-cli", "bench", "--dry-run"};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<const char*> argv;
    for (const auto& w : words) argv.push_back(w.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
  };
  EXPECT_NO_THROW(parse({"--smp", "1,2,4,8"}));
  EXPECT_NO_THROW(parse({"--smp", "2"}));
  EXPECT_THROW(parse({"--smp", "0,2"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--smp", "2,17"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--smp", "two"}), CLI::ParseError);
}

Results fixture() {
  const auto text = read_text_file(fs::path(PVK_SOURCE_DIR) / "tests/tools/bench/data/scaling/results.json");
  EXPECT_TRUE(text);
  return results_from_json(OJson::parse(text.value_or("{}")));
}

const Row& row_of(const Results& r, const std::string& bench, const std::string& config, unsigned threads,
                  const std::string& mode = "") {
  for (const auto& row : r.rows) {
    if (row.bench != bench || row.config != config) continue;
    bool match = true;
    for (const auto& [k, v] : row.params) {
      if (k == "threads") match &= v.get<unsigned>() == threads;
      if (k == "mode") match &= v.get<std::string>() == mode;
    }
    if (match) return row;
  }
  throw std::runtime_error("no row " + bench + " " + config);
}

TEST(ScalingTable, OneWorkerPerCpuAtEachCountOverOneCpu) {
  const Results r = fixture();
  const auto lines = scaling_lines(r);
  // Four benchmarks' parameter sets (mmap_churn in each mode), each at 1, 2,
  // 4 and 8 CPUs, in the rows' order, by CPUs.
  ASSERT_EQ(lines.size(), 16u);
  std::map<std::string, std::vector<unsigned>> cpus;
  for (const auto& l : lines) {
    EXPECT_EQ(l.workers, l.cpus) << l.bench;
    EXPECT_EQ(l.config, "native mmu=native");
    EXPECT_EQ(l.label, "native");
    for (const auto& [k, v] : l.params) EXPECT_NE(k, "threads") << "the worker parameter is the column, not the key";
    cpus[l.bench + " " + params_text(l.params)].push_back(l.cpus);
  }
  for (const auto& [key, list] : cpus) EXPECT_EQ(list, (std::vector<unsigned>{1, 2, 4, 8})) << key;
  // The 8-CPU line: threads=7 at smp=8 over threads=0 at smp=1, and its
  // counters per op.
  const Row& eight = row_of(r, "fault_threads", "native mmu=native smp=8", 7);
  const Row& one = row_of(r, "fault_threads", "native mmu=native smp=1", 0);
  const auto l = std::find_if(lines.begin(), lines.end(),
                              [](const ScalingLine& s) { return s.bench == "fault_threads" && s.cpus == 8; });
  ASSERT_NE(l, lines.end());
  EXPECT_EQ(l->per_op, eight.per_op);
  ASSERT_TRUE(l->to_one);
  EXPECT_DOUBLE_EQ(*l->to_one, eight.per_op / one.per_op);
  const auto counter = [&](const std::string& name) {
    const auto c = std::find_if(l->counters.begin(), l->counters.end(), [&](const auto& x) { return x.first == name; });
    return c == l->counters.end() ? std::optional<double>() : c->second;
  };
  EXPECT_EQ(counter("shootdowns"), *eight.field("shootdowns") / eight.ops);
  EXPECT_EQ(counter("lock_kernel_acquired"), *eight.field("lock_kernel_acquired") / eight.ops);
  // mmap_churn as threads: one address space, its munmaps reach the other
  // CPUs; as processes, none.
  const Row& threads = row_of(r, "mmap_churn", "native mmu=native smp=8", 7, "threads");
  const Row& procs = row_of(r, "mmap_churn", "native mmu=native smp=8", 7, "procs");
  EXPECT_GT(*threads.field("shootdowns"), 0);
  EXPECT_EQ(*procs.field("shootdowns"), 0);
}

TEST(ScalingTable, SummaryAndJson) {
  const Results r = fixture();
  const std::string md = scaling_section(r);
  auto has = [&](const std::string& text) { EXPECT_NE(md.find(text), std::string::npos) << text << "\n" << md; };
  has("## Scaling across CPUs");
  // The currency: virtual time is every vCPU's work together.
  has("virtual time: ns of every vCPU's instructions together");
  has("### fault_threads pages=64 — ");
  has("### mmap_churn mode=procs pages=16 loops=100 — ");
  has("| configuration | CPUs | workers | total work per op | ÷ 1 CPU | shootdowns | shootdown_cpus | ipis_sent |");
  has("| native | 1 | 1 | ");
  has("| native | 8 | 8 | ");
  // Lock counters by prefix: the one the rows count is a column, the one
  // that is 0 everywhere is not.
  has("| lock_kernel_acquired |");
  EXPECT_EQ(md.find("lock_frames_spins"), std::string::npos);
  // And in the summary, between the benchmarks and the targets.
  const std::string summary = summary_markdown(r, builtin_ratios(), compute_ratios(r, builtin_ratios()));
  const size_t at = summary.find("## Scaling across CPUs");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(at, summary.find("## Targets"));
  EXPECT_GT(at, summary.find("## Benchmarks"));

  const OJson j = scaling_json(r);
  ASSERT_EQ(j.size(), 16u);
  for (const auto& line : j) {
    EXPECT_TRUE(line.contains("counters_per_op")) << line.dump();
    if (line["cpus"] == 1) {
      EXPECT_EQ(line["to_one_cpu"], 1.0) << line.dump();
    }
  }
  // In wall time the figure is what one thread waited, and the title says so.
  Results wall = r;
  wall.run["icount"] = "";
  EXPECT_NE(scaling_section(wall).find("wall time: what the timed thread waited per op"), std::string::npos);
}

TEST(ScalingTarget, EightCpusOverOneOnDisjointData) {
  const Results r = fixture();
  const auto ratios = compute_ratios(r, builtin_ratios());
  std::map<std::string, std::string> verdicts;
  for (const auto& line : evaluate_targets(ratios))
    if (line.goal.starts_with("total work per op at 8 CPUs")) verdicts[line.goal] = line.verdict;
  // One line per benchmark's parameter set (mmap_churn: each mode), each
  // the verdict of its exact ratio.
  ASSERT_EQ(verdicts.size(), 4u);
  size_t judged = 0;
  for (const auto& x : ratios) {
    if (x.spec != "8 CPUs÷1, one worker per CPU") continue;
    const auto t = std::find_if(targets().begin(), targets().end(),
                                [&](const Target& t) { return t.ratio == x.spec && t.bench == x.bench; });
    ASSERT_NE(t, targets().end()) << x.bench;
    const std::string goal = t->goal + " — " + x.pair + ", " + params_text(x.params);
    ASSERT_TRUE(verdicts.count(goal)) << goal;
    EXPECT_TRUE(x.deterministic) << goal;
    if (x.bench == "munmap_threads")  // retired: not disjoint data (its threads share the space)
      EXPECT_TRUE(verdicts[goal].starts_with("retired: not disjoint data")) << verdicts[goal];
    else
      EXPECT_EQ(verdicts[goal], x.value <= 1.2 ? "met" : "missed") << goal;
    ++judged;
  }
  EXPECT_EQ(judged, 4u);
  // munmap_threads' threads spin while one times: its total work grows
  // with the CPUs by their spinning (the target's comment says so).
  const Row& eight = row_of(r, "munmap_threads", "native mmu=native smp=8", 7);
  const Row& one = row_of(r, "munmap_threads", "native mmu=native smp=1", 0);
  EXPECT_GT(eight.per_op / one.per_op, 1.2);
  // Without 8 CPUs in the run: not measured, and which run would.
  Results small = r;
  std::erase_if(small.rows, [](const Row& row) { return row.config.ends_with("smp=8"); });
  for (const auto& line : evaluate_targets(compute_ratios(small, builtin_ratios())))
    if (line.goal.starts_with("total work per op at 8 CPUs") && !line.verdict.starts_with("retired")) {
      EXPECT_EQ(line.verdict, "not in this run: tools/pvk bench --smp 1,2,4,8") << line.goal;
    }
}

}  // namespace
}  // namespace pvk::bench
