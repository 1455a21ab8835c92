// The xen-domu platform: a nested Xen host for everyone without one. Xen 4.17
// in QEMU TCG boots a Linux dom0 built from Debian packages (once, cached:
// tools/xen-domu/mkdom0.sh); its /init (tools/xen-domu/dom0-init.sh) starts
// the toolstack and runs the same xl driver as `--platform xl` on pvk.elf.
// On the serial line: Xen's lines "(XEN) ...", the driver's tagged lines (see
// xl.hpp), dom0's own "[pvk-dom0] ..." lines and the rest of dom0's output.
#pragma once

#include "pvk/platform.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pvk {

inline constexpr std::string_view dom0_tag = "[pvk-dom0] ";
// dom0 gets 512 MiB; the rest of the 2 GiB machine is free for the domU.
inline constexpr std::string_view xen_domu_command_line =
    "console=com1 com1=115200,8n1 dom0_mem=512M,max:512M noreboot=false loglvl=all guest_loglvl=all";
inline constexpr std::string_view dom0_kernel_args = "console=hvc0 earlyprintk=xen quiet";
// The builder's path relative to tools/.
inline constexpr std::string_view dom0_builder_path = "xen-domu/mkdom0.sh";

struct Dom0Image {
  std::filesystem::path kernel;     // Debian's vmlinuz
  std::filesystem::path initramfs;  // gzipped cpio: busybox, toolstack, modules, /init, the driver
};

// Builds the dom0 image into `cache_dir` unless an up-to-date one is there
// (the builder keys it on its inputs; concurrent calls wait for one build).
// `note` receives the builder's progress lines. Throws std::runtime_error
// with the builder's output if it fails.
// `libvirt`: the flavour with libvirtd (libxl driver) and virsh, for runs
// through libvirt; keep it in its own cache directory.
Dom0Image dom0_image(const std::filesystem::path& tools_dir, const std::filesystem::path& cache_dir,
                     const std::function<void(std::string_view)>& note = {}, bool libvirt = false);

// The bytes of a newc cpio archive holding /pvk/pvk.elf (the kernel's
// contents), /pvk/params, /pvk/timeout (seconds the driver gives the domU)
// and /pvk/via (xl or libvirt: how dom0 makes the domain); with more than
// one vCPU also /pvk/vcpus (the domU's vcpus=).
std::string run_archive(const std::string& kernel_image, const std::string& params,
                        std::chrono::seconds domain_timeout, std::string_view via = "xl", unsigned vcpus = 1);

// Writes dom0's initrd for one run to `out`: the cached initramfs, zero
// padding to a 512-byte boundary (Linux looks for the next archive at an
// aligned offset), then run_archive(...). Linux unpacks both in order.
void write_run_initrd(const Dom0Image& dom0, const std::filesystem::path& kernel, const std::string& params,
                      std::chrono::seconds domain_timeout, const std::filesystem::path& out,
                      std::string_view via = "xl", unsigned vcpus = 1);

// QEMU's CPU model for the nested host: the xen platform's (xen_qemu_cpu);
// with libvirt a named model, because libvirtd's libxl driver decodes the
// host CPU into one of its models at start-up and gives up ("Cannot find
// suitable CPU model for given data") on the feature set TCG's "max" shows.
inline constexpr std::string_view xen_domu_cpu = xen_qemu_cpu;
inline constexpr std::string_view xen_domu_libvirt_cpu = "Nehalem";

std::vector<std::string> xen_domu_argv(const QemuConfig& config, const Dom0Image& dom0,
                                       const std::filesystem::path& initrd, std::string_view cpu = xen_domu_cpu);

}  // namespace pvk
