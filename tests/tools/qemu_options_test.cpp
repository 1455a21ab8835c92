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

// Threads of one process may decompress Xen at the same time (pvk bench runs
// boots in threads): every caller gets the image.
#include "pvk/xen.hpp"

#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

namespace pvk {
namespace {

TEST(XenImageThreads, ConcurrentCallsInOneProcess) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("pvk-xen-image-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path plain = dir / "xen-plain";
  {
    std::ofstream out(plain);
    for (int i = 0; i < 200000; ++i) out << "multiboot image line " << i << "\n";
  }
  ASSERT_EQ(std::system(("gzip -k " + plain.string()).c_str()), 0);
  const fs::path gz = plain.string() + ".gz";
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      try {
        if (fs::file_size(xen_image(gz, dir / "cache")) == fs::file_size(plain)) ++ok;
      } catch (const std::exception&) {
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 4);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pvk
