// pvk-cli: the host command behind tools/pvk.
//   run   boot the kernel once (native QEMU, Xen-in-QEMU as dom0, a domU made
//         by xl on this Xen host or in a nested one, or through libvirt) and
//         judge the run
//   test  run the CTest suite (host tests and boot tests, native and Xen),
//         in parallel unless the ctest arguments say otherwise
//   fuzz  the long form of the fuzzers (fuzz.hpp)
//   backends  the kernel's MMU backends, from their one list (backends.hpp)
//   calibrate  time each event of the cost model alone and write a cost
//         profile (pvk/bench/calibrate_cli.hpp)
// Exit status: 0 pass, 1 fail, 2 could not run at all.
#include "backends.hpp"
#include "fuzz.hpp"
#include "pvk/bench/calibrate_cli.hpp"
#include "pvk/bench/cli.hpp"
#include "pvk/cpio.hpp"
#include "pvk/platform.hpp"
#include "pvk/run.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

constexpr int exit_pass = 0;
constexpr int exit_fail = 1;
constexpr int exit_error = 2;

// Set by SIGINT/SIGTERM: QEMU runs in its own process group, so Ctrl-C
// reaches only us and the runner ends QEMU on our behalf.
std::atomic<bool> cancelled{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void request_cancel(int) { cancelled = true; }

void install_cancel_handlers() {
  struct sigaction sa {};
  sa.sa_handler = request_cancel;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

struct Paths {
  fs::path build_dir = PVK_BUILD_DIR;
  fs::path source_dir = PVK_SOURCE_DIR;
};

struct RunArgs {
  std::string platform = "native";
  std::string params;
  int timeout_s = -1;  // -1: platform default
  bool gdb = false;
  fs::path kernel;  // empty: <build>/guest/pvk.elf
  fs::path xen_gz{pvk::default_xen_gz};
  bool quiet = false;
  std::string via = "qemu";
  std::string libvirt_uri;
  unsigned smp = 1;
  std::string icount;  // empty: wall time; else QEMU's -icount argument
  fs::path rootfs;     // a directory to pack as the root filesystem
  fs::path initrd;     // or a ready newc cpio archive
};

int do_run(const Paths& paths, const RunArgs& args) {
  pvk::RunOptions options;
  options.platform = *pvk::parse_platform(args.platform);  // CLI11 checked the name
  options.kernel = args.kernel.empty() ? paths.build_dir / "guest" / "pvk.elf" : args.kernel;
  options.params = args.params;
  if (args.timeout_s >= 0)
    options.timeout = std::chrono::seconds{args.timeout_s};
  else if (args.gdb)
    options.timeout = std::chrono::seconds{0};  // a debugging session has no deadline
  options.gdb = args.gdb;
  options.xen_gz = args.xen_gz;
  options.xen_cache_dir = paths.build_dir / "cache" / "xen-4.17";
  options.dom0_cache_dir = paths.build_dir / "cache" / "xen-domu";
  options.tools_dir = paths.source_dir / "tools";
  options.linux_cache_dir = paths.build_dir / "cache" / "linux";
  options.user_dir = paths.build_dir / "user";
  options.via = args.via == "libvirt" ? pvk::Via::libvirt : pvk::Via::direct;
  options.libvirt_uri = args.libvirt_uri;
  options.smp = args.smp;
  options.icount = args.icount;
  options.initrd = pvk::rootfs_archive(args.rootfs, args.initrd, paths.build_dir);
  if (!args.icount.empty() && options.platform != pvk::Platform::native && options.platform != pvk::Platform::xen)
    throw std::runtime_error("--icount is for the native and xen platforms (QEMU started by pvk)");
  if (args.smp > 1 && options.via == pvk::Via::libvirt)
    throw std::runtime_error("--smp is not wired into the libvirt templates yet (use --via qemu)");
  options.cancel = &cancelled;
  options.note = [](std::string_view line) { fmt::print(stderr, "pvk: {}\n", line); };
  if (options.via == pvk::Via::libvirt && args.gdb)
    throw std::runtime_error("--gdb is for --via qemu (add a gdbstub to the domain XML instead)");

  if (args.gdb) {
    const char* what = options.platform == pvk::Platform::xen
                           ? " (the stub debugs the whole machine: Xen first, then pvk)"
                           : "";
    fmt::print(stderr, "pvk: QEMU waits for gdb on :1234{}; attach with:\n  gdb {} -ex \"target remote :1234\"\n",
               what, options.kernel.string());
  }

  install_cancel_handlers();
  pvk::ConsoleEcho echo;
  if (!args.quiet)
    echo = [](std::string_view line) {
      fmt::print("{}\n", line);
      std::fflush(stdout);  // stream the console live, even into a pipe
    };

  const pvk::RunResult result = pvk::run_kernel(options, echo);
  if (result.pass) {
    if (!args.quiet)
      fmt::print(stderr, "pvk: PASS ({}, {:.1f} s)\n", args.platform, result.elapsed.count() / 1000.0);
    return exit_pass;
  }
  // What was kept back (the nested dom0's console, libvirt's logs) may
  // explain the failure.
  if (!result.hidden_lines.empty()) {
    fmt::print(stderr, "pvk: --- {} ---\n",
               options.platform == pvk::Platform::native ? "libvirt and QEMU logs" : "dom0 console (nested Xen host)");
    for (const auto& line : result.hidden_lines) fmt::print(stderr, "{}\n", line);
    fmt::print(stderr, "pvk: ---\n");
  }
  fmt::print(stderr, "pvk: FAIL: {}\n", result.reason);
  for (const auto& line : result.xen_trouble) fmt::print(stderr, "pvk:   {}\n", line);
  return exit_fail;
}

// True if the ctest arguments (or CTEST_PARALLEL_LEVEL) already say how
// many tests to run at once.
bool parallelism_given(const std::vector<std::string>& extra) {
  if (const char* env = std::getenv("CTEST_PARALLEL_LEVEL"); env && *env) return true;
  return std::any_of(extra.begin(), extra.end(), [](const std::string& arg) {
    return arg.starts_with("-j") || arg.starts_with("--parallel");
  });
}

// Replaces this process with ctest so its status, output and terminal
// handling are exactly ctest's own. Boot tests spend their time in
// single-threaded QEMU, so unless told otherwise ctest runs one test per CPU,
// and at least two.
int do_test(const Paths& paths, const std::vector<std::string>& extra) {
  std::vector<std::string> argv{PVK_CTEST_COMMAND, "--test-dir", paths.build_dir.string(),
                                "--output-on-failure"};
  if (!parallelism_given(extra)) {
    const unsigned cpus = std::thread::hardware_concurrency();
    argv.insert(argv.end(), {"--parallel", std::to_string(std::max(2u, cpus))});
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::vector<char*> cargv;
  for (auto& arg : argv) cargv.push_back(arg.data());
  cargv.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(cargv[0], cargv.data());
  fmt::print(stderr, "pvk: cannot run {}: {}\n", argv[0], std::strerror(errno));
  return exit_error;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pvk: build, boot and test the pvk kernel", "pvk"};
  app.require_subcommand(1);

  Paths paths;
  app.add_option("--build-dir", paths.build_dir, "CMake build directory")
      ->envname("PVK_BUILD_DIR")
      ->capture_default_str();
  app.add_option("--source-dir", paths.source_dir, "source tree (set by tools/pvk)")
      ->envname("PVK_SOURCE_DIR")
      ->capture_default_str();

  RunArgs run_args;
  CLI::App* run = app.add_subcommand("run", "boot the kernel once and report pass/fail");
  run->add_option("--platform", run_args.platform, "where to boot")
      ->check(CLI::IsMember({"native", "xen", "xl", "xen-domu", "linux-native", "linux-xen"}))
      ->capture_default_str()
      ->description(
          "where to boot: native (QEMU), xen (Xen in QEMU, pvk as dom0), xl (this machine is a Xen host's "
          "dom0: pvk as a domU made by xl), xen-domu (a nested Xen host: Xen and a Linux dom0 in QEMU, "
          "which runs the xl platform), linux-native and linux-xen (Debian's Linux natively and as Xen's dom0, "
          "running the static bench driver: --append \"bench=ITEM,...\")");
  run->add_option("--via", run_args.via, "how the machine is made: qemu (started by pvk; xl for the xl platforms) or libvirt (native: "
                  "libvirt's QEMU driver; xen-domu: libvirtd's libxl driver in the nested dom0)")
      ->check(CLI::IsMember({"qemu", "libvirt"}))
      ->capture_default_str();
  run->add_option("--libvirt-uri", run_args.libvirt_uri,
                  "libvirt connection for --via libvirt (default: start a private libvirtd for the run)");
  run->add_option("--append", run_args.params, "kernel command line, e.g. \"mmu=native selftest=mm\"");
  run->add_option("--timeout", run_args.timeout_s,
                  "seconds before the run counts as hung; 0 = none (default 60 native, 300 xen and xl, 420 xen-domu)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--smp", run_args.smp,
                  "CPUs: QEMU -smp N (MTTCG unless -icount); xen: dom0_max_vcpus=N; xl and xen-domu: the domU's "
                  "vcpus=N (xen-domu: also the nested machine's -smp)")
      ->check(CLI::Range(1u, 16u))  // pvk starts at most smp::kMaxCpus (arch/smp/percpu.h)
      ->capture_default_str();
  run->add_option("--icount", run_args.icount,
                  "virtual time: QEMU -icount SPEC (e.g. shift=0,sleep=off, what `pvk bench` uses): the guest's clock "
                  "counts instructions, and with --smp the vCPUs run round-robin on one host thread, so a rerun "
                  "repeats the run exactly")
      ->expected(0, 1)
      ->default_str("shift=0,sleep=off");
  run->add_flag("--gdb", run_args.gdb, "start paused with a gdb stub on :1234");
  run->add_option("--rootfs", run_args.rootfs,
                  "pack this host directory as a newc cpio archive and boot with it as the root filesystem "
                  "(docs/rootfs.md; native, xen and xl)");
  run->add_option("--initrd", run_args.initrd, "boot with this newc cpio archive as the root filesystem (native, xen and xl)")
      ->excludes("--rootfs");
  run->add_option("--kernel", run_args.kernel, "kernel image (default <build>/guest/pvk.elf)");
  run->add_option("--xen", run_args.xen_gz, "gzipped Xen image")->capture_default_str();
  run->add_flag("-q,--quiet", run_args.quiet, "do not echo the console");

  std::vector<std::string> ctest_args;
  CLI::App* test = app.add_subcommand(
      "test", "run the test suite with ctest (host, native and Xen boot tests; one test per CPU)");
  test->add_option("ctest-args", ctest_args, "extra ctest arguments, after --");

  pvk::bench::Commands bench_commands(app, paths.build_dir, paths.source_dir);  // bench, compare
  pvk::bench::CalibrateCommand calibrate(app, paths.build_dir, paths.source_dir);
  pvk::cli::FuzzCommand fuzz(app, paths.build_dir, paths.source_dir, &cancelled);
  const pvk::cli::BackendsCommand backends(app);

  CLI11_PARSE(app, argc, argv);

  try {
    if (*run) return do_run(paths, run_args);
    if (*test) return do_test(paths, ctest_args);
    if (bench_commands.selected()) return bench_commands.run();
    if (calibrate.selected()) return calibrate.run();
    if (backends.selected()) return backends.run();
    if (fuzz.selected()) {
      install_cancel_handlers();
      return fuzz.run();
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "pvk: error: {}\n", e.what());
    return exit_error;
  }
  return exit_error;
}
