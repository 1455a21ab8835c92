#include "pvk/bench/runner.hpp"

#include "pvk/bench/host_load.hpp"
#include "pvk/platform.hpp"
#include "pvk/run.hpp"

#include <fmt/format.h>

#include <cmath>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include <unistd.h>

namespace pvk::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string slug(std::string_view text) {
  std::string out;
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    out += ok ? c : (c == '=' ? '-' : '_');
  }
  return out;
}

// Completion lines, and a live status line on a terminal.
class Progress {
 public:
  Progress(const Plan& plan, const ExecuteOptions& options) : plan_(plan), print_(options.progress) {
    for (const auto& b : plan.boots) total_weight_ += b.weight;
    live_ = !print_ && ::isatty(STDERR_FILENO);
    if (!print_) print_ = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
    // On a terminal the status line's clock ticks while boots run.
    if (live_)
      ticker_ = std::thread([this] {
        std::unique_lock lock(mutex_);
        while (!stop_.wait_for(lock, std::chrono::seconds{1}, [this] { return stopping_; })) status();
      });
  }

  ~Progress() { done(); }

  void started(size_t index) {
    std::lock_guard lock(mutex_);
    ++running_;
    running_names_.push_back(index);
    status();
  }

  void finished(size_t index, const BootOutcome& outcome) {
    std::lock_guard lock(mutex_);
    --running_;
    std::erase(running_names_, index);
    ++done_;
    done_weight_ += plan_.boots[index].weight;
    failed_ += !outcome.pass;
    clear();
    print_(fmt::format("pvk bench: [{}/{}] {} {}: {} ({:.1f} s) — {} elapsed{}", done_, plan_.boots.size(),
                       outcome.pass ? "ok  " : "FAIL", plan_.describe_boot(plan_.boots[index]),
                       outcome.pass ? "pass" : outcome.reason, outcome.elapsed.count() / 1000.0,
                       clock_text(elapsed()), eta()));
    status();
  }

  void done() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      clear();
    }
    stop_.notify_all();
    if (ticker_.joinable()) ticker_.join();
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  std::string eta() const {
    if (done_weight_ <= 0 || done_ == plan_.boots.size()) return "";
    const double left = elapsed() * (total_weight_ - done_weight_) / done_weight_;
    return fmt::format(", about {} left", clock_text(left));
  }

  void status() {
    if (!live_ || stopping_ || done_ == plan_.boots.size()) return;
    std::string names;
    for (size_t i : running_names_) names += (names.empty() ? "" : ", ") + plan_.configs[plan_.boots[i].config].label();
    std::string line = fmt::format("[{}/{} done, {} running: {}] {}{}", done_, plan_.boots.size(), running_, names,
                                   clock_text(elapsed()), eta());
    if (line.size() > 150) line = line.substr(0, 147) + "...";
    fmt::print(stderr, "\r\033[K{}", line);
    std::fflush(stderr);
    shown_ = true;
  }

  void clear() {
    if (live_ && shown_) fmt::print(stderr, "\r\033[K");
    shown_ = false;
  }

  const Plan& plan_;
  std::function<void(const std::string&)> print_;
  bool live_ = false;
  bool shown_ = false;
  std::mutex mutex_;
  Clock::time_point start_ = Clock::now();
  double total_weight_ = 0, done_weight_ = 0;
  size_t done_ = 0, running_ = 0, failed_ = 0;
  std::vector<size_t> running_names_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread ticker_;
};

}  // namespace

std::string clock_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{}:{:02}", s / 60, s % 60);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

BootOutcome outcome_of(RunResult&& result) {
  BootOutcome out;
  out.started = true;
  out.pass = result.pass;
  out.reason = result.pass ? "pass" : result.reason;
  out.elapsed = result.elapsed;
  out.lines = std::move(result.lines);
  out.trouble = std::move(result.xen_trouble);
  return out;
}

RunOptions boot_run_options(const RunMachine& machine, const Boot& boot) {
  RunOptions run;
  static_cast<RunMachine&>(run) = machine;
  run.params = boot.cmdline;
  run.timeout = boot.timeout;
  run.memory = boot.machine.memory;
  run.dom0_memory = boot.machine.dom0_memory;
  run.smp = boot.machine.cpus;
  return run;
}

BootOutcome QemuRunner::boot(const Config& config, const Boot& boot) {
  const auto platform = parse_platform(options_.boots_as.empty() ? config.platform : options_.boots_as);
  if (!platform || (*platform != Platform::native && *platform != Platform::xen))
    throw std::runtime_error(fmt::format("the QEMU runner boots native and xen, not {}", config.platform));
  RunOptions run = boot_run_options(options_, boot);
  run.platform = *platform;
  run.kernel = options_.kernel;
  return outcome_of(run_kernel(run));
}

BootOutcome PlatformRunners::boot(const Config& config, const Boot& boot) {
  for (auto& [platform, runner] : runners_)
    if (platform == config.platform) return runner->boot(config, boot);
  throw std::runtime_error(fmt::format("no runner for platform {}", config.platform));
}

Results execute(const Plan& plan, BootRunner& runner, const ExecuteOptions& options) {
  Results results;
  results.configs = plan.configs;
  results.boots.resize(plan.boots.size());
  std::vector<std::vector<OJson>> records(plan.boots.size());
  if (!options.log_dir.empty()) fs::create_directories(options.log_dir);

  Progress progress(plan, options);
  // Plan order, the exclusive boots (several CPUs, wall time) last: while
  // one runs it holds the gate alone, the others share it.
  std::vector<size_t> run_order;
  for (const bool exclusive : {false, true})
    for (size_t i = 0; i < plan.boots.size(); ++i)
      if (plan.boots[i].exclusive == exclusive) run_order.push_back(i);
  std::shared_mutex gate;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    while (true) {
      if (options.cancel && options.cancel->load()) return;
      const size_t k = next++;
      if (k >= run_order.size()) return;
      const size_t i = run_order[k];
      const Boot& boot = plan.boots[i];
      const Config& config = plan.configs[boot.config];
      std::shared_lock shared(gate, std::defer_lock);
      std::unique_lock alone(gate, std::defer_lock);
      boot.exclusive ? alone.lock() : shared.lock();
      if (options.cancel && options.cancel->load()) return;
      progress.started(i);
      const auto load_before = read_loadavg();
      const auto ticks_before = read_cpu_ticks();
      BootOutcome outcome;
      try {
        outcome = runner.boot(config, boot);
      } catch (const std::exception& e) {
        outcome.started = false;
        outcome.reason = fmt::format("could not boot: {}", e.what());
      }
      boot.exclusive ? alone.unlock() : shared.unlock();
      BootRecord& rec = results.boots[i];
      if (load_before) rec.load_before = *load_before;
      if (const auto load_after = read_loadavg()) rec.load_after = *load_after;
      if (const auto ticks_after = read_cpu_ticks(); ticks_before && ticks_after)
        rec.host_busy = busy_share(*ticks_before, *ticks_after).value_or(-1);
      rec.config = config.id();
      rec.rep = boot.rep;
      rec.part = boot.part;
      rec.group = boot.group;
      rec.cmdline = boot.cmdline;
      rec.machine = boot.machine;
      rec.ran = outcome.started;
      rec.pass = outcome.pass;
      rec.reason = outcome.reason;
      rec.elapsed_s = outcome.elapsed.count() / 1000.0;
      rec.trouble = outcome.trouble;
      records[i] = parse_records(outcome.lines);
      for (const auto& r : records[i]) {
        if (!r.contains("bench")) continue;
        ++rec.benchmarks;
        if (r.contains("pass") && r["pass"].is_boolean() && !r["pass"].get<bool>()) {
          ++rec.failed;
          std::string what = fmt::format("benchmark {} {} failed", r["bench"].dump(), params_text(record_params(r)));
          if (r.contains("error") && r["error"].is_string()) what += ": " + r["error"].get<std::string>();
          rec.trouble.push_back(what);
        }
      }
      if (!options.log_dir.empty() && !outcome.lines.empty()) {
        const fs::path log = options.log_dir / fmt::format("{}-rep{}-part{}.log", slug(config.label()), boot.rep, boot.part);
        std::ofstream out(log);
        out << "# " << config.platform << ": " << boot.cmdline << "\n";
        for (const auto& line : outcome.lines) out << line << "\n";
        rec.log = options.out_dir.empty() ? log.string() : fs::relative(log, options.out_dir).string();
      }
      progress.finished(i, outcome);
    }
  };
  const int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(plan.boots.size())));
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  progress.done();

  // Boots never started (cancelled), then every record in plan order of
  // configuration, rep and part.
  for (size_t i = 0; i < plan.boots.size(); ++i) {
    BootRecord& rec = results.boots[i];
    if (rec.config.empty()) {
      const Boot& boot = plan.boots[i];
      rec.config = plan.configs[boot.config].id();
      rec.rep = boot.rep;
      rec.part = boot.part;
      rec.group = boot.group;
      rec.cmdline = boot.cmdline;
      rec.machine = boot.machine;
      rec.reason = "not run (cancelled)";
    }
  }
  std::vector<size_t> order(plan.boots.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Boot& x = plan.boots[a];
    const Boot& y = plan.boots[b];
    return std::tie(x.config, x.rep, x.part) < std::tie(y.config, y.rep, y.part);
  });
  std::vector<BootRecord> boots;
  for (size_t i : order) {
    boots.push_back(results.boots[i]);
    std::vector<Sample> mine;
    for (auto& r : records[i]) mine.push_back({results.boots[i].config, plan.boots[i].rep, plan.boots[i].part, std::move(r)});
    mark_warmups(mine);
    for (auto& s : mine) results.records.push_back(std::move(s));
  }
  results.boots = std::move(boots);
  return results;
}

}  // namespace pvk::bench
