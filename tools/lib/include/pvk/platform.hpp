// The machines pvk boots on and the QEMU command lines that build them.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pvk {

enum class Platform {
  native,  // plain QEMU machine, kernel entered through its PVH note
  xen,     // Xen 4.17 in QEMU, kernel as the initial PV domain (dom0)
  xl,      // this machine is a Xen host's dom0: the kernel as a domU, made by `xl`
  xen_domu,  // Xen 4.17 in QEMU with a Linux dom0 that runs the xl platform
  // Linux side by side (linux.hpp): Debian's kernel runs the bench suite
  linux_native,  // in the native platform's QEMU machine
  linux_xen,     // as the PV dom0 of the xen platform's Xen-in-QEMU
};

// How the machine is made: QEMU (or xl) started by us, or a domain defined
// through libvirt (native only, for now).
enum class Via { direct, libvirt };

std::string_view platform_name(Platform platform);
std::optional<Platform> parse_platform(std::string_view name);

// How long a boot may take before it counts as hung. Xen under TCG boots
// the hypervisor first, which is slow.
std::chrono::seconds default_timeout(Platform platform);

struct QemuConfig {
  std::string qemu = "qemu-system-x86_64";
  std::filesystem::path kernel;     // pvk.elf
  std::string params;               // kernel command line
  bool gdb = false;                 // -s -S: wait for gdb on :1234
  std::filesystem::path xen_image;  // xen only: the decompressed hypervisor
  std::string memory;               // -m; empty: 512M native, 1024 xen
  std::string dom0_memory;          // xen only: dom0_mem=; empty: 256M
  std::string icount;               // -icount argument; empty: none
  // CPUs of the machine: QEMU's -smp, and under Xen dom0's vCPUs
  // (dom0_max_vcpus) or a domU's (vcpus). 1 leaves every command line as
  // it was before SMP existed.
  unsigned smp = 1;
  // The root filesystem archive (newc cpio), empty for none: natively
  // QEMU's -initrd (a PVH module), under Xen the module after the kernel.
  std::filesystem::path initrd;
};

// QEMU's -accel for a machine of `smp` CPUs: MTTCG (one host thread per
// vCPU) when there are several, unless -icount asks for the single-threaded
// round robin that deterministic virtual time needs.
std::string qemu_accel(const QemuConfig& config);

// -icount and the clocks that must follow it (nothing in wall time).
void append_clock_args(std::vector<std::string>& argv, const QemuConfig& config);

std::vector<std::string> native_argv(const QemuConfig& config);
// QEMU's CPU model under Xen (the xen platform, Linux as dom0, the nested
// domU host): no SMAP (a PV dom0 crashes inside Xen's bounce-frame code
// with it under TCG) and no x2APIC (under -icount, QEMU 10 aborts with
// "Bad icount read" in Xen's IO-APIC timer check when the x2APIC is there).
inline constexpr std::string_view xen_qemu_cpu = "max,-smap,-x2apic";

std::vector<std::string> xen_argv(const QemuConfig& config);
std::vector<std::string> qemu_argv(Platform platform, const QemuConfig& config);

// What the way the machine stopped says about the kernel's verdict. The
// kernel reports pass/fail twice, in its done record and in how it shuts the
// machine down; a run passes only if both say pass.
enum class ExitVerdict { pass, fail, none };

struct PlatformExit {
  ExitVerdict verdict = ExitVerdict::none;
  std::string description;  // for the failure summary
};

}  // namespace pvk
