// The xl platforms without Xen: the driver's line protocol, the platform
// verdict from xl's shutdown reason, the per-run cpio of the nested host, and
// the real driver (tools/xl/pvk-xl.sh) run end to end through run_kernel
// against a scripted stand-in for xl.
#include "pvk/run.hpp"
#include "pvk/xen_domu.hpp"
#include "pvk/xl.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

namespace pvk {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(XlLines, ConsoleLinesAreTagged) {
  EXPECT_EQ(xl_console_text("[pvk] @pvk {\"event\":\"boot\"}"), "@pvk {\"event\":\"boot\"}");
  EXPECT_EQ(xl_console_text("[pvk] "), "");
  EXPECT_FALSE(xl_console_text("[pvk-xl] result shutdown=poweroff status=pass"));
  EXPECT_FALSE(xl_console_text("@pvk {}"));
}

TEST(XlLines, ResultLine) {
  const auto r = parse_xl_result("[pvk-xl] result shutdown=crash status=fail");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shutdown, "crash");
  EXPECT_EQ(r->status, "fail");
  EXPECT_FALSE(parse_xl_result("[pvk-xl] result shutdown=crash"));
  EXPECT_FALSE(parse_xl_result("[pvk] [pvk-xl] result shutdown=poweroff status=pass"));
}

TEST(XlExit, ShutdownReasonIsTheVerdict) {
  const ProcessResult ok{};
  EXPECT_EQ(xl_exit(XlResult{"poweroff", "pass"}, ok).verdict, ExitVerdict::pass);
  EXPECT_EQ(xl_exit(XlResult{"crash", "fail"}, ok).verdict, ExitVerdict::fail);
  for (const char* other : {"reboot", "destroyed", "timeout", "none"})
    EXPECT_EQ(xl_exit(XlResult{other, "none"}, ok).verdict, ExitVerdict::none) << other;
  EXPECT_EQ(xl_exit(std::nullopt, ok).verdict, ExitVerdict::none);
}

TEST(XenDomU, RunArchiveIsANewcCpio) {
  const std::string archive = run_archive("ELF bytes", "mmu=wrpt selftest=mm", 123s);
  EXPECT_EQ(archive.size() % 512, 0u);
  const fs::path file = fs::temp_directory_path() / ("pvk_cpio_" + std::to_string(::getpid()));
  std::ofstream(file, std::ios::binary) << archive;
  const fs::path dir = file.string() + ".d";
  fs::create_directories(dir);
  const std::string cmd = "cd " + dir.string() + " && cpio -id --quiet < " + file.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto read = [&](const char* name) {
    std::ifstream in(dir / "pvk" / name);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(read("pvk.elf"), "ELF bytes");
  EXPECT_EQ(read("params"), "mmu=wrpt selftest=mm\n");
  EXPECT_EQ(read("timeout"), "123\n");
  fs::remove_all(dir);
  fs::remove(file);
}

// The driver script itself, through run_kernel(Platform::xl), with fake_xl.sh
// in place of xl.
class XlDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pvk_xl_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "pvk.elf") << "not really a kernel";
    ::setenv("PVK_XL", PVK_FAKE_XL, 1);
    ::setenv("PVK_FAKE_XL_CONSOLE", (dir_ / "console").c_str(), 1);
    ::setenv("PVK_FAKE_XL_CONFIG", (dir_ / "seen.cfg").c_str(), 1);
  }
  void TearDown() override {
    for (const char* v : {"PVK_XL", "PVK_FAKE_XL_CONSOLE", "PVK_FAKE_XL_CONFIG", "PVK_FAKE_XL_REASON", "PVK_FAKE_XL_HANG"})
      ::unsetenv(v);
    fs::remove_all(dir_);
  }
  RunResult run(const std::string& console, const char* reason, std::chrono::seconds timeout = 30s) {
    std::ofstream(dir_ / "console") << console;
    if (reason) ::setenv("PVK_FAKE_XL_REASON", reason, 1);
    RunOptions options;
    options.platform = Platform::xl;
    options.kernel = dir_ / "pvk.elf";
    options.params = "mmu=wrpt selftest=mm";
    options.tools_dir = PVK_TOOLS_DIR;
    options.timeout = timeout;
    return run_kernel(options);
  }
  std::string seen_config() {
    std::ifstream in(dir_ / "seen.cfg");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  fs::path dir_;
};

const char* kPassConsole =
    "pvk: booting (xen, domU)\n"
    "@pvk {\"event\":\"boot\",\"role\":\"domU\"}\r\n"
    "@pvk {\"event\":\"done\",\"status\":\"pass\"}";  // no final newline

TEST_F(XlDriver, PowerOffWithDonePassPasses) {
  const RunResult r = run(kPassConsole, "0");
  EXPECT_TRUE(r.pass) << r.reason;
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].value("role", ""), "domU");
  const std::string cfg = seen_config();
  EXPECT_NE(cfg.find("type = \"pv\""), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("extra = \"mmu=wrpt selftest=mm\""), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("kernel = \"" + (dir_ / "pvk.elf").string() + "\""), std::string::npos) << cfg;
}

// The root filesystem archive reaches the domU as xl's ramdisk.
TEST_F(XlDriver, TheRootfsArchiveIsTheRamdisk) {
  std::ofstream(dir_ / "root.cpio") << "070701";
  std::ofstream(dir_ / "console") << kPassConsole;
  ::setenv("PVK_FAKE_XL_REASON", "0", 1);
  RunOptions options;
  options.platform = Platform::xl;
  options.kernel = dir_ / "pvk.elf";
  options.params = "init=fstest";
  options.tools_dir = PVK_TOOLS_DIR;
  options.timeout = 30s;
  options.initrd = dir_ / "root.cpio";
  const RunResult r = run_kernel(options);
  EXPECT_TRUE(r.pass) << r.reason;
  const std::string cfg = seen_config();
  EXPECT_NE(cfg.find("ramdisk = \"" + (dir_ / "root.cpio").string() + "\""), std::string::npos) << cfg;
}

TEST_F(XlDriver, CrashFailsWithTheReason) {
  const RunResult r = run("@pvk {\"event\":\"done\",\"status\":\"fail\",\"reason\":\"unhandled exception\"}\n", "3");
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.platform_exit.verdict, ExitVerdict::fail);
  EXPECT_NE(r.reason.find("unhandled exception"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("crashed"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.xen_trouble.empty()) << "xl's messages should be quoted";
}

TEST_F(XlDriver, DonePassButCrashFails) {
  const RunResult r = run(kPassConsole, "3");
  EXPECT_FALSE(r.pass) << r.reason;
}

TEST_F(XlDriver, RebootIsNotAPass) {
  const RunResult r = run(kPassConsole, "1");
  EXPECT_FALSE(r.pass);
  EXPECT_NE(r.reason.find("reboot"), std::string::npos) << r.reason;
}

// A domain that never ends: the driver destroys it at its deadline (10 s, the
// shortest it is given) and the run is a timeout, not a hang.
TEST_F(XlDriver, HungDomainIsDestroyedAtTheDeadline) {
  ::setenv("PVK_FAKE_XL_HANG", "1", 1);
  const RunResult r = run("pvk: booting (xen, domU)\n", "0", 25s);
  EXPECT_FALSE(r.pass);
  EXPECT_TRUE(r.timed_out);
  EXPECT_NE(r.reason.find("timed out after 10 s"), std::string::npos) << r.reason;
  EXPECT_LT(r.elapsed, 20s);
}

TEST_F(XlDriver, CreateFailureIsReported) {
  const RunResult r = run("", nullptr);
  EXPECT_FALSE(r.pass);
  EXPECT_TRUE(std::any_of(r.xen_trouble.begin(), r.xen_trouble.end(), [](const std::string& l) {
    return l.find("cannot create the domain") != std::string::npos;
  })) << r.reason;
}

}  // namespace
}  // namespace pvk

namespace pvk {
namespace {

// The root filesystem under xl: the driver's --ramdisk, xl's ramdisk=.
TEST(XlDriverArgv, PassesTheRootfsArchiveAsRamdisk) {
  const auto plain = xl_driver_argv("/t/pvk-xl.sh", "/b/pvk.elf", "init=hello", std::chrono::seconds{60});
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "--ramdisk"), plain.end());
  const auto with = xl_driver_argv("/t/pvk-xl.sh", "/b/pvk.elf", "init=hello", std::chrono::seconds{60}, 1, "/b/r.cpio");
  const auto at = std::find(with.begin(), with.end(), "--ramdisk");
  ASSERT_NE(at, with.end());
  EXPECT_EQ(*(at + 1), "/b/r.cpio");
  EXPECT_LT(at, std::find(with.begin(), with.end(), "--")) << "an option, before the kernel";
}

}  // namespace
}  // namespace pvk
