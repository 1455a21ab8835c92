// Linux side by side (pvk/linux.hpp): Linux's command line from pvk's, the
// per-boot initramfs, the QEMU command lines, and run_kernel on the Linux
// platforms against the scripted stand-in for QEMU (with a stand-in kernel
// fetcher), so the records Linux does not print and the stop at bench_done
// are checked without booting anything.
#include "pvk/cpio.hpp"
#include "pvk/linux.hpp"
#include "pvk/run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

namespace pvk {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Argv = std::vector<std::string>;

std::string value_of(const Argv& argv, const std::string& flag) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  return it != argv.end() && it + 1 != argv.end() ? *(it + 1) : "";
}

// name -> (mode, data, rdev major:minor) of a newc archive.
struct Entry {
  unsigned mode = 0;
  std::string data;
  unsigned major = 0, minor = 0;
};
std::map<std::string, Entry> read_cpio(const std::string& a) {
  std::map<std::string, Entry> out;
  size_t at = 0;
  auto hex = [&](size_t field) { return static_cast<unsigned>(std::stoul(a.substr(at + 6 + 8 * field, 8), nullptr, 16)); };
  while (at + 110 <= a.size()) {
    EXPECT_EQ(a.substr(at, 6), "070701");
    const unsigned mode = hex(1), size = hex(6), major = hex(9), minor = hex(10), namesize = hex(11);
    const std::string name = a.substr(at + 110, namesize - 1);
    size_t data = at + 110 + namesize;
    data += (4 - data % 4) % 4;
    if (name == "TRAILER!!!") {
      EXPECT_EQ(a.size() % 512, 0u);
      return out;
    }
    out[name] = Entry{mode, a.substr(data, size), major, minor};
    at = data + size;
    at += (4 - at % 4) % 4;
  }
  ADD_FAILURE() << "no trailer";
  return out;
}

TEST(LinuxCommandLine, BenchItemsBecomeInitArguments) {
  EXPECT_EQ(linux_init_args("bench=getppid,fork_dirty:pages=1280+12800,,ctx:procs=2"),
            (std::vector<std::string>{"getppid", "fork_dirty:pages=1280+12800", "ctx:procs=2"}));
  EXPECT_TRUE(linux_init_args("mitigations=off").empty());
  EXPECT_EQ(linux_command_line(Platform::linux_native, "bench=getppid,mprotect:pages=4096"),
            "console=ttyS0,115200 panic=-1 quiet transparent_hugepage=never -- getppid mprotect:pages=4096");
  // Other words go to Linux; under Xen the console is dom0's hvc0.
  EXPECT_EQ(linux_command_line(Platform::linux_xen, "mitigations=off  bench=smoke"),
            "console=hvc0 earlyprintk=xen panic=-1 quiet transparent_hugepage=never mitigations=off -- smoke");
  // No bench=: the driver runs without arguments (its whole suite).
  EXPECT_EQ(linux_command_line(Platform::linux_native, ""),
            "console=ttyS0,115200 panic=-1 quiet transparent_hugepage=never");
  // Huge pages only when asked for.
  EXPECT_EQ(linux_command_line(Platform::linux_native, "transparent_hugepage=always bench=getpid"),
            "console=ttyS0,115200 panic=-1 quiet transparent_hugepage=always -- getpid");
}

TEST(LinuxInitramfs, BenchIsInitBesideKbworkerAndTheRealPrograms) {
  const fs::path dir = fs::temp_directory_path() / ("pvk_linux_initramfs_" + std::to_string(::getpid()));
  const fs::path src = dir / "src";
  fs::create_directories(src / "bench" / "rootfs" / "bin");
  std::ofstream(src / "bench" / "rootfs" / "bin" / "job.sh") << "echo job";
  std::ofstream(dir / "bench") << "the driver";
  EXPECT_THROW(bench_initramfs(dir, src), std::runtime_error);  // no kbworker
  std::ofstream(dir / "kbworker") << "the worker!";
  const auto entries = read_cpio(bench_initramfs(dir, src));
  fs::remove_all(dir);
  EXPECT_EQ(entries.at("init").data, "the driver");
  EXPECT_EQ(entries.at("init").mode, 0100755u);
  EXPECT_EQ(entries.at("kbworker").data, "the worker!");
  EXPECT_EQ(entries.at("dev").mode, 040755u);
  EXPECT_EQ(entries.at("dev/console").mode, 020600u);
  EXPECT_EQ(entries.at("dev/console").major, 5u);
  EXPECT_EQ(entries.at("dev/console").minor, 1u);
  EXPECT_EQ(entries.at("dev/null").major, 1u);
  EXPECT_EQ(entries.at("dev/null").minor, 3u);
  // The real programs at pvk's paths: busybox and its sh link, bash, the
  // worker again and the scripts.
  EXPECT_EQ(entries.at("bin/sh").mode, 0120777u);
  EXPECT_EQ(entries.at("bin/sh").data, "busybox");
  EXPECT_GT(entries.at("bin/busybox").data.size(), 100000u);
  EXPECT_GT(entries.at("bin/bash").data.size(), 100000u);
  EXPECT_EQ(entries.at("bin/kbworker").data, "the worker!");
  EXPECT_EQ(entries.at("bin/job.sh").data, "echo job");
}

TEST(LinuxArgv, NativeIsPvksMachineWithFourLevelPaging) {
  QemuConfig c;
  c.kernel = "/c/linux/vmlinuz";
  c.params = "console=ttyS0,115200 panic=-1 quiet -- getppid";
  const Argv argv = linux_native_argv(c, "/c/linux/bench.cpio");
  EXPECT_EQ(value_of(argv, "-cpu"), "max,-la57");
  EXPECT_EQ(value_of(argv, "-m"), "512M");
  EXPECT_EQ(value_of(argv, "-accel"), "tcg");
  EXPECT_EQ(value_of(argv, "-kernel"), "/c/linux/vmlinuz");
  EXPECT_EQ(value_of(argv, "-append"), c.params);
  EXPECT_EQ(value_of(argv, "-initrd"), "/c/linux/bench.cpio");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "-no-reboot"), argv.end());
}

TEST(LinuxArgv, XenDom0HasTheInitramfsAsSecondModule) {
  QemuConfig c;
  c.kernel = "/c/linux/vmlinuz";
  c.params = "console=hvc0 panic=-1 -- fork_dirty:pages=1280";
  c.xen_image = "/c/xen";
  c.dom0_memory = "2000M";
  const Argv argv = linux_xen_argv(c, "/c/linux/bench.cpio");
  EXPECT_EQ(value_of(argv, "-cpu"), "max,-smap,-x2apic");
  EXPECT_EQ(value_of(argv, "-kernel"), "/c/xen");
  EXPECT_NE(value_of(argv, "-append").find("dom0_mem=2000M,max:2000M"), std::string::npos);
  EXPECT_EQ(value_of(argv, "-initrd"),
            "/c/linux/vmlinuz console=hvc0 panic=-1 -- fork_dirty:pages=1280,/c/linux/bench.cpio");
  EXPECT_THROW(linux_xen_argv(c, "/c/with blank/bench.cpio"), std::invalid_argument);
}

TEST(LinuxBootRecord, SaysWhatRan) {
  EXPECT_EQ(linux_boot_record(Platform::linux_xen, "6.1.0-57-amd64", "console=hvc0 -- getpid"),
            "@pvk {\"event\":\"boot\",\"platform\":\"linux-xen\",\"role\":\"dom0\",\"mmu\":\"linux\","
            "\"kernel\":\"6.1.0-57-amd64\",\"cmdline\":\"console=hvc0 -- getpid\",\"synthesised\":true}");
}

// run_kernel on the Linux platforms with fake QEMU and a fake fetcher.
class LinuxRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pvk_linux_run_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tools/linux");
    fs::create_directories(dir_ / "user");
    std::ofstream(dir_ / "tools/linux/mklinux.sh")
        << "set -e\nmkdir -p \"$1\"\necho 'mklinux: fetched'\necho kernel >\"$1/vmlinuz\"\n"
           "echo 6.1.0-test-amd64 >\"$1/version\"\n";
    std::ofstream(dir_ / "user/bench") << "bench";
    std::ofstream(dir_ / "user/kbworker") << "kbworker";
    // The initramfs carries the tree's bench/rootfs scripts (the tree is
    // tools_dir's parent).
    fs::create_directories(dir_ / "bench/rootfs/bin");
    std::ofstream(dir_ / "bench/rootfs/bin/workload.sh") << "echo workload\n";
    std::ofstream(dir_ / "xen.raw") << "not really xen";
    ASSERT_EQ(std::system(("gzip -c " + (dir_ / "xen.raw").string() + " > " + (dir_ / "xen.gz").string()).c_str()), 0);
  }
  void TearDown() override {
    ::unsetenv("PVK_FAKE_CONSOLE");
    ::unsetenv("PVK_FAKE_EXIT");
    ::unsetenv("PVK_FAKE_HANG");
    fs::remove_all(dir_);
  }

  void script(const std::string& console, int exit_code, bool hang) {
    std::ofstream(dir_ / "console") << console;
    ::setenv("PVK_FAKE_CONSOLE", (dir_ / "console").c_str(), 1);
    ::setenv("PVK_FAKE_EXIT", std::to_string(exit_code).c_str(), 1);
    ::setenv("PVK_FAKE_HANG", hang ? "1" : "0", 1);
  }

  RunResult boot(Platform platform, std::chrono::seconds timeout = 20s) {
    RunOptions options;
    options.platform = platform;
    options.params = "bench=getppid";
    options.qemu = PVK_FAKE_QEMU;
    options.timeout = timeout;
    options.tools_dir = dir_ / "tools";
    options.linux_cache_dir = dir_ / "cache/linux";
    options.user_dir = dir_ / "user";
    options.xen_gz = dir_ / "xen.gz";
    options.xen_cache_dir = dir_ / "cache/xen";
    options.note = [&](std::string_view line) { notes_.emplace_back(line); };
    return run_kernel(options);
  }

  size_t count_files(const fs::path& d) {
    return static_cast<size_t>(std::distance(fs::directory_iterator(d), fs::directory_iterator()));
  }

  fs::path dir_;
  std::vector<std::string> notes_;
};

constexpr const char* kBenchOk =
    "[    1.0] some kernel line\n"
    "@pvk {\"event\":\"bench_start\",\"items\":1,\"counters\":false,\"tsc_khz\":0,\"free_frames\":0}\n"
    "bench: pid 1, no pvk counters (Linux?)\n"
    "@pvk {\"bench\":\"getppid\",\"iters\":10000,\"unit\":\"ns\",\"reps\":5,\"median\":8000000,\"min\":7000000,"
    "\"max\":9000000,\"ops\":10000,\"per_op\":800,\"pass\":true}\n"
    "@pvk {\"event\":\"bench_done\",\"benchmarks\":1,\"failed\":0}\n";

TEST_F(LinuxRun, NativeStopsAtBenchDoneAndPasses) {
  // Linux would panic when init exits; the runner does not wait for it.
  script(kBenchOk, 0, /*hang=*/true);
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = boot(Platform::linux_native);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_TRUE(r.pass) << r.reason;
  ASSERT_EQ(r.records.size(), 5u);
  EXPECT_EQ(r.records[0]["event"], "boot");
  EXPECT_EQ(r.records[0]["platform"], "linux-native");
  EXPECT_EQ(r.records[0]["mmu"], "linux");
  EXPECT_EQ(r.records[0]["kernel"], "6.1.0-test-amd64");
  EXPECT_EQ(r.records[0]["cmdline"], "console=ttyS0,115200 panic=-1 quiet transparent_hugepage=never -- getppid");
  EXPECT_EQ(r.records[1]["event"], "bench_start");
  EXPECT_EQ(r.records[4]["event"], "done");
  EXPECT_EQ(r.records[4]["status"], "pass");
  // The synthesised records are console lines too (the harness parses lines).
  EXPECT_TRUE(r.lines[1].starts_with("@pvk {\"event\":\"boot\""));
  EXPECT_TRUE(r.lines.back().starts_with("@pvk {\"event\":\"done\""));
  EXPECT_EQ(notes_, (std::vector<std::string>{"mklinux: fetched"}));
  // The per-boot initramfs is gone.
  EXPECT_EQ(count_files(dir_ / "cache/linux"), 2u);  // vmlinuz, version
}

TEST_F(LinuxRun, FailedBenchmarkFails) {
  script("@pvk {\"event\":\"bench_start\",\"items\":1}\n"
         "@pvk {\"bench\":\"nope\",\"pass\":false,\"error\":\"no benchmark or suite named 'nope'\"}\n"
         "@pvk {\"event\":\"bench_done\",\"benchmarks\":1,\"failed\":1}\n",
         0, /*hang=*/true);
  const RunResult r = boot(Platform::linux_native);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.reason, "kernel reported fail: 1 benchmark records failed");
}

TEST_F(LinuxRun, PanicBeforeBenchDoneFails) {
  script("@pvk {\"event\":\"bench_start\",\"items\":1}\n"
         "[    2.0] Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b\n",
         0, /*hang=*/false);
  const RunResult r = boot(Platform::linux_native);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.reason.find("before bench_done"), std::string::npos) << r.reason;
  ASSERT_FALSE(r.xen_trouble.empty());
  EXPECT_NE(r.xen_trouble[0].find("Kernel panic"), std::string::npos);
}

TEST_F(LinuxRun, HangTimesOut) {
  script("@pvk {\"event\":\"bench_start\",\"items\":1}\n", 0, /*hang=*/true);
  const RunResult r = boot(Platform::linux_native, 2s);
  EXPECT_FALSE(r.pass);
  EXPECT_TRUE(r.timed_out);
}

TEST_F(LinuxRun, XenDom0PassesAndDom0CrashFails) {
  script(std::string("(XEN) Xen version 4.17\n") + kBenchOk, 0, /*hang=*/true);
  RunResult r = boot(Platform::linux_xen);
  EXPECT_TRUE(r.pass) << r.reason;
  EXPECT_EQ(r.records[0]["platform"], "linux-xen");
  EXPECT_EQ(r.records[0]["role"], "dom0");

  script("@pvk {\"event\":\"bench_start\",\"items\":1}\n"
         "(XEN) Hardware Dom0 crashed: rebooting machine in 5 seconds.\n",
         0, /*hang=*/true);
  r = boot(Platform::linux_xen);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.reason.find("crashed"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace pvk
