#include "fuzz.hpp"

#include "pvk/process.hpp"
#include "pvk/run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <optional>

namespace pvk::cli {
namespace fs = std::filesystem;

namespace {

// The targets tests/fuzz builds, in the order they run.
const std::vector<std::string> kTargets = {"boot_params", "elf_image", "record", "cpio_reader"};

struct TargetResult {
  std::string name;
  uint64_t executions = 0;
  double seconds = 0;
  bool pass = false;
  std::string crash;  // the saved input, if libFuzzer wrote one
};

// "stat::number_of_executed_units: 123" -> 123.
std::optional<uint64_t> stat_value(std::string_view line, std::string_view key) {
  if (!line.starts_with(key)) return std::nullopt;
  line.remove_prefix(key.size());
  while (!line.empty() && (line.front() == ':' || line.front() == ' ')) line.remove_prefix(1);
  uint64_t n = 0;
  if (line.empty()) return std::nullopt;
  for (char c : line) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

// Builds the fuzz targets (a no-op when they are current); false if the
// build has none (no clang with libFuzzer when it was configured).
bool build_targets(const fs::path& build_dir) {
  std::vector<std::string> output;
  ProcessOptions options;
  options.argv = {PVK_CMAKE_COMMAND, "--build", build_dir.string(), "--target", "pvk_fuzz"};
  const ProcessResult r = run_process(options, [&](std::string_view line) {
    output.emplace_back(line);
    return LineAction::keep_going;
  });
  if (r.exit_code == 0) return true;
  for (const auto& line : output) fmt::print(stderr, "{}\n", line);
  return false;
}

}  // namespace

FuzzCommand::FuzzCommand(CLI::App& app, const fs::path& build_dir, const fs::path& source_dir,
                         const std::atomic<bool>* cancel)
    : build_dir_(build_dir), source_dir_(source_dir), cancel_(cancel) {
  command_ = app.add_subcommand("fuzz", "fuzz the host-testable kernel parsers with libFuzzer, or the kernel itself (--guest)");
  command_->add_option("--seconds", seconds_, "seconds per target (default: until --runs executions)")
      ->check(CLI::PositiveNumber);
  command_->add_option("--runs", runs_, "executions per target when --seconds is not given")->capture_default_str();
  command_->add_option("--target", targets_, "only these targets (boot_params, elf_image, record, cpio_reader)")
      ->check(CLI::IsMember(kTargets));
  command_->add_flag("--guest", guest_,
                     fmt::format("boot the in-guest syscall fuzzer (bench=sysfuzz) with mmu={} (native natively, the "
                                 "others under Xen)",
                                 fmt::join(mmus_, ",")));
  command_->add_option("--seed", seed_, "--guest: the fuzzer's seed")->capture_default_str();
  command_->add_option("--iters", iters_, "--guest: syscalls per boot")->capture_default_str();
  command_->add_option("--mmu", mmus_, "--guest: backends to boot (each on its platform: natively or under Xen)")
      ->delimiter(',')
      ->check(CLI::IsMember(backend_names()));
  command_->add_option("--timeout", timeout_s_, "--guest: seconds per boot")->capture_default_str();
}

int FuzzCommand::run() { return guest_ ? run_guest() : run_host(); }

int FuzzCommand::run_host() {
  if (!build_targets(build_dir_)) {
    fmt::print(stderr,
               "pvk: no fuzz targets in {}: they need clang with libFuzzer (Debian: clang libclang-rt-14-dev) "
               "when the build is configured\n",
               build_dir_.string());
    return 2;
  }
  const std::vector<std::string>& names = targets_.empty() ? kTargets : targets_;
  std::vector<TargetResult> results;
  for (const std::string& name : names) {
    if (cancel_ && *cancel_) break;
    const fs::path work = build_dir_ / "fuzz" / name;
    const fs::path seeds = source_dir_ / "tests" / "fuzz" / "corpus" / name;
    const fs::path dict = source_dir_ / "tests" / "fuzz" / (name + ".dict");
    fs::create_directories(work / "corpus");
    ProcessOptions options;
    options.argv = {(build_dir_ / "tests" / "fuzz" / "bin" / ("fuzz_" + name)).string(), "-print_final_stats=1",
                    "-timeout=10", "-artifact_prefix=" + work.string() + "/"};
    if (seconds_ > 0)
      options.argv.push_back(fmt::format("-max_total_time={}", seconds_));
    else
      options.argv.push_back(fmt::format("-runs={}", runs_));
    if (fs::exists(dict)) options.argv.push_back("-dict=" + dict.string());
    // New inputs go to the build's corpus; the checked-in one only seeds.
    options.argv.push_back((work / "corpus").string());
    options.argv.push_back(seeds.string());
    options.cancel = cancel_;

    fmt::print("pvk: fuzz {} ({}) ...\n", name,
               seconds_ > 0 ? fmt::format("{} s", seconds_) : fmt::format("{} runs", runs_));
    std::fflush(stdout);
    TargetResult result;
    result.name = name;
    std::ofstream log(work / "fuzz.log");
    std::deque<std::string> tail;  // shown if it fails
    const ProcessResult r = run_process(options, [&](std::string_view line) {
      log << line << '\n';
      tail.emplace_back(line);
      if (tail.size() > 60) tail.pop_front();
      if (auto n = stat_value(line, "stat::number_of_executed_units")) result.executions = *n;
      constexpr std::string_view written = "Test unit written to ";
      if (const size_t at = line.find(written); at != std::string_view::npos)
        result.crash = std::string(line.substr(at + written.size()));
      return LineAction::keep_going;
    });
    result.seconds = static_cast<double>(r.elapsed.count()) / 1000.0;
    result.pass = r.exit_code == 0 && result.crash.empty();
    if (!result.pass) {
      for (const auto& line : tail) fmt::print(stderr, "{}\n", line);
      fmt::print(stderr, "pvk: fuzz {}: FAIL (log {}){}\n", name, (work / "fuzz.log").string(),
                 result.crash.empty() ? ""
                                      : fmt::format("; the input is {}: fix the bug, then add it to {} as a regression input",
                                                    result.crash, seeds.string()));
    }
    results.push_back(result);
  }

  fmt::print("\n{:<12} {:>12} {:>9} {:>11}  {}\n", "target", "executions", "seconds", "exec/s", "result");
  bool all = results.size() == names.size();
  for (const TargetResult& t : results) {
    all &= t.pass;
    fmt::print("{:<12} {:>12} {:>9.1f} {:>11.0f}  {}\n", t.name, t.executions, t.seconds,
               t.seconds > 0 ? static_cast<double>(t.executions) / t.seconds : 0.0, t.pass ? "pass" : "FAIL");
  }
  return all ? 0 : 1;
}

int FuzzCommand::run_guest() {
  bool all = true;
  fmt::print("{:<10} {:<8} {:>9}  {}\n", "platform", "mmu", "seconds", "result");
  for (const std::string& mmu : mmus_) {
    if (cancel_ && *cancel_) return 1;
    RunOptions options;
    options.platform = find_backend(mmu)->platform;  // --mmu names only backends
    options.kernel = build_dir_ / "guest" / "pvk.elf";
    options.params = fmt::format("mmu={} bench=sysfuzz:seed={}:iters={}", mmu, seed_, iters_);
    options.timeout = std::chrono::seconds{timeout_s_};
    options.xen_cache_dir = build_dir_ / "cache" / "xen-4.17";
    options.tools_dir = source_dir_ / "tools";
    options.user_dir = build_dir_ / "user";
    options.cancel = cancel_;
    options.note = [](std::string_view line) { fmt::print(stderr, "pvk: {}\n", line); };
    const RunResult r = run_kernel(options);
    all &= r.pass;
    const std::string_view platform = platform_name(options.platform);
    fmt::print("{:<10} {:<8} {:>9.1f}  {}\n", platform, mmu, static_cast<double>(r.elapsed.count()) / 1000.0,
               r.pass ? "pass" : "FAIL: " + r.reason);
    // The fuzzer's summary (its figures, failing seeds), as it printed it.
    for (const auto& record : r.records)
      if (const auto e = record.find("event"); e != record.end() && *e == "sysfuzz")  // any type compares
        fmt::print("  @pvk {}\n", record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (!r.pass) fmt::print(stderr, "pvk: reproduce with: tools/pvk run --platform {} --append \"{}\"\n", platform,
                            options.params);
    std::fflush(stdout);
  }
  return all ? 0 : 1;
}

}  // namespace pvk::cli
