// Xen platform: pvk runs as dom0. Xen's own console lines start with "(XEN)";
// dom0's console output reaches the serial line unprefixed.
#pragma once

#include "pvk/platform.hpp"
#include "pvk/process.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pvk {

inline constexpr std::string_view default_xen_gz = "/boot/xen-4.17-amd64.gz";

// Xen's hypervisor command line: serial console on COM1 (QEMU's stdio), a
// fixed dom0 size, reboot (not hang) after a crash or panic so -no-reboot
// ends QEMU, and every log level so guest-caused errors are visible.
// bootscrub=off: Xen would otherwise clear all free RAM in the background
// on idle CPUs after boot (about 130 ms of a 1 GiB machine's virtual time
// before dom0 runs). In virtual time every vCPU's instructions advance the
// one clock, so a scrubbing idle CPU priced its work into the guest's
// figures, and where the scrub stood when dom0 started split two-CPU boots
// into two different runs.
inline constexpr std::string_view xen_command_line =
    "console=com1 com1=115200,8n1 dom0_mem=256M,max:256M noreboot=false "
    "loglvl=all guest_loglvl=all bootscrub=off";

// How dom0 (the "hardware domain") ended, as Xen announces it.
enum class XenShutdown { poweroff, crash, reboot };

// Recognises Xen's "Hardware Dom0 halted/crashed/shutdown" lines. Xen only
// halts the CPU after a dom0 poweroff (QEMU keeps running), so the runner
// stops QEMU itself when it sees one of these.
std::optional<XenShutdown> parse_xen_shutdown(std::string_view line);

// Xen lines worth quoting in a failure summary (crashes, panics, failed
// page-table validation, assertions).
bool is_xen_trouble(std::string_view line);

// Gathers the trouble lines of one run, plus the message Xen prints between
// "Panic on CPU n:" and its closing row of asterisks (the actual reason, e.g.
// "Could not construct domain 0", matches no pattern by itself).
class XenTroubleLog {
 public:
  void observe(std::string_view line);
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  bool in_panic_ = false;
  std::vector<std::string> lines_;
};

// Judges the exit from the dom0 shutdown Xen announced (if any) and QEMU's
// own exit.
PlatformExit xen_exit(const ProcessResult& process, std::optional<XenShutdown> shutdown);

// QEMU's -kernel takes an uncompressed multiboot image; Debian ships Xen
// gzipped. Decompresses `gz` into `cache_dir`/xen unless an up-to-date copy
// is already there, and returns the image path. Safe to call concurrently.
std::filesystem::path xen_image(const std::filesystem::path& gz,
                                const std::filesystem::path& cache_dir);

// QEMU splits -initrd at commas into multiboot modules; ",," is a literal
// comma. Every runner that builds an -initrd module list uses this one.
std::string escape_commas(std::string_view text);

}  // namespace pvk
