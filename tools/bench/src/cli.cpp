#include "pvk/bench/cli.hpp"

#include "pvk/bench_rootfs.hpp"
#include "pvk/cpio.hpp"
#include "pvk/bench/compare.hpp"
#include "pvk/bench/figures.hpp"
#include "pvk/bench/linux_runner.hpp"
#include "pvk/bench/matrix.hpp"
#include "pvk/bench/model_check.hpp"
#include "pvk/bench/output.hpp"
#include "pvk/bench/projection.hpp"
#include "pvk/bench/provenance.hpp"
#include "pvk/bench/ratio.hpp"
#include "pvk/bench/runner.hpp"
#include "pvk/bench/schedule.hpp"
#include "pvk/xen.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <optional>
#include <thread>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;
std::atomic<bool> g_cancel{false};
void on_signal(int) { g_cancel = true; }

// -icount for deterministic virtual time: one instruction per virtual ns
// (shift=0) and no sleeping while idle (sleep=off: virtual time jumps to the
// next timer), so the same run gives the same guest timings (QEMU docs).
constexpr const char* default_icount = "shift=0,sleep=off";
}  // namespace

struct Commands::State {
  const fs::path& build_dir;
  const fs::path& source_dir;
  CLI::App* bench = nullptr;
  CLI::App* compare = nullptr;
  CLI::App* figures = nullptr;

  // bench
  std::vector<std::string> platforms{"native", "native-builtin", "xen"};
  std::vector<std::string> mmus;
  std::vector<std::string> sets;
  std::vector<std::string> ratios;
  std::string items;
  bool full = false, smoke = false, icount = false, no_variations = false, one_cpu = false, no_plots = false, dry_run = false;
  bool wall = false;  // --wall: time in wall time instead of the default virtual time
  bool with_linux = false;
  bool aa = false;                  // A/A: each base configuration twice, as two configurations
  bool warmup = false;              // warm-up: a one-rep run of each item first, discarded
  std::string schedule = "paired";  // schedule.hpp
  std::string icount_spec = default_icount;
  // CPUs of every machine (SMP): QEMU -smp, dom0_max_vcpus; several counts
  // (--smp 1,2,4,8): a scaling run (MatrixOptions::scaling).
  std::vector<unsigned> smp{1};
  fs::path rootfs;   // a directory packed as every boot's root filesystem
  fs::path initrd;   // or a ready newc cpio archive
  // Cost profiles to project the rows with (projection.hpp); "none": no model.
  std::vector<std::string> profiles{kDefaultProfile};
  CLI::Option* reps_option = nullptr;
  // Boots per configuration, unless --reps says: one in virtual time (a
  // second boot repeats the first's figures exactly), three in wall time
  // (TCG's timings move with the host's load; the statistics need more
  // than one boot a side for an interval).
  int reps = 3;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int timeout_s = -1;
  fs::path out;
  fs::path from;
  fs::path kernel;
  fs::path xen_gz{std::string(default_xen_gz)};

  // compare
  fs::path old_json, new_json, compare_out;
  bool repeat = false;  // --repeat: the check that significant ratios repeat within 5 %
  std::string model;    // --model NAME: OLD (virtual time) projected with NAME against NEW (wall time)

  // figures
  fs::path figures_results, figures_readme;
  bool figures_print = false;

  State(const fs::path& b, const fs::path& s) : build_dir(b), source_dir(s) {}

  // Virtual time (-icount) is the default: on a shared host a boot's wall
  // time moves by a factor of two (docs/benchmarks.md, "Noise"), while the
  // guest's instruction count repeats exactly. --wall asks for wall time;
  // --smoke (a check that the pipeline works, not figures) uses it too
  // unless --icount is given.
  bool virtual_time() const { return icount || (!wall && !smoke); }
  int effective_reps() const {
    if (reps_option->count() > 0) return reps;
    return smoke || virtual_time() ? 1 : reps;
  }

  std::string command_text() const {
    std::string c = "tools/pvk bench";
    if (smoke) c += " --smoke";
    if (full) c += " --full";
    if (wall) c += " --wall";
    if (icount) c += " --icount";
    if (virtual_time() && icount_spec != default_icount) c += " --icount-spec " + icount_spec;
    if (reps_option->count() > 0) c += fmt::format(" --reps {}", reps);
    if (smp != std::vector<unsigned>{1}) c += fmt::format(" --smp {}", fmt::join(smp, ","));
    if (platforms != std::vector<std::string>{"native", "native-builtin", "xen"}) c += " --platforms " + fmt::format("{}", fmt::join(platforms, ","));
    if (with_linux) c += " --linux";
    if (!mmus.empty()) c += " --mmu " + fmt::format("{}", fmt::join(mmus, ","));
    for (const auto& s : sets) c += " --set " + s;
    if (!items.empty()) c += " --bench " + items;
    if (no_variations) c += " --no-variations";
    if (one_cpu) c += " --one-cpu";
    if (aa) c += " --aa";
    if (warmup) c += " --warmup";
    if (schedule != "paired") c += " --schedule " + schedule;
    for (const auto& r : ratios) c += " --ratio '" + r + "'";
    if (profiles != std::vector<std::string>{kDefaultProfile}) c += " --profile " + fmt::format("{}", fmt::join(profiles, ","));
    c += fmt::format(" --jobs {}", jobs);
    return c;
  }

  // The steps of run_bench.

  // --profile, loaded from bench/profiles before anything boots (a bad one
  // stops the command in one line).
  std::vector<CostProfile> cost_profiles() const {
    std::vector<CostProfile> out;
    for (const auto& name : profiles)
      if (name != "none") out.push_back(load_profile(source_dir / "bench" / "profiles", name));
    return out;
  }

  // The matrix the options ask for (--linux adds each pvk platform's Linux twin).
  MatrixOptions matrix_options() const {
    MatrixOptions m;
    m.platforms = platforms;
    // --linux: Debian's Linux beside each pvk platform, on the same machine.
    if (with_linux)
      for (const auto& [pvk_platform, linux_platform] : linux_platforms)
        if (std::find(platforms.begin(), platforms.end(), pvk_platform) != platforms.end() &&
            std::find(platforms.begin(), platforms.end(), linux_platform) == platforms.end())
          m.platforms.push_back(linux_platform);
    m.mmus = mmus;
    for (const auto& s : sets) m.sets.push_back(parse_set(s));
    m.items = parse_items(items);
    m.full = full;
    m.smoke = smoke;
    m.with_variations = !no_variations;
    m.with_smp = !one_cpu;
    m.reps = effective_reps();
    if (smp.size() == 1)
      m.smp = smp.front();
    else
      m.scaling = smp;
    m.wall_time = !virtual_time();
    if (timeout_s > 0) m.timeout = std::chrono::seconds{timeout_s};
    return m;
  }

  // How the plan's boots are timed: virtual time (machines with several
  // CPUs too: round-robin vCPUs), or wall time, where a machine with several
  // CPUs boots alone.
  std::string timing_text(const Plan& plan) const {
    if (virtual_time()) return "virtual time (-icount " + icount_spec + ")";
    const size_t several = static_cast<size_t>(
        std::count_if(plan.configs.begin(), plan.configs.end(), [](const Config& c) { return c.cpus() > 1; }));
    if (several == 0) return "wall time";
    return fmt::format("wall time; {} configurations with several CPUs, each boot alone", several);
  }

  // --dry-run: one line per boot.
  void print_plan(const Plan& plan) const {
    for (const auto& b : plan.boots)
      fmt::print("{:<40} {:<8} -m {:<5} dom0_mem {:<6} -smp {:<2} timeout {:>5} s  {}\n", plan.describe_boot(b),
                 plan.configs[b.config].platform, b.machine.memory.empty() ? "-" : b.machine.memory,
                 b.machine.dom0_memory.empty() ? "-" : b.machine.dom0_memory, b.machine.cpus, b.timeout.count(),
                 b.cmdline);
    fmt::print("{} configurations, {} boots, {}\n", plan.configs.size(), plan.boots.size(), timing_text(plan));
  }

  QemuRunnerOptions qemu_options() const {
    QemuRunnerOptions q;
    q.kernel = kernel.empty() ? build_dir / "guest" / "pvk.elf" : kernel;
    q.xen_gz = xen_gz;
    q.xen_cache_dir = build_dir / "cache" / "xen-4.17";
    q.icount = virtual_time() ? icount_spec : "";
    q.smp = *std::max_element(smp.begin(), smp.end());  // each boot says its own (Boot::machine)
    q.cancel = &g_cancel;
    q.initrd = rootfs_archive(rootfs, initrd, build_dir);
    // Without a root filesystem of the user's, the real-program benchmarks'
    // files (the same a Linux boot's initramfs holds).
    if (q.initrd.empty())
      q.initrd = bench_rootfs_archive({.user_dir = build_dir / "user", .source_dir = source_dir},
                                      build_dir / "cache" / "rootfs");
    if (!fs::is_regular_file(q.kernel))
      throw std::runtime_error(fmt::format("kernel image {} not found (build target pvk_kernel)", q.kernel.string()));
    return q;
  }

  LinuxRunnerOptions linux_options(const QemuRunnerOptions& q) const {
    LinuxRunnerOptions l;
    l.tools_dir = source_dir / "tools";
    l.linux_cache_dir = build_dir / "cache" / "linux";
    l.user_dir = build_dir / "user";
    l.xen_gz = xen_gz;
    l.xen_cache_dir = q.xen_cache_dir;
    l.icount = q.icount;
    l.smp = q.smp;
    l.cancel = &g_cancel;
    return l;
  }

  static void catch_interrupts() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  }

  // What results.json says about the run itself.
  OJson run_record(const std::string& started, const std::string& commit, double wall,
                   const QemuRunnerOptions& q) const {
    return {{"started", started},
            {"finished", utc_time("%Y-%m-%d %H:%M:%S UTC")},
            {"wall_s", wall},
            {"jobs", jobs},
            {"reps", effective_reps()},
            {"command", command_text()},
            {"commit", commit},
            {"kernel", q.kernel.string()},
            {"qemu", first_line({"qemu-system-x86_64", "--version"})},
            {"icount", q.icount},
            {"smp_icount", !q.icount.empty()},  // machines with several CPUs in virtual time too
            // One count, or a scaling run's list ("1,2,4,8").
            {"smp", smp.size() == 1 ? OJson(smp.front()) : OJson(fmt::format("{}", fmt::join(smp, ",")))},
            {"schedule", schedule},
            {"aa", aa},
            {"warmup", warmup},
            {"host_cpus", std::thread::hardware_concurrency()},
            {"cancelled", g_cancel.load()}};
  }

  int run_bench() {
    const std::vector<CostProfile> model = cost_profiles();
    const MatrixOptions m = matrix_options();
    std::vector<RatioSpec> specs = builtin_ratios();
    for (const auto& r : ratios) specs.push_back(parse_ratio(r));
    if (!from.empty()) return rewrite(specs, model);
    Plan plan = build_plan(m);
    if (aa) add_aa_twins(plan);
    if (warmup) add_warmups(plan);
    schedule_boots(plan, parse_schedule(schedule));

    for (const auto& note : plan.notes) fmt::print(stderr, "pvk bench: {}\n", note);
    if (dry_run) {
      print_plan(plan);
      return 0;
    }

    const fs::path out_dir = out.empty() ? build_dir / "bench-results" / utc_time("%Y%m%d-%H%M%S") : out;
    fs::create_directories(out_dir);
    const QemuRunnerOptions q = qemu_options();
    QemuRunner qemu(q);
    PlatformRunners runner;
    runner.add("native", qemu);
    runner.add("xen", qemu);
    // The compiled-in native baseline (pvops costs): its own image, natively.
    QemuRunnerOptions qb = q;
    qb.kernel = q.kernel.parent_path() / "pvk-builtin.elf";
    qb.boots_as = "native";
    QemuRunner builtin(qb);
    runner.add("native-builtin", builtin);
    LinuxRunner linux_runner(linux_options(q));
    for (const auto& [pvk_platform, linux_platform] : linux_platforms) runner.add(linux_platform, linux_runner);
    catch_interrupts();

    fmt::print(stderr, "pvk bench: {} configurations, {} boots, {} at a time{} -> {}\n", plan.configs.size(),
               plan.boots.size(), std::min<size_t>(jobs, plan.boots.size()), ", " + timing_text(plan),
               out_dir.string());
    const std::string started = utc_time("%Y-%m-%d %H:%M:%S UTC");
    // The source the kernel was built from: read now, not when the run ends
    // (a commit made meanwhile is not what was measured).
    const std::string commit = commit_of(source_dir);
    const auto t0 = std::chrono::steady_clock::now();
    ExecuteOptions e;
    e.jobs = jobs;
    e.cancel = &g_cancel;
    e.log_dir = out_dir / "logs";
    e.out_dir = out_dir;
    Results results = execute(plan, runner, e);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    results.run = run_record(started, commit, wall, q);
    aggregate(results);
    apply_profiles(results, model);
    const Written w = write_outputs(results, specs, out_dir, !no_plots);
    if (out.empty()) link_latest_run(out_dir);
    const size_t failed = print_run_report(results, w, wall);
    return failed || g_cancel ? 1 : 0;
  }

  // --from: the outputs of an earlier run, rewritten from its results.json.
  int rewrite(const std::vector<RatioSpec>& specs, const std::vector<CostProfile>& model) {
    std::ifstream in(from);
    if (!in) throw std::runtime_error(fmt::format("cannot read {}", from.string()));
    Results results = results_from_json(OJson::parse(in));
    if (!results.records.empty()) aggregate(results);
    apply_profiles(results, model);
    const fs::path dir = out.empty() ? fs::absolute(from).parent_path() : out;
    const Written w = write_outputs(results, specs, dir, !no_plots);
    fmt::print("{}", w.summary_text);
    fmt::print(stderr, "pvk bench: wrote {}, {}, {}\n", w.summary.string(), w.json.string(), w.csv.string());
    if (!w.plot_problem.empty()) fmt::print(stderr, "pvk bench: {}\n", w.plot_problem);
    size_t failed = 0;
    for (const auto& b : results.boots) failed += !b.pass;
    return failed ? 1 : 0;
  }

  int run_compare() {
    const Results old_results = load_results(old_json);
    const Results new_results = load_results(new_json);
    if (!model.empty()) {
      // "paired": each boot's rows with the profile its own calibrate rows
      // give (bench --bench 'calibrate,...' in both modes), not fitted to them.
      std::string paired_text;
      std::optional<CostProfile> profile;
      if (model != "paired") profile = load_profile(source_dir / "bench" / "profiles", model);
      const ModelCheck check = profile ? model_check(old_results, new_results, *profile)
                                       : paired_model_check(old_results, new_results, &paired_text);
      const std::string text = model_check_text(check, profile ? &*profile : nullptr, paired_text, old_json.string(),
                                                new_json.string());
      fmt::print("{}", text);
      if (!compare_out.empty()) std::ofstream(compare_out) << text;
      return 0;
    }
    if (repeat) {
      const RepeatCheck check = repeat_check(old_results, new_results);
      const std::string text = repeat_text(check, old_json.string(), new_json.string());
      fmt::print("{}", text);
      if (!compare_out.empty()) std::ofstream(compare_out) << text;
      return check.ok() ? 0 : 1;
    }
    const Comparison c = compare_results(old_results, new_results);
    const std::string md = compare_markdown(c, old_json.string(), new_json.string());
    fmt::print("{}", md);
    if (!compare_out.empty()) {
      std::ofstream out(compare_out);
      out << md;
    }
    return 0;
  }

  // figures: docs/results/figures.md's block between the figures markers, from one run.
  int run_figures() {
    const fs::path readme = figures_readme.empty() ? source_dir / fs::path(kFiguresFile) : figures_readme;
    rewrite_figures(figures_results, figures_print ? fs::path{} : readme, source_dir);
    return 0;
  }
};

Commands::Commands(CLI::App& app, const fs::path& build_dir, const fs::path& source_dir)
    : state_(std::make_unique<State>(build_dir, source_dir)) {
  State& s = *state_;
  CLI::App* b = s.bench = app.add_subcommand(
      "bench", "boot every configuration of the benchmark matrix, write tables (summary.md), JSON, CSV and plots");
  b->add_flag("--full", s.full, "fork_dirty and mprotect at 64000-128000 pages, --reps times (the default boots 128000 once per "
                              "configuration, on the same bigger machines)");
  b->add_flag("--smoke", s.smoke, "the smoke suite (tiny sizes, one rep) on the first backend of each platform");
  CLI::Option* icount_flag = b->add_flag(
      "--icount", s.icount,
      "time in virtual time, QEMU -icount (the default, except for --smoke): the guest's clock counts "
      "instructions, so a boot repeated gives the same figures; one boot per configuration unless --reps");
  b->add_flag("--wall", s.wall,
              "time in wall time instead (no -icount; MTTCG with --smp): what the host really spent, which moves "
              "with its load; three boots per configuration unless --reps")
      ->excludes(icount_flag);
  b->add_option("--initrd", s.initrd, "every boot's root filesystem: this newc cpio archive")
      ->excludes(b->add_option("--rootfs", s.rootfs, "pack this host directory as a newc cpio archive: every "
                               "boot's root filesystem (docs/rootfs.md); without either, the real-program "
                               "benchmarks' busybox, bash and kbworker under /bin"));
  b->add_option("--icount-spec", s.icount_spec, "the -icount argument virtual time passes to QEMU")->capture_default_str();
  b->add_option("--smp", s.smp, "CPUs of every machine instead of the default matrix's own (one CPU, plus native and "
                "Xen batched at 2, --full 4): QEMU -smp N, Xen dom0_max_vcpus=N; with N > 1 the default list runs "
                "kernbench at N/2, N and 2N workers and adds the smp suite (docs/benchmarks.md) at threads=0, 1 and N-1. "
                "In virtual time its vCPUs run round-robin on one host thread (QEMU 10 keeps that fair), so its "
                "figures repeat like any other's (the guest's clock is the sum of every vCPU's instructions: see "
                "docs/benchmarks.md); with --wall it runs MTTCG, each boot alone. Several counts, e.g. --smp 1,2,4,8: "
                "a scaling run, each platform's SMP configurations booted at every count with kernbench and the smp "
                "suite (or --bench's items, given threads=0,1,N-1 where they leave it open), and the summary's "
                "scaling table")
      ->delimiter(',')
      ->check(CLI::Range(1u, kMaxSmp))
      ->capture_default_str();
  s.reps_option = b->add_option("--reps", s.reps,
                                "boots per configuration (the driver also repeats each benchmark 5 times per boot); "
                                "default 1 in virtual time and for --smoke, 3 with --wall")
                      ->check(CLI::PositiveNumber);
  b->add_option("--platforms", s.platforms,
                "platforms to boot: native, xen, and Debian's Linux on the same machines: linux-native, linux-xen")
      ->delimiter(',')
      ->capture_default_str();
  b->add_flag("--linux", s.with_linux,
              "Linux side by side: also boot Debian's Linux with the same benchmarks beside each pvk platform "
              "(linux-native next to native, linux-xen, as Xen's PV dom0, next to xen)");
  b->add_option("--mmu", s.mmus, "backends to boot (default: every backend of each platform)")->delimiter(',');
  b->add_option("--set", s.sets,
                "a boot switch and the values to cross with every configuration, e.g. --set batch=1,32 "
                "(repeatable; any switch the kernel takes)");
  b->add_option("--bench", s.items,
                "benchmark items instead of the default list, as bench= takes them: NAME[:key=v[+v...]],...");
  b->add_flag("--no-variations", s.no_variations,
              "only the base configurations (no pgd_cache=off / zero_page=off / pte=flags / ptshare=on boots)");
  b->add_flag("--one-cpu", s.one_cpu,
              "only one-CPU machines: leave out the default matrix's two-CPU configurations (e.g. on a QEMU "
              "older than 10, which cannot time several CPUs in virtual time)");
  b->add_flag("--aa", s.aa,
              "A/A check: boot every base configuration twice, as two configurations (twin=1, twin=2; the kernel "
              "sees the same command line); the A/A ratio must be 1.00 within its interval");
  b->add_flag("--warmup", s.warmup,
              "each boot first runs every item once with reps=1 and discards those records (kept in results.json "
              "as warm-ups)");
  b->add_option("--schedule", s.schedule,
                "boot order: paired (a round per rep, each configuration beside the ones its ratios compare it "
                "with, so the pairs share the host's load) or heaviest (heaviest boot first)")
      ->check(CLI::IsMember({"paired", "heaviest"}))
      ->capture_default_str();
  b->add_option("--profile", s.profiles,
                "cost profiles (bench/profiles/NAME.json) to project every virtual-time row with, shown beside it as a "
                "model (projected time: docs/benchmarks.md); none: no projection")
      ->delimiter(',')
      ->capture_default_str();
  b->add_option("--ratio", s.ratios, "another ratio table, NAME=NUMERATOR/DENOMINATOR, e.g. 'b1÷32=batch=1/batch=32'");
  b->add_option("--out", s.out, "output directory (default <build>/bench-results/<time>, linked as latest)");
  b->add_option("--jobs,-j", s.jobs, "boots at a time")->check(CLI::PositiveNumber)->capture_default_str();
  b->add_option("--timeout", s.timeout_s, "seconds per boot before it counts as hung (default 300 native, 1200 xen; "
                                          "twice that for --full's large boots)")
      ->check(CLI::PositiveNumber);
  b->add_option("--kernel", s.kernel, "kernel image (default <build>/guest/pvk.elf)");
  b->add_option("--xen", s.xen_gz, "gzipped Xen image")->capture_default_str();
  b->add_flag("--no-plots", s.no_plots, "write the gnuplot script and data but do not run gnuplot");
  b->add_flag("--dry-run", s.dry_run, "print the boots the matrix would run, and stop");
  b->add_option("--from", s.from,
                "boot nothing: rewrite summary, CSV, JSON and plots from an earlier results.json (into --out, "
                "default its directory), e.g. with more --ratio tables")
      ->check(CLI::ExistingFile);

  CLI::App* c = s.compare = app.add_subcommand(
      "compare", "compare two `pvk bench` runs: per row new÷old, its 95 % interval and p, ~ where no change is shown");
  c->add_option("old", s.old_json, "the earlier run: its results directory or results.json")
      ->required()
      ->check(CLI::ExistingPath);
  c->add_option("new", s.new_json, "the later run: its results directory or results.json")
      ->required()
      ->check(CLI::ExistingPath);
  c->add_option("--out", s.compare_out, "also write the Markdown (with --repeat: the check) here");
  c->add_option("--model", s.model,
                "check the cost model instead: OLD's virtual-time rows projected with this profile "
                "(bench/profiles/NAME.json; paired: the one the two runs' own calibrate rows give) against NEW's "
                "wall-time figures, per row and median |error|");
  c->add_flag("--repeat", s.repeat,
              "the repeat check instead of the row table: every ratio of the summary that both runs print "
              "without ~ must agree within 5 % (|new/old - 1| <= 0.05); one line per disagreement, a count, the "
              "ratios not counted; exit status 1 if any differs");

  CLI::App* f = s.figures = app.add_subcommand(
      "figures", "rewrite docs/results/figures.md's figures block (between <!-- figures:begin --> and <!-- figures:end -->) from "
                 "one run: its provenance, Targets table and Seeds section");
  f->add_option("results", s.figures_results, "the run: its results directory or results.json")
      ->required()
      ->check(CLI::ExistingPath);
  f->add_option("--file,--readme", s.figures_readme,
                "the file to rewrite (default: the source tree's docs/results/figures.md)")
      ->check(CLI::ExistingFile);
  f->add_flag("--print", s.figures_print, "print the block instead of rewriting the file");
}

Commands::~Commands() = default;

bool Commands::selected() const {
  return state_->bench->parsed() || state_->compare->parsed() || state_->figures->parsed();
}

int Commands::run() {
  try {
    if (state_->figures->parsed()) return state_->run_figures();
    return state_->bench->parsed() ? state_->run_bench() : state_->run_compare();
  } catch (const std::exception& e) {
    fmt::print(stderr, "pvk: error: {}\n", e.what());
    return 2;
  }
}

}  // namespace pvk::bench
