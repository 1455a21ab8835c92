// QEMU command lines for each platform: exactly what docs/design.md and the run
// contract require, with the kernel command line passed through intact.
#include "pvk/platform.hpp"
#include "pvk/xen.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace pvk {
namespace {

using Argv = std::vector<std::string>;

QemuConfig config(std::string params = "mmu=native selftest=mm") {
  QemuConfig c;
  c.kernel = "/b/guest/pvk.elf";
  c.params = std::move(params);
  c.xen_image = "/b/cache/xen-4.17/xen";
  return c;
}

// The value following `flag` in argv ("" if absent).
std::string value_of(const Argv& argv, const std::string& flag) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  return it != argv.end() && it + 1 != argv.end() ? *(it + 1) : "";
}

bool has(const Argv& argv, const std::string& arg) {
  return std::find(argv.begin(), argv.end(), arg) != argv.end();
}

TEST(NativeArgv, MatchesTheContract) {
  const Argv expected{
      "qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", "512M", "-smp", "1",
      "-display", "none", "-monitor", "none", "-serial", "stdio", "-no-reboot",
      "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
      "-kernel", "/b/guest/pvk.elf", "-append", "mmu=native selftest=mm",
  };
  EXPECT_EQ(native_argv(config()), expected);
  EXPECT_EQ(qemu_argv(Platform::native, config()), expected);
}

TEST(NativeArgv, EmptyParamsStillPassAppend) {
  EXPECT_EQ(value_of(native_argv(config("")), "-append"), "");
  EXPECT_TRUE(has(native_argv(config("")), "-append"));
}

TEST(NativeArgv, ParamsAreOneArgumentVerbatim) {
  const std::string params = R"(bench="fork,exit" init=sh;rm a,b $(x))";
  EXPECT_EQ(value_of(native_argv(config(params)), "-append"), params);
}

TEST(NativeArgv, GdbWaitsForDebugger) {
  QemuConfig c = config();
  EXPECT_FALSE(has(native_argv(c), "-S"));
  c.gdb = true;
  const Argv argv = native_argv(c);
  EXPECT_TRUE(has(argv, "-s"));
  EXPECT_TRUE(has(argv, "-S"));
}

TEST(XenArgv, MatchesTheContract) {
  const Argv argv = xen_argv(config());
  EXPECT_EQ(argv.front(), "qemu-system-x86_64");
  EXPECT_EQ(value_of(argv, "-accel"), "tcg");
  EXPECT_EQ(value_of(argv, "-cpu"), "max,-smap,-x2apic");
  EXPECT_EQ(value_of(argv, "-m"), "1024");
  EXPECT_EQ(value_of(argv, "-smp"), "1");
  EXPECT_EQ(value_of(argv, "-serial"), "stdio");
  EXPECT_TRUE(has(argv, "-no-reboot"));
  EXPECT_EQ(value_of(argv, "-kernel"), "/b/cache/xen-4.17/xen");
  EXPECT_EQ(value_of(argv, "-initrd"), "/b/guest/pvk.elf mmu=native selftest=mm");
  EXPECT_EQ(qemu_argv(Platform::xen, config()), argv);
}

TEST(XenArgv, HypervisorCommandLine) {
  const std::string append = value_of(xen_argv(config()), "-append");
  for (const char* option : {"console=com1", "com1=115200,8n1", "dom0_mem=256M,max:256M", "noreboot=false"})
    EXPECT_NE(append.find(option), std::string::npos) << option << " in " << append;
}

TEST(XenArgv, CommasInParamsAreEscapedForMultiboot) {
  EXPECT_EQ(value_of(xen_argv(config("bench=fork,exit")), "-initrd"), "/b/guest/pvk.elf bench=fork,,exit");
}

TEST(XenArgv, NoParamsMeansJustTheKernel) {
  EXPECT_EQ(value_of(xen_argv(config("")), "-initrd"), "/b/guest/pvk.elf");
}

TEST(XenArgv, KernelPathWithBlanksIsRejected) {
  QemuConfig c = config();
  c.kernel = "/my build/pvk.elf";
  EXPECT_THROW(xen_argv(c), std::invalid_argument);
}

TEST(XenArgv, Gdb) {
  QemuConfig c = config();
  c.gdb = true;
  EXPECT_TRUE(has(xen_argv(c), "-S"));
}

TEST(Platform, NamesAndDefaults) {
  EXPECT_EQ(parse_platform("native"), Platform::native);
  EXPECT_EQ(parse_platform("xen"), Platform::xen);
  EXPECT_FALSE(parse_platform("kvm"));
  EXPECT_EQ(platform_name(Platform::xen), "xen");
  EXPECT_EQ(default_timeout(Platform::native), std::chrono::seconds{60});
  EXPECT_EQ(default_timeout(Platform::xen), std::chrono::seconds{300});
}

}  // namespace
}  // namespace pvk

namespace pvk {
namespace {

// The root filesystem archive: natively QEMU's -initrd, under Xen the
// multiboot module after the kernel's (dom0's ramdisk).
TEST(RootfsArgv, NativePassesTheArchiveAsInitrd) {
  QemuConfig c = config();
  EXPECT_FALSE(has(native_argv(c), "-initrd"));
  c.initrd = "/b/cache/rootfs/r.cpio";
  EXPECT_EQ(value_of(native_argv(c), "-initrd"), "/b/cache/rootfs/r.cpio");
}

TEST(RootfsArgv, XenPassesTheArchiveAsTheSecondModule) {
  QemuConfig c = config("init=a,b");
  c.initrd = "/b/r.cpio";
  EXPECT_EQ(value_of(xen_argv(c), "-initrd"), "/b/guest/pvk.elf init=a,,b,/b/r.cpio");
  c.initrd = "/b/with blank.cpio";
  EXPECT_THROW(xen_argv(c), std::invalid_argument);
}

}  // namespace
}  // namespace pvk
