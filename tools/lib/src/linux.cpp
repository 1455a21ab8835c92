#include "pvk/linux.hpp"

#include "pvk/bench_rootfs.hpp"
#include "pvk/cpio.hpp"
#include "pvk/native.hpp"
#include "pvk/process.hpp"
#include "pvk/record.hpp"
#include "pvk/run.hpp"
#include "pvk/verdict.hpp"
#include "pvk/xen.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

namespace pvk {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path.string()));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Lines of Linux's own that say it is in trouble (quoted in a failure).
bool is_linux_trouble(std::string_view line) {
  for (std::string_view p : {"Kernel panic", "BUG:", "Oops", "general protection fault", "Out of memory",
                             "Killed process", "segfault at", "Unable to handle", "RIP: "})
    if (line.find(p) != std::string_view::npos) return true;
  return false;
}

// Removes a file when the run is over, whatever happens.
struct TempFile {
  fs::path path;
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

}  // namespace

LinuxKernel linux_kernel(const fs::path& tools_dir, const fs::path& cache_dir,
                         const std::function<void(std::string_view)>& note) {
  const fs::path builder = tools_dir / linux_builder_path;
  if (!fs::is_regular_file(builder))
    throw std::runtime_error(fmt::format("Linux kernel fetcher {} not found", builder.string()));
  run_builder_script({"bash", builder.string(), cache_dir.string()}, "fetching the Linux kernel", note);
  LinuxKernel kernel{cache_dir / "vmlinuz", ""};
  if (!fs::is_regular_file(kernel.vmlinuz))
    throw std::runtime_error(fmt::format("the Linux kernel fetcher left no vmlinuz in {}", cache_dir.string()));
  std::error_code ec;
  if (fs::is_regular_file(cache_dir / "version", ec)) {
    kernel.release = read_file(cache_dir / "version");
    while (!kernel.release.empty() && (kernel.release.back() == '\n' || kernel.release.back() == ' '))
      kernel.release.pop_back();
  }
  return kernel;
}

bool is_linux(Platform platform) { return platform == Platform::linux_native || platform == Platform::linux_xen; }

std::vector<std::string> linux_init_args(std::string_view params) {
  std::vector<std::string> out;
  for (const auto& w : words(params)) {
    if (!w.starts_with("bench=")) continue;
    std::string_view items = std::string_view(w).substr(6);
    while (!items.empty()) {
      const size_t comma = items.find(',');
      const std::string_view item = items.substr(0, comma);
      if (!item.empty()) out.emplace_back(item);
      if (comma == std::string_view::npos) break;
      items = items.substr(comma + 1);
    }
  }
  return out;
}

std::string linux_command_line(Platform platform, std::string_view params) {
  // quiet: Linux's boot messages would only slow the serial console down.
  std::string line = platform == Platform::linux_xen ? "console=hvc0 earlyprintk=xen" : "console=ttyS0,115200";
  line += " panic=-1 quiet";
  // 4 KiB pages only, like pvk (and like any PV guest, which cannot map huge
  // pages): with Debian's default (THP "always") Linux natively would map
  // the benchmarks' big regions with 2 MiB pages and fork/mprotect/fault
  // would measure another strategy. A transparent_hugepage= word of the
  // run's parameters wins.
  bool thp_given = false;
  for (const auto& w : words(params)) thp_given |= w.starts_with("transparent_hugepage=");
  if (!thp_given) line += " transparent_hugepage=never";
  for (const auto& w : words(params))
    if (!w.starts_with("bench=")) line += " " + w;
  const std::vector<std::string> args = linux_init_args(params);
  if (!args.empty()) {
    line += " --";
    for (const auto& a : args) line += " " + a;
  }
  return line;
}

std::string bench_initramfs(const fs::path& user_dir, const fs::path& source_dir) {
  std::string out;
  cpio_append(out, "dev", 040755);
  cpio_append(out, "dev/console", 020600, {}, 5, 1);
  cpio_append(out, "dev/null", 020666, {}, 1, 3);
  cpio_append(out, "tmp", 041777);
  // The real-program benchmarks' files, where pvk's root filesystem has them.
  for (const auto& e : bench_program_files({.user_dir = user_dir, .source_dir = source_dir})) cpio_append(out, e);
  for (const char* program : {"bench", "kbworker"}) {
    const fs::path file = user_dir / program;
    if (!fs::is_regular_file(file))
      throw std::runtime_error(fmt::format("{} not found (build target {}; the static bench/ programs)",
                                           file.string(), program));
    cpio_append(out, std::string(program) == "bench" ? "init" : program, 0100755, read_file(file));
  }
  cpio_finish(out);
  return out;
}

std::vector<std::string> linux_native_argv(const QemuConfig& config, const fs::path& initrd) {
  std::vector<std::string> argv = native_argv(config);
  const auto cpu = std::find(argv.begin(), argv.end(), "-cpu");
  if (cpu == argv.end() || cpu + 1 == argv.end()) throw std::logic_error("native_argv has no -cpu");
  cpu[1] += ",-la57";
  argv.insert(argv.end(), {"-initrd", initrd.string()});
  return argv;
}

std::vector<std::string> linux_xen_argv(const QemuConfig& config, const fs::path& initrd) {
  if (initrd.string().find_first_of(" \t") != std::string::npos)
    throw std::invalid_argument(fmt::format("path must not contain blanks under Xen: {}", initrd.string()));
  // The kernel module (vmlinuz and its command line), then the initramfs as
  // the next module: Xen hands dom0 the module after the kernel as its initrd.
  std::vector<std::string> argv = xen_argv(config);
  const auto it = std::find(argv.begin(), argv.end(), "-initrd");
  if (it == argv.end() || it + 1 == argv.end()) throw std::logic_error("xen_argv has no -initrd");
  it[1] += "," + escape_commas(initrd.string());
  return argv;
}

std::string linux_boot_record(Platform platform, std::string_view release, std::string_view command_line) {
  nlohmann::ordered_json r;
  r["event"] = "boot";
  r["platform"] = platform_name(platform);
  r["role"] = platform == Platform::linux_xen ? "dom0" : "native";
  r["mmu"] = "linux";
  r["kernel"] = release;
  r["cmdline"] = command_line;
  r["synthesised"] = true;
  return std::string(record_prefix) + r.dump();
}

RunResult run_linux(const RunOptions& options, const ConsoleEcho& echo, std::chrono::seconds timeout) {
  const Platform platform = options.platform;
  if (!is_linux(platform)) throw std::logic_error("run_linux: not a Linux platform");
  if (options.gdb) throw std::runtime_error("--gdb is for pvk's own platforms");
  const LinuxKernel kernel = linux_kernel(options.tools_dir, options.linux_cache_dir, options.note);

  static std::atomic<int> runs{0};
  TempFile initrd{options.linux_cache_dir / fmt::format("bench-{}-{}.cpio", ::getpid(), ++runs)};
  {
    const std::string archive = bench_initramfs(options.user_dir, options.tools_dir.parent_path());
    std::ofstream file(initrd.path, std::ios::binary | std::ios::trunc);
    file.write(archive.data(), static_cast<std::streamsize>(archive.size()));
    if (!file.flush()) throw std::runtime_error(fmt::format("cannot write {}", initrd.path.string()));
  }

  QemuConfig qemu;
  qemu.qemu = options.qemu;
  qemu.kernel = kernel.vmlinuz;
  qemu.params = linux_command_line(platform, options.params);
  qemu.memory = options.memory;
  qemu.dom0_memory = options.dom0_memory;
  qemu.icount = options.icount;
  qemu.smp = options.smp;  // --smp N: QEMU -smp N, under Xen dom0_max_vcpus=N (as for pvk)
  ProcessOptions process;
  if (platform == Platform::linux_xen) {
    qemu.xen_image = xen_image(options.xen_gz, options.xen_cache_dir);
    process.argv = linux_xen_argv(qemu, initrd.path);
  } else {
    process.argv = linux_native_argv(qemu, initrd.path);
  }
  process.timeout = timeout;
  process.cancel = options.cancel;

  RunResult result;
  auto show = [&](std::string_view line) {
    if (echo) echo(line);
    result.add_console_line(line);
  };
  XenTroubleLog xen_trouble;
  std::vector<std::string> linux_trouble;
  std::optional<XenShutdown> xen_shutdown;
  std::optional<nlohmann::json> bench_done;
  bool started = false;
  const ProcessResult exit = run_process(process, [&](std::string_view line) {
    const ConsoleLine parsed = parse_console_line(line);
    const bool record = parsed.kind == ConsoleLine::Kind::record;
    if (record && !started && parsed.record.value("event", "") == "bench_start") {
      started = true;
      show(linux_boot_record(platform, kernel.release, qemu.params));
    }
    show(line);
    if (record && parsed.record.value("event", "") == "bench_done") {
      bench_done = parsed.record;
      return LineAction::stop;  // init exits next, and Linux panics
    }
    if (platform == Platform::linux_xen) {
      xen_trouble.observe(line);
      if (!xen_shutdown && (xen_shutdown = parse_xen_shutdown(line))) return LineAction::stop;
    }
    if (!line.starts_with("(XEN)") && is_linux_trouble(line) && linux_trouble.size() < 20)
      linux_trouble.emplace_back(line);
    return LineAction::keep_going;
  });

  // Linux's verdict, in pvk's protocol: a done record after bench_done.
  if (bench_done) {
    const long failed = bench_done->value("failed", -1L);
    nlohmann::ordered_json done;
    done["event"] = "done";
    done["status"] = failed == 0 ? "pass" : "fail";
    if (failed != 0) done["reason"] = fmt::format("{} benchmark records failed", failed);
    done["synthesised"] = true;
    show(std::string(record_prefix) + done.dump());
    result.platform_exit = {ExitVerdict::pass, "stopped by the runner after bench_done"};
  } else if (xen_shutdown) {
    result.platform_exit = {ExitVerdict::none, "Linux (dom0) crashed or rebooted before bench_done"};
  } else if (exit.term_signal != 0) {
    result.platform_exit = {ExitVerdict::none, fmt::format("QEMU was killed by signal {}", exit.term_signal)};
  } else {
    result.platform_exit = {ExitVerdict::none,
                            fmt::format("QEMU exited (status {}) before bench_done: Linux panicked or init died",
                                        exit.exit_code)};
  }
  result.xen_trouble = xen_trouble.lines();
  result.xen_trouble.insert(result.xen_trouble.end(), linux_trouble.begin(), linux_trouble.end());

  result.exit_code = exit.exit_code;
  result.term_signal = exit.term_signal;
  result.timed_out = exit.timed_out;
  result.elapsed = exit.elapsed;
  result.done = find_done_record(result.records);
  const Verdict verdict = decide({result.records, result.protocol_errors, result.timed_out, timeout, result.platform_exit});
  result.pass = verdict.pass;
  result.reason = verdict.reason;
  if (exit.stopped && !bench_done && !xen_shutdown && !verdict.pass) result.reason = "run cancelled before Linux finished";
  return result;
}

}  // namespace pvk
