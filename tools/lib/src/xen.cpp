#include "pvk/xen.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

namespace pvk {
namespace {

namespace fs = std::filesystem;

bool contains_nocase(std::string_view haystack, std::string_view needle) {
  auto lower_eq = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  };
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), lower_eq) !=
         haystack.end();
}

// xen_command_line, with dom0's fixed size replaced when one is given, and
// dom0's vCPU count (one per CPU, pinned) when the machine has several CPUs
// (Xen's default gives dom0 one vCPU per physical CPU; saying it keeps the
// two in step on purpose).
std::string hypervisor_command_line(const std::string& dom0_memory, unsigned smp) {
  std::string line(xen_command_line);
  if (!dom0_memory.empty()) {
    constexpr std::string_view fixed = "dom0_mem=256M,max:256M";
    const auto at = line.find(fixed);
    if (at == std::string::npos) throw std::logic_error("xen_command_line has no dom0_mem=256M,max:256M");
    line.replace(at, fixed.size(), fmt::format("dom0_mem={0},max:{0}", dom0_memory));
  }
  // Pinned (dom0 vCPU i on CPU i): Xen's scheduler then never moves a vCPU,
  // so where each thread runs does not hang on races between the two
  // CPUs' clocks, and two runs interleave alike more often.
  if (smp > 1) line += fmt::format(" dom0_max_vcpus={} dom0_vcpus_pin", smp);
  return line;
}

}  // namespace

std::vector<std::string> xen_argv(const QemuConfig& config) {
  const std::string kernel = config.kernel.string();
  // The module string is "<file> <dom0 command line>": QEMU loads the file
  // named by the first word, so the path itself cannot contain blanks.
  if (kernel.find_first_of(" \t") != std::string::npos)
    throw std::invalid_argument(fmt::format("kernel path must not contain blanks under Xen: {}", kernel));
  std::string module = escape_commas(kernel);
  if (!config.params.empty()) module += " " + escape_commas(config.params);
  // A second module is dom0's ramdisk: Xen hands it to the kernel in
  // start_info (mod_start, mod_len).
  if (!config.initrd.empty()) {
    const std::string initrd = config.initrd.string();
    if (initrd.find_first_of(" \t") != std::string::npos)
      throw std::invalid_argument(fmt::format("initrd path must not contain blanks under Xen: {}", initrd));
    module += "," + escape_commas(initrd);
  }

  std::vector<std::string> argv{
      config.qemu,
      "-accel", qemu_accel(config),
      "-cpu", std::string(xen_qemu_cpu),
      "-m", config.memory.empty() ? "1024" : config.memory,
      "-smp", std::to_string(config.smp),
      "-display", "none",
      "-monitor", "none",
      "-serial", "stdio",
      "-no-reboot",
      "-kernel", config.xen_image.string(),
      "-append", hypervisor_command_line(config.dom0_memory, config.smp),
      "-initrd", module,
  };
  append_clock_args(argv, config);
  if (config.gdb) argv.insert(argv.end(), {"-s", "-S"});
  return argv;
}

std::optional<XenShutdown> parse_xen_shutdown(std::string_view line) {
  // Xen 4.17 common/shutdown.c: "Hardware Dom%u halted: halting machine",
  // "Hardware Dom%u crashed: ...", "Hardware Dom%u shutdown: [watchdog]
  // rebooting machine", "Hardware domain %d did unsupported soft reset, rebooting."
  if (!line.starts_with("(XEN)")) return std::nullopt;
  const auto at = line.find("Hardware Dom");
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = line.substr(at);
  if (rest.find(" halted") != std::string_view::npos) return XenShutdown::poweroff;
  if (rest.find(" crashed") != std::string_view::npos) return XenShutdown::crash;
  if (rest.find("reboot") != std::string_view::npos) return XenShutdown::reboot;
  return std::nullopt;
}

bool is_xen_trouble(std::string_view line) {
  if (!line.starts_with("(XEN)")) return false;
  static constexpr std::array<std::string_view, 16> patterns{
      "domain_crash", "Domain 0 crashed", "Hardware Dom0 crashed", "crashed on cpu",
      "Bad L1 flags", "Bad L2 flags",     "Bad L3 flags",          "Bad L4 flags",
      "Bad type",     "Error while",      "ERROR:",                "Fatal",
      "Panic",        "Assertion",        "BUG at",                "WARN at",
  };
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](std::string_view p) { return contains_nocase(line, p); });
}

void XenTroubleLog::observe(std::string_view line) {
  if (!line.starts_with("(XEN)")) return;
  if (in_panic_) {
    const auto text = line.find_first_not_of(' ', 5);
    if (text != std::string_view::npos && line.substr(text).starts_with("****")) {
      in_panic_ = false;
    } else if (text != std::string_view::npos) {
      lines_.emplace_back(line);
    }
    return;
  }
  if (is_xen_trouble(line)) lines_.emplace_back(line);
  if (line.find("Panic on CPU") != std::string_view::npos) in_panic_ = true;
}

PlatformExit xen_exit(const ProcessResult& process, std::optional<XenShutdown> shutdown) {
  if (shutdown) {
    switch (*shutdown) {
      case XenShutdown::poweroff:
        return {ExitVerdict::pass, "Xen halted the machine after dom0 powered off"};
      case XenShutdown::crash:
        return {ExitVerdict::fail, "dom0 crashed (SCHEDOP_shutdown crash, or Xen killed it)"};
      case XenShutdown::reboot:
        return {ExitVerdict::none, "dom0 shut down with reboot instead of poweroff/crash"};
    }
  }
  if (process.term_signal != 0)
    return {ExitVerdict::none,
            fmt::format("QEMU was killed by signal {} before dom0 shut down", process.term_signal)};
  if (process.exit_code == 0)
    return {ExitVerdict::none, "QEMU exited without a dom0 shutdown (Xen panicked or rebooted?)"};
  return {ExitVerdict::none,
          fmt::format("QEMU exited with status {} before dom0 shut down", process.exit_code)};
}

fs::path xen_image(const fs::path& gz, const fs::path& cache_dir) {
  if (!fs::is_regular_file(gz))
    throw std::runtime_error(fmt::format(
        "Xen image {} not found (Debian package xen-hypervisor-4.17-amd64)", gz.string()));
  const fs::path image = cache_dir / "xen";
  std::error_code ec;
  if (fs::is_regular_file(image, ec) && fs::file_size(image, ec) > 0 &&
      fs::last_write_time(image, ec) >= fs::last_write_time(gz))
    return image;

  fs::create_directories(cache_dir);
  // Decompress to a private name and rename: concurrent boots (ctest -j)
  // never see a half-written image.
  // The name is unique per process and per call: threads of one process
  // (pvk bench --jobs) decompress side by side too.
  static std::atomic<unsigned> calls{0};
  const fs::path partial = cache_dir / fmt::format("xen.partial.{}.{}", ::getpid(), calls++);
  const int status = run_to_file({"gzip", "-dc", "--", gz.string()}, partial);
  if (status != 0 || fs::file_size(partial, ec) == 0) {
    fs::remove(partial, ec);
    throw std::runtime_error(fmt::format("cannot decompress {} (gzip status {})", gz.string(), status));
  }
  fs::rename(partial, image);
  return image;
}

std::string escape_commas(std::string_view text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == ',') out += ',';
  }
  return out;
}

}  // namespace pvk
