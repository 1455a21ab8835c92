// Boots the kernel once on a platform, streams its console and judges it.
#pragma once

#include "pvk/platform.hpp"
#include "pvk/xen.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pvk {

// What every boot of a run shares whatever the platform: the host's tools,
// paths and caches, and how to stop it. The bench runners keep one and hand
// it to each boot's RunOptions as it is.
struct RunMachine {
  std::string qemu = "qemu-system-x86_64";
  std::filesystem::path xen_gz{default_xen_gz};
  std::filesystem::path xen_cache_dir;  // where the decompressed Xen is kept
  const std::atomic<bool>* cancel = nullptr;  // see ProcessOptions::cancel
  // The argument of -icount (empty: no -icount).
  std::string icount;
  // CPUs: QEMU's -smp N, Xen's dom0_max_vcpus=N, a domU's vcpus=N.
  unsigned smp = 1;
  // The source tree's tools/: the xl driver (xl, xen-domu), the dom0 image
  // builder (xen-domu), the libvirt templates and private libvirtd (libvirt),
  // linux/mklinux.sh (linux-native, linux-xen).
  std::filesystem::path tools_dir;
  std::filesystem::path dom0_cache_dir;  // xen-domu: where the dom0 image is kept
  // linux-native, linux-xen (linux.hpp): where tools/linux/mklinux.sh keeps
  // Debian's kernel, and where the static bench and kbworker programs are
  // (<build>/user).
  std::filesystem::path linux_cache_dir;
  std::filesystem::path user_dir;
  // Progress notes that are not console output (e.g. building the dom0 image).
  std::function<void(std::string_view)> note;
  // The root filesystem: a newc cpio archive the kernel unpacks at boot
  // (docs/rootfs.md); empty: none. Natively a PVH module, under Xen dom0's
  // ramdisk (the second multiboot module).
  std::filesystem::path initrd;
};

// One boot: the shared part plus what this platform and boot need.
struct RunOptions : RunMachine {
  Platform platform = Platform::native;
  std::filesystem::path kernel;  // pvk.elf
  std::string params;            // kernel command line
  // nullopt: the platform default; zero: no limit (what --gdb wants).
  std::optional<std::chrono::seconds> timeout;
  bool gdb = false;
  Via via = Via::direct;
  // libvirt: the connection URI; empty starts a private libvirtd for the run.
  std::string libvirt_uri;
  // native and xen: QEMU's -m (empty: 512M native, 1024 xen) and Xen's
  // dom0_mem (empty: 256M).
  std::string memory;
  std::string dom0_memory;
};

struct RunResult {
  std::vector<nlohmann::json> records;  // every record, in order
  std::optional<nlohmann::json> done;   // the last done record
  std::vector<std::string> protocol_errors;
  int exit_code = -1;  // QEMU's exit status, -1 if it was killed
  int term_signal = 0;
  bool timed_out = false;
  std::vector<std::string> xen_trouble;  // Xen lines that indicate trouble
  std::vector<std::string> lines;        // console output, in order (up to kMaxKeptBytes)
  uint64_t lines_dropped = 0;            // lines past that cap: counted, echoed, not kept
  // Output that is not shown unless the run fails: dom0's console under
  // xen-domu, libvirtd's and QEMU's logs under libvirt.
  std::vector<std::string> hidden_lines;
  PlatformExit platform_exit;
  std::chrono::milliseconds elapsed{0};
  bool pass = false;
  std::string reason;  // one line, for "pvk: FAIL: <reason>"

  // What a run keeps of its console is bounded, whatever the guest prints
  // (a program may write gigabytes): lines up to this many bytes, then only
  // a count; user programs' records up to kMaxUserRecords. The kernel's own
  // records are always kept (the verdict needs them).
  static constexpr uint64_t kMaxKeptBytes = 16u << 20;
  static constexpr uint64_t kMaxUserRecords = 200000;
  // Keeps one console line (within the caps) and parses it as a record.
  void add_console_line(std::string_view line);

 private:
  uint64_t kept_bytes_ = 0;
  uint64_t user_records_ = 0;
};

// Called with every console line as it arrives (e.g. to echo it).
using ConsoleEcho = std::function<void(std::string_view line)>;

// Throws std::runtime_error when the run cannot start (missing kernel or
// hypervisor, QEMU not installed); a run that starts always yields a result.
RunResult run_kernel(const RunOptions& options, const ConsoleEcho& echo = {});

}  // namespace pvk
