// The root filesystem packer (pvk run --rootfs): a host directory as a
// newc archive, parents first, names sorted, modes, owners, mtimes and
// symlink targets as the host has them; what newc cannot hold is refused.
#include "pvk/cpio.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

namespace pvk {
namespace {

namespace fs = std::filesystem;

struct Parsed {
  std::string name;
  unsigned mode, uid, mtime;
  std::string data;
};

unsigned field(const std::string& a, size_t at, int i) { return std::stoul(a.substr(at + 6 + 8 * i, 8), nullptr, 16); }

std::vector<Parsed> parse(const std::string& a) {
  std::vector<Parsed> out;
  size_t at = 0;
  while (true) {
    EXPECT_EQ(a.substr(at, 6), "070701");
    const unsigned namesize = field(a, at, 11), size = field(a, at, 6);
    Parsed p{a.substr(at + 110, namesize - 1), field(a, at, 1), field(a, at, 2), field(a, at, 5), ""};
    const size_t data = (at + 110 + namesize + 3) & ~size_t{3};
    p.data = a.substr(data, size);
    at = (data + size + 3) & ~size_t{3};
    if (p.name == "TRAILER!!!") break;
    out.push_back(p);
  }
  EXPECT_EQ(a.size() % 512, 0u);
  return out;
}

class CpioPack : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pvk-cpio-pack-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "b/c");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CpioPack, PacksParentsFirstWithModesAndLinks) {
  std::ofstream(dir_ / "b/c/file") << "data";
  ::chmod((dir_ / "b/c/file").c_str(), 0640);
  const struct timeval t[2] = {{1234, 0}, {1234, 0}};
  ::utimes((dir_ / "b/c/file").c_str(), t);
  fs::create_symlink("c/file", dir_ / "b/link");
  std::ofstream(dir_ / "a") << "";
  const auto entries = parse(cpio_pack_directory(dir_));
  ASSERT_EQ(entries.size(), 5u);
  EXPECT_EQ(entries[0].name, "a");
  EXPECT_EQ(entries[1].name, "b");
  EXPECT_EQ(entries[1].mode & 0170000, 040000u);
  EXPECT_EQ(entries[2].name, "b/c");
  EXPECT_EQ(entries[3].name, "b/c/file");
  EXPECT_EQ(entries[3].mode, 0100640u);
  EXPECT_EQ(entries[3].uid, ::getuid());
  EXPECT_EQ(entries[3].mtime, 1234u);
  EXPECT_EQ(entries[3].data, "data");
  EXPECT_EQ(entries[4].name, "b/link");
  EXPECT_EQ(entries[4].mode & 0170000, 0120000u);
  EXPECT_EQ(entries[4].data, "c/file");
}

TEST_F(CpioPack, RefusesWhatIsNotAFileDirectoryOrSymlink) {
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0644), 0);
  EXPECT_THROW(cpio_pack_directory(dir_), std::runtime_error);
  EXPECT_THROW(cpio_pack_directory(dir_ / "missing"), std::runtime_error);
}

TEST_F(CpioPack, TheSameTreeGivesTheSameCachedFile) {
  std::ofstream(dir_ / "f") << "x";
  const fs::path cache = dir_.string() + "-cache";
  const fs::path one = cpio_pack_directory_to(dir_, cache), two = cpio_pack_directory_to(dir_, cache);
  EXPECT_EQ(one, two);
  EXPECT_EQ(fs::file_size(one) % 512, 0u);
  fs::remove_all(cache);
}

}  // namespace
}  // namespace pvk
