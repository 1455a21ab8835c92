#include "pvk/run.hpp"

#include "pvk/native.hpp"
#include "pvk/process.hpp"
#include "pvk/record.hpp"
#include "pvk/verdict.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace pvk {

RunResult run_kernel(const RunOptions& options, const ConsoleEcho& echo) {
  if (!std::filesystem::is_regular_file(options.kernel))
    throw std::runtime_error(fmt::format("kernel image {} not found (build target pvk_kernel)",
                                         options.kernel.string()));

  QemuConfig qemu{options.qemu, options.kernel, options.params, options.gdb, {}};
  if (options.platform == Platform::xen) qemu.xen_image = xen_image(options.xen_gz, options.xen_cache_dir);

  const std::chrono::seconds timeout = options.timeout.value_or(default_timeout(options.platform));
  ProcessOptions process;
  process.argv = qemu_argv(options.platform, qemu);
  process.timeout = timeout;
  process.cancel = options.cancel;

  RunResult result;
  std::optional<XenShutdown> xen_shutdown;
  XenTroubleLog xen_trouble;
  auto on_line = [&](std::string_view line) {
    if (echo) echo(line);
    result.lines.emplace_back(line);
    ConsoleLine parsed = parse_console_line(line);
    if (parsed.kind == ConsoleLine::Kind::record) result.records.push_back(std::move(parsed.record));
    if (parsed.kind == ConsoleLine::Kind::malformed) result.protocol_errors.push_back(std::move(parsed.error));

    if (options.platform == Platform::xen) {
      xen_trouble.observe(line);
      // Xen only halts the CPU when dom0 powers off, and waits 5 s before
      // rebooting after a crash: once it has said which, the run is over.
      if (!xen_shutdown && (xen_shutdown = parse_xen_shutdown(line))) return LineAction::stop;
    }
    return LineAction::keep_going;
  };
  const ProcessResult exit = run_process(process, on_line);

  result.exit_code = exit.exit_code;
  result.term_signal = exit.term_signal;
  result.timed_out = exit.timed_out;
  result.elapsed = exit.elapsed;
  result.platform_exit =
      options.platform == Platform::xen ? xen_exit(exit, xen_shutdown) : native_exit(exit);
  result.done = find_done_record(result.records);
  result.xen_trouble = xen_trouble.lines();

  const Verdict verdict = decide({result.records, result.protocol_errors, result.timed_out, timeout,
                                  result.platform_exit});
  result.pass = verdict.pass;
  result.reason = verdict.reason;
  // Only `cancel` stops a run without a Xen shutdown; say so rather than
  // blame the kernel for the QEMU exit that followed.
  if (exit.stopped && !xen_shutdown && !verdict.pass) result.reason = "run cancelled before the kernel finished";
  return result;
}

}  // namespace pvk
