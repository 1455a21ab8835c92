#include "pvk/bench/calibrate_cli.hpp"

#include "pvk/bench/calibration.hpp"
#include "pvk/bench/cost_model.hpp"
#include "pvk/bench/cost_profile.hpp"
#include "pvk/bench/matrix.hpp"
#include "pvk/bench/provenance.hpp"
#include "pvk/bench/runner.hpp"
#include "pvk/backends.hpp"
#include "pvk/xen.hpp"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_cancel{false};
void on_signal(int) { g_cancel = true; }

}  // namespace

struct CalibrateCommand::State {
  const fs::path& build_dir;
  const fs::path& source_dir;
  CLI::App* command = nullptr;
  std::vector<std::string> platforms{"native", "xen"};
  bool icount = false;  // the virtual-time profile instead of this machine's TCG one
  std::string icount_spec = "shift=0,sleep=off";
  unsigned smp = 1;     // > 1: one more native boot, in wall time, for the IPI
  unsigned count = 1024;
  std::string name;     // default tcg, or icount
  fs::path out, runs_dir, kernel;
  fs::path xen_gz{std::string(default_xen_gz)};
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  State(const fs::path& b, const fs::path& s) : build_dir(b), source_dir(s) {}

  std::string profile_name() const { return !name.empty() ? name : icount ? "icount" : "tcg"; }

  // The calibrate item on each platform's default backend (batched under
  // Xen), once, on `cpus` CPUs; `event`: only that one (the IPI's boot).
  Plan plan(unsigned cpus, const std::string& event, bool wall) const {
    MatrixOptions m;
    m.platforms = platforms;
    m.mmus = {default_backend(Platform::native), default_backend(Platform::xen)};
    Item item{"calibrate", {{"count", std::to_string(count)}}};
    if (!event.empty()) item.options.emplace_back("event", event);
    m.items = {item};
    m.with_variations = false;
    m.reps = 1;
    m.smp = cpus;
    m.wall_time = wall;
    return build_plan(m);
  }

  Results boot(const Plan& plan, const std::string& icount_arg, const fs::path& dir) const {
    QemuRunnerOptions q;
    q.kernel = kernel.empty() ? build_dir / "guest" / "pvk.elf" : kernel;
    q.xen_gz = xen_gz;
    q.xen_cache_dir = build_dir / "cache" / "xen-4.17";
    q.icount = icount_arg;
    q.cancel = &g_cancel;
    if (!fs::is_regular_file(q.kernel))
      throw std::runtime_error(fmt::format("kernel image {} not found (build target pvk_kernel)", q.kernel.string()));
    QemuRunner qemu(q);
    PlatformRunners runner;
    runner.add("native", qemu);
    runner.add("xen", qemu);
    ExecuteOptions e;
    e.jobs = jobs;
    e.cancel = &g_cancel;
    e.log_dir = dir / "logs";
    e.out_dir = dir;
    Results r = execute(plan, runner, e);
    // QEMU's own last word on a failed boot (e.g. "Bad icount read") is in
    // its log, not in the verdict: the profile's reasons quote it.
    for (auto& b : r.boots) {
      if (b.pass || b.log.empty()) continue;
      std::ifstream log(dir / b.log);
      std::string last;
      for (std::string line; std::getline(log, line);)
        if (line.starts_with("qemu-system")) last = line;
      if (!last.empty()) b.reason += ": " + last;
    }
    r.run = {{"icount", icount_arg}, {"smp_icount", !icount_arg.empty()}, {"schedule", "paired"}};
    aggregate(r);
    std::ofstream(dir / "results.json") << to_json(r).dump(1) << "\n";
    return r;
  }

  static void append(Results& into, const Results& more) {
    for (const auto& c : more.configs)
      if (!into.find_config(c.id())) into.configs.push_back(c);
    into.boots.insert(into.boots.end(), more.boots.begin(), more.boots.end());
    into.rows.insert(into.rows.end(), more.rows.begin(), more.rows.end());
  }

  int run() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    const fs::path dir = runs_dir.empty() ? build_dir / "calibrate" / utc_time("%Y%m%d-%H%M%S") : runs_dir;
    fs::create_directories(dir);
    fmt::print(stderr, "pvk calibrate: {} on {}, {} (boots' logs in {})\n", profile_name(), fmt::join(platforms, ", "),
               icount ? "virtual time" : "wall time, instructions from a virtual-time twin", dir.string());
    // Virtual time always: each probe's instructions (and its exact
    // counters); with --smp also the IPI's boot on that many CPUs, natively.
    State ipi = *this;
    ipi.platforms = {"native"};
    Results virtual_run = boot(plan(1, "", false), icount_spec, dir / "icount");
    if (smp > 1) append(virtual_run, boot(ipi.plan(smp, "7", false), icount_spec, dir / fmt::format("icount-smp{}", smp)));
    Results timed = virtual_run;
    if (!icount) {
      timed = boot(plan(1, "", true), "", dir / "wall");
      if (smp > 1) append(timed, boot(ipi.plan(smp, "7", true), "", dir / fmt::format("wall-smp{}", smp)));
    }
    size_t failed = 0;
    for (const auto& b : virtual_run.boots) failed += !b.pass;
    if (!icount)
      for (const auto& b : timed.boots) failed += !b.pass;
    const CalibrationInput input = calibration_input(virtual_run, timed);
    const std::string qemu = first_line({"qemu-system-x86_64", "--version"});
    // Short, per number; the machine and the run are in "machine".
    const std::string source =
        fmt::format("pvk calibrate {}, {}", utc_time("%Y-%m-%d"), icount ? "virtual time" : "TCG wall time");
    CostProfile p = derive_costs(input.timings, input.missing, profile_name(), source);
    p.description = icount ? "QEMU -icount virtual time: every event at its own instructions (projecting a virtual-time "
                             "run with it gives the run back)"
                           : "QEMU TCG on this machine, wall time (pvk calibrate)";
    nlohmann::ordered_json j = profile_to_json(p);
    j["machine"] = {{"date", utc_time("%Y-%m-%d %H:%M UTC")}, {"qemu", qemu}, {"host_cpus", std::thread::hardware_concurrency()},
                    {"mode", icount ? "virtual time, -icount " + icount_spec
                                    : "TCG wall time; instructions per event from -icount " + icount_spec},
                    {"platforms", platforms}, {"smp", smp}, {"count", count}, {"runs", dir.string()},
                    {"boots_failed", failed}};
    nlohmann::ordered_json measured = nlohmann::ordered_json::object();
    for (const auto& [key, t] : input.timings)
      measured[key] = {{"ns_per_event", t.ns}, {"instructions_per_event", t.instructions}, {"taken_whole", t.whole}};
    j["calibration"] = measured;
    // Refuse to write what the parser would not read back.
    parse_profile(nlohmann::json::parse(j.dump()), p.name, "the profile just derived");
    const fs::path file = out.empty() ? source_dir / "bench" / "profiles" / (p.name + ".json") : out;
    std::ofstream(file) << j.dump(2) << "\n";
    fmt::print("{:<18} {:>14}  {}\n", "event", "cost", "from");
    fmt::print("{:<18} {:>11.3f} ns  per instruction\n", "instruction", p.instruction.ns);
    for (const auto& e : cost_events()) {
      if (const SourcedCost* c = p.event(e.name))
        fmt::print("{:<18} {:>11.1f} ns  {}\n", e.name, c->ns, e.unit == "ns" ? "per event" : "per KiB");
      else if (const auto it = p.not_timed.find(std::string(e.name)); it != p.not_timed.end())
        fmt::print("{:<18} {:>14}  not timed: {}\n", e.name, "—", it->second);
    }
    fmt::print(stderr, "pvk calibrate: wrote {}{}\n", file.string(),
               failed ? fmt::format(" ({} boots failed: what they would have timed is missing)", failed) : "");
    return failed || g_cancel ? 1 : 0;
  }
};

CalibrateCommand::CalibrateCommand(CLI::App& app, const fs::path& build_dir, const fs::path& source_dir)
    : state_(std::make_unique<State>(build_dir, source_dir)) {
  State& s = *state_;
  CLI::App* c = s.command = app.add_subcommand(
      "calibrate", "time each event of the cost model alone (bench/calibrate.cpp) and write a cost profile: this "
                   "machine's TCG one (bench/profiles/tcg.json) unless --icount");
  c->add_option("--platforms", s.platforms, "where to time the events: native (the CPU's) and xen (the hypervisor's)")
      ->delimiter(',')
      ->capture_default_str();
  c->add_flag("--icount", s.icount,
              "the virtual-time profile (each event at its own instructions) instead of wall time");
  c->add_option("--icount-spec", s.icount_spec, "the -icount argument of the virtual-time boots")->capture_default_str();
  c->add_option("--smp", s.smp, "also boot natively on N CPUs to time the IPI round trip")
      ->check(CLI::Range(1u, kMaxSmp))
      ->capture_default_str();
  c->add_option("--count", s.count, "events per timing (each rep times count and 2 x count)")
      ->check(CLI::Range(1u, 32768u))
      ->capture_default_str();
  c->add_option("--name", s.name, "the profile's name (default tcg, or icount with --icount)");
  c->add_option("--out", s.out, "where to write it (default bench/profiles/NAME.json)");
  c->add_option("--runs", s.runs_dir, "where the boots' results and logs go (default <build>/calibrate/<time>)");
  c->add_option("--jobs,-j", s.jobs, "boots at a time")->check(CLI::PositiveNumber)->capture_default_str();
  c->add_option("--kernel", s.kernel, "kernel image (default <build>/guest/pvk.elf)");
  c->add_option("--xen", s.xen_gz, "gzipped Xen image")->capture_default_str();
}

CalibrateCommand::~CalibrateCommand() = default;

bool CalibrateCommand::selected() const { return state_->command->parsed(); }

int CalibrateCommand::run() {
  try {
    return state_->run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "pvk: error: {}\n", e.what());
    return 2;
  }
}

}  // namespace pvk::bench
