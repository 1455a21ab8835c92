#include "pvk/native.hpp"

#include <fmt/format.h>

namespace pvk {

std::vector<std::string> native_argv(const QemuConfig& config) {
  // TCG, not KVM: the same emulator the Xen platform has to use, so native
  // and Xen figures come from comparable machines. -no-reboot turns a triple
  // fault into a QEMU exit instead of a silent reboot loop.
  std::vector<std::string> argv{
      config.qemu,
      "-accel", qemu_accel(config),
      "-cpu", "max",
      "-m", config.memory.empty() ? "512M" : config.memory,
      "-smp", std::to_string(config.smp),
      "-display", "none",
      "-monitor", "none",
      "-serial", "stdio",
      "-no-reboot",
      "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
      "-kernel", config.kernel.string(),
      "-append", config.params,
  };
  if (!config.initrd.empty()) argv.insert(argv.end(), {"-initrd", config.initrd.string()});
  append_clock_args(argv, config);
  if (config.gdb) argv.insert(argv.end(), {"-s", "-S"});
  return argv;
}

PlatformExit native_exit(const ProcessResult& process) {
  if (process.term_signal != 0)
    return {ExitVerdict::none, fmt::format("QEMU was killed by signal {}", process.term_signal)};
  switch (process.exit_code) {
    case native_pass_exit:
      // QEMU also exits 1 when it fails to start; the done record tells them apart.
      return {ExitVerdict::pass, "QEMU exit status 1 (isa-debug-exit pass, or a QEMU error)"};
    case native_fail_exit:
      return {ExitVerdict::fail, "QEMU exit status 3 (isa-debug-exit fail)"};
    case 0:
      return {ExitVerdict::none,
              "QEMU exited with status 0 without isa-debug-exit (triple fault or reset?)"};
    default:
      if (process.exit_code % 2 == 1)
        return {ExitVerdict::none,
                fmt::format("QEMU exit status {} (isa-debug-exit wrote unexpected value {})",
                            process.exit_code, process.exit_code >> 1)};
      return {ExitVerdict::none, fmt::format("QEMU exited with status {}", process.exit_code)};
  }
}

}  // namespace pvk
