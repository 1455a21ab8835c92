// How each platform's way of stopping is read: isa-debug-exit codes natively,
// Xen's console announcements under Xen; and the decompressed-Xen cache.
#include "pvk/native.hpp"
#include "pvk/xen.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

namespace pvk {
namespace {

namespace fs = std::filesystem;

ProcessResult exited(int code) {
  ProcessResult r;
  r.exit_code = code;
  return r;
}

TEST(NativeExit, IsaDebugExitCodes) {
  EXPECT_EQ(native_exit(exited(1)).verdict, ExitVerdict::pass);
  EXPECT_EQ(native_exit(exited(3)).verdict, ExitVerdict::fail);
  EXPECT_EQ(native_exit(exited(0)).verdict, ExitVerdict::none);
  EXPECT_NE(native_exit(exited(0)).description.find("triple fault"), std::string::npos);
  EXPECT_EQ(native_exit(exited(5)).verdict, ExitVerdict::none);
  EXPECT_NE(native_exit(exited(5)).description.find("unexpected value 2"), std::string::npos);
  ProcessResult killed;
  killed.term_signal = 9;
  EXPECT_EQ(native_exit(killed).verdict, ExitVerdict::none);
}

TEST(XenShutdownLine, RecognisesHardwareDomainShutdowns) {
  EXPECT_EQ(parse_xen_shutdown("(XEN) Hardware Dom0 halted: halting machine"), XenShutdown::poweroff);
  EXPECT_EQ(parse_xen_shutdown("(XEN) Hardware Dom0 crashed: rebooting machine in 5 seconds."),
            XenShutdown::crash);
  EXPECT_EQ(parse_xen_shutdown("(XEN) Hardware Dom0 shutdown: rebooting machine"), XenShutdown::reboot);
  EXPECT_FALSE(parse_xen_shutdown("(XEN) Freed 656kB init memory"));
  // Only Xen may announce it: a guest printing the words changes nothing.
  EXPECT_FALSE(parse_xen_shutdown("Hardware Dom0 halted: halting machine"));
}

TEST(XenTrouble, CollectsOnlyXenTroubleLines) {
  for (const char* line : {"(XEN) domain_crash called from p2m.c:123",
                           "(XEN) Domain 0 (vcpu#0) crashed on cpu#0:",
                           "(XEN) Hardware Dom0 crashed: rebooting machine in 5 seconds.",
                           "(XEN) d0v0 Bad L1 flags 800000",
                           "(XEN) Bad type in validate_page 1234 t=1 c=2",
                           "(XEN) Error while building dom0",
                           "(XEN) FATAL PAGE FAULT",
                           "(XEN) Panic on CPU 0:",
                           "(XEN) Assertion 'x' failed at mm.c:1"})
    EXPECT_TRUE(is_xen_trouble(line)) << line;
  for (const char* line : {"(XEN) Xen version 4.17", "(XEN) Hardware Dom0 halted: halting machine",
                           "kernel panic: not from Xen", "Bad L1 flags (printed by the guest)"})
    EXPECT_FALSE(is_xen_trouble(line)) << line;
}

TEST(XenTrouble, LogKeepsThePanicMessage) {
  XenTroubleLog log;
  for (const char* line : {"(XEN) *** Building a PV Dom0 ***",
                           "(XEN) ERROR: Will only load images built for the generic loader",
                           "(XEN) ****************************************", "(XEN) Panic on CPU 0:",
                           "(XEN) Could not construct domain 0", "(XEN) ****************************************",
                           "(XEN) ", "(XEN) Reboot in five seconds...", "guest text"})
    log.observe(line);
  EXPECT_EQ(log.lines(), (std::vector<std::string>{"(XEN) ERROR: Will only load images built for the generic loader",
                                                   "(XEN) Panic on CPU 0:", "(XEN) Could not construct domain 0"}));
}

TEST(XenExit, FromAnnouncedShutdown) {
  ProcessResult stopped;
  stopped.stopped = true;
  stopped.term_signal = 15;
  EXPECT_EQ(xen_exit(stopped, XenShutdown::poweroff).verdict, ExitVerdict::pass);
  EXPECT_EQ(xen_exit(stopped, XenShutdown::crash).verdict, ExitVerdict::fail);
  EXPECT_EQ(xen_exit(stopped, XenShutdown::reboot).verdict, ExitVerdict::none);
  // Xen panicked and rebooted: -no-reboot makes QEMU exit 0.
  const PlatformExit e = xen_exit(exited(0), std::nullopt);
  EXPECT_EQ(e.verdict, ExitVerdict::none);
  EXPECT_NE(e.description.find("without a dom0 shutdown"), std::string::npos);
}

class XenImage : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pvk_xen_image_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    gz_ = dir_ / "xen.gz";
    std::ofstream(dir_ / "xen.raw") << "multiboot image";
    ASSERT_EQ(std::system(("gzip -c " + (dir_ / "xen.raw").string() + " > " + gz_.string()).c_str()), 0);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  fs::path dir_, gz_;
};

TEST_F(XenImage, DecompressesOnceIntoTheCache) {
  const fs::path image = xen_image(gz_, dir_ / "cache");
  EXPECT_EQ(image, dir_ / "cache" / "xen");
  EXPECT_EQ(read(image), "multiboot image");

  // A cached copy is reused as is...
  std::ofstream(image) << "cached";
  EXPECT_EQ(read(xen_image(gz_, dir_ / "cache")), "cached");
  // ...until the package's image is newer.
  fs::last_write_time(gz_, fs::last_write_time(image) + std::chrono::hours(1));
  EXPECT_EQ(read(xen_image(gz_, dir_ / "cache")), "multiboot image");
}

TEST_F(XenImage, MissingOrCorruptImageIsAnError) {
  EXPECT_THROW(xen_image(dir_ / "absent.gz", dir_ / "cache"), std::runtime_error);
  std::ofstream(dir_ / "bad.gz") << "not gzip";
  EXPECT_THROW(xen_image(dir_ / "bad.gz", dir_ / "cache"), std::runtime_error);
  EXPECT_FALSE(fs::exists(dir_ / "cache" / "xen"));
}

}  // namespace
}  // namespace pvk
