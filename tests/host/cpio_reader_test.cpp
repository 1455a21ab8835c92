// The root filesystem's archive reader and unpacker (kernel/fs/cpio_reader,
// kernel/fs/unpack), over archives made by the host packer
// (tools/lib's cpio_append) and by hand where they must be wrong.
#include "host_compat.h"

#include <gtest/gtest.h>

#include <string>

#include "fake_mmu.h"
#include "kernel/fs/cpio_reader.h"
#include "base/frames/frame_allocator.h"
#include "kernel/fs/path.h"
#include "kernel/fs/ramfs.h"
#include "kernel/fs/unpack.h"
#include "pvk/cpio.hpp"

namespace pvk::fs {
namespace {

std::string header(const std::string& name, unsigned mode, uint64_t size, unsigned namesize_extra = 0) {
  char h[111];
  snprintf(h, sizeof h, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", 1u, mode, 0u, 0u, 1u, 0u,
           static_cast<unsigned>(size), 0u, 0u, 0u, 0u, static_cast<unsigned>(name.size() + 1 + namesize_extra), 0u);
  return std::string(h, 110) + name + std::string(1, '\0');
}

const uint8_t* bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

TEST(CpioReader, ReadsEveryFieldOfThePackersEntries) {
  std::string a;
  cpio_append(a, pvk::CpioEntry{"etc", 040755, 1000, 100, 1700000000, ""});
  cpio_append(a, pvk::CpioEntry{"etc/passwd", 0100600, 1, 2, 42, "root:x:0:0\n"});
  cpio_finish(a);
  CpioReader r(bytes(a), a.size());
  fs::CpioEntry e;
  ASSERT_TRUE(r.next(e));
  EXPECT_EQ(std::string(e.name, e.name_len), "etc");
  EXPECT_EQ(e.mode, 040755u);
  EXPECT_EQ(e.uid, 1000u);
  EXPECT_EQ(e.gid, 100u);
  EXPECT_EQ(e.mtime, 1700000000u);
  ASSERT_TRUE(r.next(e));
  EXPECT_EQ(std::string(e.name, e.name_len), "etc/passwd");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(e.data), e.size), "root:x:0:0\n");
  EXPECT_FALSE(r.next(e));
  EXPECT_EQ(r.error().what, nullptr);
}

TEST(CpioReader, RefusesMalformedArchives) {
  struct Case {
    std::string bytes;
    const char* what;
  };
  const Case cases[] = {
      {"070707" + header("x", 0100644, 0).substr(6), "bad magic (not a newc cpio archive)"},
      {header("x", 0100644, 0).substr(0, 100), "truncated header"},
      {header("file", 0100644, 100) + "short", "file data past the end of the archive"},
      {header("huge", 0100644, 0xFFFFFFFF) + "tiny", "file data past the end of the archive"},
      {header("name", 0100644, 0, 1000), "name past the end of the archive"},
      {"070701" + std::string(104, 'z'), "bad header field (not hex)"},
      {"", "truncated header"},
  };
  for (const Case& c : cases) {
    CpioReader r(bytes(c.bytes), c.bytes.size());
    fs::CpioEntry e;
    EXPECT_FALSE(r.next(e));
    ASSERT_NE(r.error().what, nullptr);
    EXPECT_STREQ(r.error().what, c.what);
  }
}

TEST(CpioNormalize, KeepsNamesInsideTheRoot) {
  char out[64];
  size_t n = 0;
  ASSERT_TRUE(cpio_normalize("./a//b/", 7, out, sizeof out, n));
  EXPECT_EQ(std::string(out, n), "a/b");
  ASSERT_TRUE(cpio_normalize("/etc/x", 6, out, sizeof out, n));
  EXPECT_EQ(std::string(out, n), "etc/x");
  ASSERT_TRUE(cpio_normalize(".", 1, out, sizeof out, n));
  EXPECT_EQ(n, 0u);
  EXPECT_FALSE(cpio_normalize("..", 2, out, sizeof out, n));
  EXPECT_FALSE(cpio_normalize("a/../../b", 9, out, sizeof out, n));
  EXPECT_FALSE(cpio_normalize("a/..", 4, out, sizeof out, n));  // even staying inside: refused, not resolved
}

class Unpack : public testing::Test {
 protected:
  void SetUp() override {
    test::fake().reset(test::FakeConfig{});
    baseline_ = frames().free_count();
    init();
  }
  void TearDown() override {
    init();  // frees every node's frames
    EXPECT_EQ(frames().free_count(), baseline_) << "frames leaked";
  }
  bool unpack(const std::string& a) { return unpack_archive(bytes(a), a.size(), why_, sizeof why_); }
  Inode* at(const char* path) {
    auto r = resolve(root(), path, strlen(path), true);
    return r.is_error() ? nullptr : r.value();
  }
  uint64_t baseline_ = 0;
  char why_[192] = {};
};

TEST_F(Unpack, BuildsTheTreeWithModesOwnersAndData) {
  std::string a;
  cpio_append(a, pvk::CpioEntry{".", 040700, 0, 0, 5, ""});
  cpio_append(a, pvk::CpioEntry{"bin", 040755, 0, 0, 0, ""});
  cpio_append(a, pvk::CpioEntry{"bin/sh", 0100755, 3, 4, 77, std::string(9000, 'x')});
  cpio_append(a, pvk::CpioEntry{"bin/ash", 0120777, 0, 0, 0, "sh"});
  cpio_finish(a);
  ASSERT_TRUE(unpack(a)) << why_;
  EXPECT_EQ(root()->mode, 040700u);
  Inode* sh = at("/bin/sh");
  ASSERT_NE(sh, nullptr);
  EXPECT_EQ(sh->mode, 0100755u);
  EXPECT_EQ(sh->uid, 3u);
  EXPECT_EQ(sh->gid, 4u);
  EXPECT_EQ(sh->mtime, 77);
  EXPECT_EQ(sh->size, 9000u);
  EXPECT_EQ(sh->frames, 4u) << "three data frames and one index frame";
  EXPECT_EQ(at("/bin/ash"), sh) << "the symlink is followed";
  EXPECT_NE(at("/dev/null"), nullptr);
  EXPECT_NE(at("/dev/console"), nullptr);
  ASSERT_NE(at("/tmp"), nullptr);
  EXPECT_EQ(at("/tmp")->mode, 041777u);
}

TEST_F(Unpack, RefusesNamesLeavingTheRootAndMissingParents) {
  std::string a;
  cpio_append(a, "../x", 0100644, "x");
  cpio_finish(a);
  EXPECT_FALSE(unpack(a));
  EXPECT_STREQ(why_, "rootfs: archive entry 0 '../x': name leaves the root ('..')");
  init();
  std::string b;
  cpio_append(b, "no/such/dir", 0100644, "x");
  cpio_finish(b);
  EXPECT_FALSE(unpack(b));
  EXPECT_STREQ(why_, "rootfs: archive entry 0 'no/such/dir': parent directory missing from the archive");
}

TEST_F(Unpack, RunningOutOfFramesIsENOSPCAndLeaksNothing) {
  std::string a;
  cpio_append(a, "big", 0100644, std::string(4096 * 3000, 'y'));  // more than the fake RAM
  cpio_finish(a);
  EXPECT_FALSE(unpack(a));
  EXPECT_NE(std::string(why_).find("'big': out of memory"), std::string::npos) << why_;
}

}  // namespace
}  // namespace pvk::fs
