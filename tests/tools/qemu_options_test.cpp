// Machine size and -icount in the QEMU command lines: absent options keep
// the platforms' defaults; given ones reach QEMU (and Xen's dom0_mem).
#include "pvk/platform.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace pvk {
namespace {

using Argv = std::vector<std::string>;

QemuConfig config() {
  QemuConfig c;
  c.kernel = "/b/guest/pvk.elf";
  c.params = "bench=getpid";
  c.xen_image = "/b/cache/xen-4.17/xen";
  return c;
}

std::string value_of(const Argv& argv, const std::string& flag) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  return it != argv.end() && it + 1 != argv.end() ? *(it + 1) : "";
}

bool has(const Argv& argv, const std::string& arg) { return std::find(argv.begin(), argv.end(), arg) != argv.end(); }

TEST(QemuOptions, DefaultsAreUnchanged) {
  EXPECT_EQ(value_of(native_argv(config()), "-m"), "512M");
  EXPECT_EQ(value_of(xen_argv(config()), "-m"), "1024");
  EXPECT_NE(value_of(xen_argv(config()), "-append").find("dom0_mem=256M,max:256M"), std::string::npos);
  EXPECT_FALSE(has(native_argv(config()), "-icount"));
  EXPECT_FALSE(has(xen_argv(config()), "-icount"));
}

TEST(QemuOptions, MemorySizes) {
  QemuConfig c = config();
  c.memory = "2G";
  EXPECT_EQ(value_of(native_argv(c), "-m"), "2G");
  c.memory = "2560";
  c.dom0_memory = "2000M";
  const Argv xen = xen_argv(c);
  EXPECT_EQ(value_of(xen, "-m"), "2560");
  const std::string append = value_of(xen, "-append");
  EXPECT_NE(append.find("dom0_mem=2000M,max:2000M"), std::string::npos) << append;
  EXPECT_EQ(append.find("256M"), std::string::npos) << append;
  EXPECT_NE(append.find("console=com1"), std::string::npos) << append;
}

TEST(QemuOptions, Icount) {
  QemuConfig c = config();
  c.icount = "shift=0,sleep=off";
  EXPECT_EQ(value_of(native_argv(c), "-icount"), "shift=0,sleep=off");
  EXPECT_EQ(value_of(xen_argv(c), "-icount"), "shift=0,sleep=off");
  // The kernel command line stays the last -append / -initrd argument pair.
  EXPECT_EQ(value_of(native_argv(c), "-append"), "bench=getpid");
}

}  // namespace
}  // namespace pvk
