#include "pvk/run.hpp"

#include "pvk/libvirt.hpp"
#include "pvk/linux.hpp"
#include "pvk/native.hpp"
#include "pvk/process.hpp"
#include "pvk/record.hpp"
#include "pvk/verdict.hpp"
#include "pvk/xen_domu.hpp"
#include "pvk/xl.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <system_error>

#include <unistd.h>

namespace pvk {
void RunResult::add_console_line(std::string_view line) {
  if (kept_bytes_ + line.size() <= kMaxKeptBytes) {
    kept_bytes_ += line.size();
    lines.emplace_back(line);
  } else {
    ++lines_dropped;
  }
  ConsoleLine parsed = parse_console_line(line);
  if (parsed.kind == ConsoleLine::Kind::record) {
    const bool user = is_user_record(parsed.record);
    if (!user || ++user_records_ <= kMaxUserRecords) records.push_back(std::move(parsed.record));
  }
  if (parsed.kind == ConsoleLine::Kind::malformed) protocol_errors.push_back(std::move(parsed.error));
}

namespace {

namespace fs = std::filesystem;

// Where the console lines of a run go: the echo, RunResult::lines and, for
// pvk's own lines, the record parser.
class Console {
 public:
  Console(RunResult& result, const ConsoleEcho& echo) : result_(result), echo_(echo) {}

  // A line of pvk's console (records are parsed) or of the platform's own
  // output that is shown with it (Xen, the xl driver).
  void shown(std::string_view line) {
    if (echo_) echo_(line);
    result_.add_console_line(line);
  }
  // Kept for the failure report only.
  void hidden(std::string_view line) { result_.hidden_lines.emplace_back(line); }

 private:
  RunResult& result_;
  const ConsoleEcho& echo_;
};

// The domU's share of the run's time when the xl driver has its own deadline:
// it needs `margin` to boot dom0 (xen-domu) and to report after destroying
// the domain.
std::chrono::seconds domain_timeout(std::chrono::seconds run_timeout, std::chrono::seconds margin) {
  if (run_timeout.count() == 0) return std::chrono::hours{24};
  return std::max(std::chrono::seconds{10}, run_timeout - margin);
}

// `gave_up_after`: the xl driver destroyed the domain at its own deadline,
// which is a timeout too. `with_platform_reason`: a failure the platform
// reports (xl: the domain crashed) is added to the reason.
void judge(RunResult& result, const ProcessResult& exit, std::chrono::seconds timeout, bool stopped_by_platform,
           std::optional<std::chrono::seconds> gave_up_after = std::nullopt, bool with_platform_reason = false) {
  result.exit_code = exit.exit_code;
  result.term_signal = exit.term_signal;
  result.timed_out = exit.timed_out || gave_up_after.has_value();
  result.elapsed = exit.elapsed;
  result.done = find_done_record(result.records);
  const std::chrono::seconds judged = exit.timed_out ? timeout : gave_up_after.value_or(timeout);
  const Verdict verdict =
      decide({result.records, result.protocol_errors, result.timed_out, judged, result.platform_exit});
  result.pass = verdict.pass;
  result.reason = verdict.reason;
  if (with_platform_reason && !verdict.pass && result.platform_exit.verdict == ExitVerdict::fail &&
      result.reason.find(result.platform_exit.description) == std::string::npos)
    result.reason += "; " + result.platform_exit.description;
  // Only `cancel` stops a run the platform did not end; say so rather than
  // blame the kernel for the exit that followed.
  if (exit.stopped && !stopped_by_platform && !verdict.pass) result.reason = "run cancelled before the kernel finished";
}

// The QEMU machine RunOptions describe (xen_image is filled in by the caller).
QemuConfig qemu_config(const RunOptions& options) {
  QemuConfig qemu;
  qemu.qemu = options.qemu;
  qemu.kernel = options.kernel;
  qemu.params = options.params;
  qemu.gdb = options.gdb;
  qemu.memory = options.memory;
  qemu.dom0_memory = options.dom0_memory;
  qemu.icount = options.icount;
  qemu.smp = options.smp;
  qemu.initrd = options.initrd;
  return qemu;
}

// pvk in QEMU, natively or as Xen's dom0.
RunResult run_qemu(const RunOptions& options, const ConsoleEcho& echo, std::chrono::seconds timeout) {
  QemuConfig qemu = qemu_config(options);
  if (options.platform == Platform::xen) qemu.xen_image = xen_image(options.xen_gz, options.xen_cache_dir);

  ProcessOptions process;
  process.argv = qemu_argv(options.platform, qemu);
  process.timeout = timeout;
  process.cancel = options.cancel;

  RunResult result;
  Console console(result, echo);
  std::optional<XenShutdown> xen_shutdown;
  XenTroubleLog xen_trouble;
  auto on_line = [&](std::string_view line) {
    console.shown(line);
    if (options.platform == Platform::xen) {
      xen_trouble.observe(line);
      // Xen only halts the CPU when dom0 powers off, and waits 5 s before
      // rebooting after a crash: once it has said which, the run is over.
      if (!xen_shutdown && (xen_shutdown = parse_xen_shutdown(line))) return LineAction::stop;
    }
    return LineAction::keep_going;
  };
  const ProcessResult exit = run_process(process, on_line);
  result.platform_exit = options.platform == Platform::xen ? xen_exit(exit, xen_shutdown) : native_exit(exit);
  result.xen_trouble = xen_trouble.lines();
  judge(result, exit, timeout, xen_shutdown.has_value());
  return result;
}

// The xl driver's tagged output, wherever it runs; returns true once its
// result line is in.
struct XlOutput {
  std::optional<XlResult> result;
  void observe(std::string_view line, Console& console, std::vector<std::string>& trouble) {
    if (auto text = xl_console_text(line)) {
      console.shown(*text);
      return;
    }
    console.shown(line);
    if (is_xl_trouble(line)) trouble.emplace_back(line);
    if (auto r = parse_xl_result(line)) result = r;
  }
};

// The driver's deadline, if it destroyed the domain when that ran out.
std::optional<std::chrono::seconds> driver_gave_up(const XlOutput& xl, std::chrono::seconds domain) {
  if (xl.result && xl.result->shutdown == "timeout") return domain;
  return std::nullopt;
}

fs::path driver_path(const RunOptions& options) {
  const fs::path driver = options.tools_dir / xl_driver_path;
  if (!fs::is_regular_file(driver))
    throw std::runtime_error(fmt::format("xl driver {} not found (set the source directory)", driver.string()));
  return driver;
}

// On a Xen host: the driver itself, as a child process.
RunResult run_xl(const RunOptions& options, const ConsoleEcho& echo, std::chrono::seconds timeout) {
  const std::chrono::seconds domain = domain_timeout(timeout, std::chrono::seconds{20});
  ProcessOptions process;
  process.argv =
      xl_driver_argv(driver_path(options), options.kernel, options.params, domain, options.smp, options.initrd);
  process.timeout = timeout;
  process.cancel = options.cancel;
  process.kill_grace = std::chrono::seconds{10};  // the driver destroys the domain on SIGTERM

  RunResult result;
  Console console(result, echo);
  XlOutput xl;
  const ProcessResult exit = run_process(process, [&](std::string_view line) {
    xl.observe(line, console, result.xen_trouble);
    return LineAction::keep_going;
  });
  result.platform_exit = xl_exit(xl.result, exit);
  judge(result, exit, timeout, false, driver_gave_up(xl, domain), true);
  return result;
}

// Removes a file when the run is over, whatever happens.
struct TempFile {
  fs::path path;
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

// Xen in QEMU with a Linux dom0 that runs the xl driver.
RunResult run_xen_domu(const RunOptions& options, const ConsoleEcho& echo, std::chrono::seconds timeout) {
  // Through libvirt: dom0 runs libvirtd's libxl driver instead of xl, from
  // the image flavour that has it.
  const bool libvirt = options.via == Via::libvirt;
  const fs::path cache = libvirt ? fs::path(options.dom0_cache_dir.string() + "-libvirt") : options.dom0_cache_dir;
  const Dom0Image dom0 = dom0_image(options.tools_dir, cache, options.note, libvirt);
  const std::chrono::seconds domain = domain_timeout(timeout, std::chrono::seconds{90});
  static int runs = 0;
  TempFile initrd{cache / fmt::format("run-{}-{}.initrd", ::getpid(), ++runs)};
  write_run_initrd(dom0, options.kernel, options.params, domain, initrd.path, libvirt ? "libvirt" : "xl",
                   options.smp);

  QemuConfig qemu = qemu_config(options);
  qemu.xen_image = xen_image(options.xen_gz, options.xen_cache_dir);
  ProcessOptions process;
  process.argv = xen_domu_argv(qemu, dom0, initrd.path, libvirt ? xen_domu_libvirt_cpu : xen_domu_cpu);
  process.timeout = timeout;
  process.cancel = options.cancel;

  RunResult result;
  Console console(result, echo);
  XlOutput xl;
  XenTroubleLog xen_trouble;
  std::optional<std::string> dom0_error;
  std::optional<XenShutdown> xen_shutdown;
  bool dom0_done = false;
  const ProcessResult exit = run_process(process, [&](std::string_view line) {
    if (line.starts_with("(XEN)")) {
      console.shown(line);
      xen_trouble.observe(line);
      // dom0 itself died: nothing more will come.
      if (auto s = parse_xen_shutdown(line); s && *s != XenShutdown::poweroff) {
        xen_shutdown = s;
        return LineAction::stop;
      }
      return LineAction::keep_going;
    }
    if (line.starts_with(xl_console_tag) || line.starts_with(xl_driver_tag)) {
      xl.observe(line, console, result.xen_trouble);
      return LineAction::keep_going;
    }
    if (line.starts_with(dom0_tag)) {
      console.shown(line);
      if (line.substr(dom0_tag.size()).starts_with("error")) {
        dom0_error = std::string(line.substr(dom0_tag.size()));
        return LineAction::stop;
      }
      // dom0 powers off next; its report is all we wait for.
      if (line.substr(dom0_tag.size()).starts_with("pvk-xl exit")) {
        dom0_done = true;
        return LineAction::stop;
      }
      return LineAction::keep_going;
    }
    console.hidden(line);
    return LineAction::keep_going;
  });

  for (const auto& line : xen_trouble.lines()) result.xen_trouble.push_back(line);
  if (xl.result) {
    result.platform_exit = xl_exit(xl.result, exit);
  } else if (dom0_error) {
    result.platform_exit = {ExitVerdict::none, fmt::format("the nested dom0 failed: {}", *dom0_error)};
    result.xen_trouble.push_back(*dom0_error);
  } else if (xen_shutdown) {
    result.platform_exit = {ExitVerdict::none, "the nested dom0 crashed or rebooted before the xl driver reported"};
  } else {
    result.platform_exit = {ExitVerdict::none,
                            exit.timed_out ? "the xl driver in the nested dom0 never reported"
                                           : "QEMU exited before the xl driver in the nested dom0 reported"};
  }
  judge(result, exit, timeout, dom0_done || dom0_error || xen_shutdown, driver_gave_up(xl, domain), true);
  return result;
}

}  // namespace

RunResult run_kernel(const RunOptions& options, const ConsoleEcho& echo) {
  if (is_linux(options.platform)) {
    if (options.via == Via::libvirt) throw std::runtime_error("--via libvirt does not boot Linux");
    return run_linux(options, echo, options.timeout.value_or(default_timeout(options.platform)));
  }
  if (!fs::is_regular_file(options.kernel))
    throw std::runtime_error(fmt::format("kernel image {} not found (build target pvk_kernel)",
                                         options.kernel.string()));
  const std::chrono::seconds timeout = options.timeout.value_or(default_timeout(options.platform));
  // The root filesystem reaches the kernel as a module of QEMU's boot; the
  // other ways of making a machine do not pass one yet.
  if (!options.initrd.empty()) {
    if (options.via == Via::libvirt ||
        (options.platform != Platform::native && options.platform != Platform::xen && options.platform != Platform::xl))
      throw std::runtime_error(fmt::format("--rootfs/--initrd are for the native, xen and xl platforms with --via qemu (got {})",
                                           platform_name(options.platform)));
    if (!fs::is_regular_file(options.initrd))
      throw std::runtime_error(fmt::format("initrd {} not found", options.initrd.string()));
  }
  if (options.via == Via::libvirt) {
    if (options.platform == Platform::native) return run_libvirt_native(options, echo, timeout);
    if (options.platform != Platform::xen_domu)
      throw std::runtime_error(fmt::format("--via libvirt runs the native and xen-domu platforms (got {}); on a Xen "
                                           "host use tools/libvirt/pvk-xen.xml (docs/xen-host.md)",
                                           platform_name(options.platform)));
  }
  switch (options.platform) {
    case Platform::native:
    case Platform::xen: return run_qemu(options, echo, timeout);
    case Platform::xl: return run_xl(options, echo, timeout);
    case Platform::xen_domu: return run_xen_domu(options, echo, timeout);
    case Platform::linux_native:
    case Platform::linux_xen: break;  // above
  }
  throw std::runtime_error("unknown platform");
}

}  // namespace pvk
