// Linux side by side: Debian's own kernel (linux-image-amd64) runs the same
// static bench/ programs as pvk, natively in QEMU (linux-native) and as the
// PV dom0 of the same Xen-in-QEMU (linux-xen).
//
// The kernel is fetched once (tools/linux/mklinux.sh, cached). Each boot gets
// a tiny initramfs: the static `bench` driver as /init, `kbworker` beside it
// (kernbench execs dirname(argv[0])/kbworker) and /dev/console. pvk's
// `bench=A,B:k=v` becomes Linux's command line "... -- A B:k=v": the kernel
// hands every word after "--" to init as an argument. Any other word of the
// run's parameters goes to Linux as it is.
//
// Linux prints no boot or done record, so the runner writes them: a boot
// record {"event":"boot","platform":"linux-native"|"linux-xen","mmu":"linux",
// "kernel":RELEASE,"cmdline":LINUX_CMDLINE,"synthesised":true} in front of bench_start, and after
// bench_done a done record, pass iff bench_done says "failed":0. The run
// stops QEMU as soon as bench_done is in (init exiting would panic Linux).
#pragma once

#include "pvk/platform.hpp"
#include "pvk/run.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pvk {

// The kernel fetcher, relative to tools/.
inline constexpr std::string_view linux_builder_path = "linux/mklinux.sh";

struct LinuxKernel {
  std::filesystem::path vmlinuz;
  std::string release;  // "6.1.0-57-amd64"
};

// Runs the fetcher (quick when the cache is current) and returns the kernel.
// `note` receives its progress lines. Throws std::runtime_error with its
// output if it fails.
LinuxKernel linux_kernel(const std::filesystem::path& tools_dir, const std::filesystem::path& cache_dir,
                         const std::function<void(std::string_view)>& note = {});

bool is_linux(Platform platform);

// Linux's command line for a run's parameters: the console of the platform
// (ttyS0 natively, Xen's hvc0 as dom0), panic=-1 (reboot at once, so QEMU's
// -no-reboot ends the machine if the runner has not), quiet,
// transparent_hugepage=never (4 KiB pages only, as pvk; unless `params`
// says otherwise), the other words of `params`, then "--" and the bench=
// items. Without bench= the driver runs with no arguments (its whole
// suite, "all").
std::string linux_command_line(Platform platform, std::string_view params);

// The bench= items of `params`, one init argument each (empty: none given).
std::vector<std::string> linux_init_args(std::string_view params);

// The initramfs of one boot (newc cpio): /init = user_dir/bench,
// /kbworker = user_dir/kbworker, /dev, /dev/console (5:1), /dev/null (1:3),
// /tmp, and the real-program benchmarks' files (pvk/bench_rootfs.hpp) at
// the paths pvk's root filesystem has them. Throws std::runtime_error when
// a program is missing.
std::string bench_initramfs(const std::filesystem::path& user_dir, const std::filesystem::path& source_dir);

// QEMU for Linux natively: the same machine as pvk's native platform (TCG,
// -cpu max, -m, one CPU) except that LA57 is off, so Linux walks 4-level
// page tables as pvk does (Debian's kernel uses 5 levels where the CPU has
// them); `config.kernel` is the vmlinuz, `config.params` Linux's command line.
std::vector<std::string> linux_native_argv(const QemuConfig& config, const std::filesystem::path& initrd);
// QEMU for Linux as Xen's dom0: pvk's xen platform machine (Xen 4.17, -cpu
// max,-smap, dom0_mem) with the initramfs as dom0's module.
std::vector<std::string> linux_xen_argv(const QemuConfig& config, const std::filesystem::path& initrd);

// The record the runner writes in front of bench_start (with Linux's
// command line).
std::string linux_boot_record(Platform platform, std::string_view release, std::string_view command_line);

// One boot of Linux with the bench suite (run_kernel's linux-native and
// linux-xen): options.tools_dir (the fetcher), linux_cache_dir, user_dir,
// params, memory/dom0_memory/icount, xen_gz/xen_cache_dir (linux-xen); the
// kernel image option is not used.
RunResult run_linux(const RunOptions& options, const ConsoleEcho& echo, std::chrono::seconds timeout);

}  // namespace pvk
