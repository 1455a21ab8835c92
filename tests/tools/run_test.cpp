// run_kernel end to end against a scripted stand-in for QEMU: the console is
// parsed, the platform exit read and the verdict drawn, without a kernel.
#include "pvk/run.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace pvk {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class Run : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pvk_run_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "pvk.elf") << "not really a kernel";
    std::ofstream(dir_ / "xen.raw") << "not really xen";
    ASSERT_EQ(std::system(("gzip -c " + (dir_ / "xen.raw").string() + " > " + (dir_ / "xen.gz").string()).c_str()), 0);
  }
  void TearDown() override {
    ::unsetenv("PVK_FAKE_CONSOLE");
    ::unsetenv("PVK_FAKE_EXIT");
    ::unsetenv("PVK_FAKE_HANG");
    fs::remove_all(dir_);
  }

  // Scripts the fake QEMU: what it prints, then its exit status or a hang.
  void script(const std::string& console, int exit_code, bool hang = false) {
    std::ofstream(dir_ / "console") << console;
    ::setenv("PVK_FAKE_CONSOLE", (dir_ / "console").c_str(), 1);
    ::setenv("PVK_FAKE_EXIT", std::to_string(exit_code).c_str(), 1);
    ::setenv("PVK_FAKE_HANG", hang ? "1" : "0", 1);
  }

  RunResult boot(Platform platform, std::chrono::seconds timeout = 10s) {
    RunOptions options;
    options.platform = platform;
    options.kernel = dir_ / "pvk.elf";
    options.qemu = PVK_FAKE_QEMU;
    options.timeout = timeout;
    options.xen_gz = dir_ / "xen.gz";
    options.xen_cache_dir = dir_ / "cache";
    return run_kernel(options, [&](std::string_view line) { echoed_.emplace_back(line); });
  }

  fs::path dir_;
  std::vector<std::string> echoed_;
};

TEST_F(Run, NativePass) {
  script("booting\r\n@pvk {\"event\":\"selftest\",\"pass\":true}\r\n@pvk {\"event\":\"done\",\"status\":\"pass\"}\r\n", 1);
  const RunResult r = boot(Platform::native);
  EXPECT_TRUE(r.pass) << r.reason;
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_EQ(r.records.size(), 2u);
  ASSERT_TRUE(r.done);
  EXPECT_EQ((*r.done)["status"], "pass");
  EXPECT_EQ(r.lines.size(), 3u);
  EXPECT_EQ(echoed_, r.lines);
  EXPECT_EQ(r.lines[0], "booting");
}

TEST_F(Run, NativeDoneFail) {
  script("mmu=batched needs Xen\n@pvk {\"event\":\"done\",\"status\":\"fail\"}\n", 3);
  const RunResult r = boot(Platform::native);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.reason, "kernel reported fail");
}

TEST_F(Run, NativeTripleFault) {
  script("about to fault\n", 0);
  const RunResult r = boot(Platform::native);
  EXPECT_FALSE(r.pass);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.reason.find("no done record"), std::string::npos) << r.reason;
}

TEST_F(Run, NativeHangTimesOut) {
  script("waiting forever\n", 0, /*hang=*/true);
  const RunResult r = boot(Platform::native, 1s);
  EXPECT_FALSE(r.pass);
  EXPECT_TRUE(r.timed_out);
  EXPECT_NE(r.reason.find("timed out after 1 s"), std::string::npos) << r.reason;
}

TEST_F(Run, MalformedRecordIsReported) {
  script("@pvk {\"event\":\"selftest\"\n@pvk {\"event\":\"done\",\"status\":\"pass\"}\n", 1);
  const RunResult r = boot(Platform::native);
  EXPECT_FALSE(r.pass);
  ASSERT_EQ(r.protocol_errors.size(), 1u);
  EXPECT_NE(r.reason.find("protocol error"), std::string::npos) << r.reason;
}

TEST_F(Run, XenPoweroffEndsTheRunAndPasses) {
  // After dom0 powers off Xen halts the CPU and QEMU would run forever.
  script("(XEN) Freed 656kB init memory\n@pvk {\"event\":\"done\",\"status\":\"pass\"}\n"
         "(XEN) Hardware Dom0 halted: halting machine\n", 0, /*hang=*/true);
  const RunResult r = boot(Platform::xen, 30s);
  EXPECT_TRUE(r.pass) << r.reason;
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.elapsed, 10s);
  EXPECT_TRUE(r.xen_trouble.empty());
  EXPECT_TRUE(fs::exists(dir_ / "cache" / "xen"));
}

TEST_F(Run, XenCrashCollectsTrouble) {
  script("@pvk {\"event\":\"done\",\"status\":\"fail\"}\n"
         "(XEN) d0v0 Bad L1 flags 800000\n"
         "(XEN) Hardware Dom0 crashed: rebooting machine in 5 seconds.\n", 0, /*hang=*/true);
  const RunResult r = boot(Platform::xen, 30s);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.reason, "kernel reported fail");
  EXPECT_EQ(r.xen_trouble, (std::vector<std::string>{"(XEN) d0v0 Bad L1 flags 800000",
                                                     "(XEN) Hardware Dom0 crashed: rebooting machine in 5 seconds."}));
}

TEST_F(Run, XenPassButCrashIsAMismatch) {
  script("@pvk {\"event\":\"done\",\"status\":\"pass\"}\n(XEN) Hardware Dom0 crashed: rebooting machine in 5 seconds.\n",
         0, /*hang=*/true);
  const RunResult r = boot(Platform::xen, 30s);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.reason.find("kernel reported pass but dom0 crashed"), std::string::npos) << r.reason;
}

TEST_F(Run, XenPanicRebootsWithoutDone) {
  script("(XEN) ****************************************\n(XEN) Panic on CPU 0:\n"
         "(XEN) Could not construct domain 0\n(XEN) ****************************************\n"
         "(XEN) \n(XEN) Reboot in five seconds...\n", 0);
  const RunResult r = boot(Platform::xen, 30s);
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.reason.find("no done record"), std::string::npos) << r.reason;
  EXPECT_EQ(r.xen_trouble, (std::vector<std::string>{"(XEN) Panic on CPU 0:", "(XEN) Could not construct domain 0"}));
}

TEST_F(Run, CancelEndsQemuWithSigterm) {
  script("booting\n", 0, /*hang=*/true);
  std::atomic<bool> cancel{true};
  RunOptions options;
  options.kernel = dir_ / "pvk.elf";
  options.qemu = PVK_FAKE_QEMU;
  options.cancel = &cancel;
  const RunResult r = run_kernel(options);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.reason, "run cancelled before the kernel finished");
  // SIGTERM first, so QEMU can exit cleanly; SIGKILL only after the grace.
  EXPECT_EQ(r.term_signal, SIGTERM);
}

TEST_F(Run, MissingKernelIsAnError) {
  RunOptions options;
  options.kernel = dir_ / "absent.elf";
  EXPECT_THROW(run_kernel(options), std::runtime_error);
}

}  // namespace
}  // namespace pvk
