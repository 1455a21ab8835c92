// The root filesystem's tree and data (kernel/fs/ramfs, kernel/fs/path)
// over the host's fake RAM: Linux's semantics and errno values, and every
// frame back when files shrink, are removed, or a write runs out of frames.
#include "host_compat.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_mmu.h"
#include "base/frames/frame_allocator.h"
#include "kernel/fs/path.h"
#include "kernel/fs/ramfs.h"

namespace pvk::fs {
namespace {

class Ramfs : public testing::Test {
 protected:
  void SetUp() override {
    test::fake().reset(test::FakeConfig{});
    baseline_ = frames().free_count();
    init();
  }
  void TearDown() override {
    init();
    EXPECT_EQ(frames().free_count(), baseline_) << "frames leaked";
  }
  ErrorOr<Inode*> at(const char* path, bool follow = true) { return resolve(root(), path, strlen(path), follow); }
  Inode* mk(Inode* dir, const char* name, uint32_t mode) { return must(create(dir, name, strlen(name), mode), "create"); }
  uint64_t baseline_ = 0;
};

TEST_F(Ramfs, WriteReadTruncateAndFramesComeBack) {
  Inode* f = mk(root(), "f", kRegular | 0644);
  std::string data(10000, 'a');
  EXPECT_EQ(write_bytes(f, 0, data.data(), data.size()).value(), 10000u);
  EXPECT_EQ(f->frames, 4u);
  EXPECT_EQ(baseline_ - frames().free_count(), 4u);
  std::string back(10000, 0);
  EXPECT_EQ(read_bytes(f, 0, back.data(), back.size()).value(), 10000u);
  EXPECT_EQ(back, data);
  must(truncate(f, 10), "truncate");
  EXPECT_EQ(f->frames, 2u) << "one data frame and its index frame stay";
  must(truncate(f, 5000), "grow");
  char c = 1;
  EXPECT_EQ(read_bytes(f, 100, &c, 1).value(), 1u);
  EXPECT_EQ(c, 0) << "bytes past the old end read as zeros";
  must(unlink(root(), "f", 1), "unlink");
  EXPECT_EQ(frames().free_count(), baseline_);
}

TEST_F(Ramfs, AnOpenFileOutlivesItsName) {
  Inode* f = mk(root(), "f", kRegular | 0644);
  ASSERT_FALSE(write_bytes(f, 0, "data", 4).is_error());
  inode_get(f);  // an open File
  must(unlink(root(), "f", 1), "unlink");
  EXPECT_EQ(f->nlink, 0u);
  char buf[4];
  EXPECT_EQ(read_bytes(f, 0, buf, 4).value(), 4u);
  EXPECT_LT(frames().free_count(), baseline_);
  inode_put(f);  // the last close
  EXPECT_EQ(frames().free_count(), baseline_);
}

TEST_F(Ramfs, WriteOutOfFramesIsENOSPCAndLeavesNoFrame) {
  Inode* f = mk(root(), "f", kRegular | 0644);
  std::vector<Pfn> hoard;
  while (frames().free_count()) hoard.push_back(frames().must_alloc());
  EXPECT_EQ(write_bytes(f, 0, "x", 1).error(), Errno::ENOSPC);
  EXPECT_EQ(f->frames, 0u);
  EXPECT_EQ(f->size, 0u);
  frames().must_free(hoard.back());  // one frame: the index frame, then no data frame
  hoard.pop_back();
  EXPECT_EQ(write_bytes(f, 0, "x", 1).error(), Errno::ENOSPC);
  EXPECT_EQ(f->frames, 0u) << "the index frame made for the failed write goes back";
  for (Pfn p : hoard) frames().must_free(p);
}

TEST_F(Ramfs, DirectoryErrnosAsLinux) {
  Inode* d = mk(root(), "d", kDir | 0755);
  mk(d, "f", kRegular | 0644);
  EXPECT_EQ(create(root(), "d", 1, kDir).error(), Errno::EEXIST);
  EXPECT_EQ(rmdir(root(), "d", 1).error(), Errno::ENOTEMPTY);
  EXPECT_EQ(unlink(root(), "d", 1).error(), Errno::EISDIR);
  EXPECT_EQ(rmdir(d, "f", 1).error(), Errno::ENOTDIR);
  EXPECT_EQ(at("/d/f/x").error(), Errno::ENOTDIR);
  EXPECT_EQ(at("/d/f/").error(), Errno::ENOTDIR);
  EXPECT_EQ(at("/nope").error(), Errno::ENOENT);
  EXPECT_EQ(at(("/" + std::string(256, 'n')).c_str()).error(), Errno::ENAMETOOLONG);
  EXPECT_EQ(rename(root(), "d", 1, d, "sub", 3).error(), Errno::EINVAL) << "a directory into itself";
  EXPECT_EQ(root()->nlink, 3u);
  EXPECT_EQ(d->nlink, 2u);
  must(unlink(d, "f", 1), "unlink");
  must(rmdir(root(), "d", 1), "rmdir");
  EXPECT_EQ(root()->nlink, 2u);
}

TEST_F(Ramfs, RenameReplacesAndMovesDirectories) {
  Inode* a = mk(root(), "a", kRegular | 0644);
  Inode* b = mk(root(), "b", kRegular | 0644);
  ASSERT_FALSE(write_bytes(b, 0, "b", 1).is_error());
  must(rename(root(), "a", 1, root(), "b", 1), "rename over");
  EXPECT_EQ(at("/b").value(), a);
  EXPECT_EQ(at("/a").error(), Errno::ENOENT);
  EXPECT_EQ(frames().free_count(), baseline_) << "the replaced file's frames are freed";
  Inode* d1 = mk(root(), "d1", kDir | 0755);
  Inode* d2 = mk(root(), "d2", kDir | 0755);
  EXPECT_EQ(rename(root(), "b", 1, root(), "d1", 2).error(), Errno::EISDIR);
  EXPECT_EQ(rename(root(), "d1", 2, root(), "b", 1).error(), Errno::ENOTDIR);
  must(rename(root(), "d1", 2, d2, "inner", 5), "move a directory");
  EXPECT_EQ(d1->parent, d2);
  EXPECT_EQ(d2->nlink, 3u);
  EXPECT_EQ(at("/d2/inner/..").value(), d2);
}

TEST_F(Ramfs, SymlinksAreFollowedUpToForty) {
  Inode* f = mk(root(), "f", kRegular | 0644);
  Inode* l = mk(root(), "l0", kSymlink | 0777);
  ASSERT_FALSE(write_bytes(l, 0, "f", 1).is_error());
  for (int i = 1; i <= 40; ++i) {
    const std::string name = "l" + std::to_string(i), to = "l" + std::to_string(i - 1);
    ASSERT_FALSE(write_bytes(mk(root(), name.c_str(), kSymlink | 0777), 0, to.data(), to.size()).is_error());
  }
  EXPECT_EQ(at("/l39").value(), f) << "40 links followed";
  EXPECT_EQ(at("/l40").error(), Errno::ELOOP) << "41 links";
  EXPECT_EQ(at("/l0", false).value(), l) << "the last component not followed";
  Inode* loop = mk(root(), "loop", kSymlink | 0777);
  ASSERT_FALSE(write_bytes(loop, 0, "loop", 4).is_error());
  EXPECT_EQ(at("/loop").error(), Errno::ELOOP);
  EXPECT_EQ(at("/loop/x").error(), Errno::ELOOP);
}

TEST_F(Ramfs, NodesRunOutAsENOSPC) {
  Errno last = Errno::Ok;
  for (int i = 0; i < 5000 && last == Errno::Ok; ++i) {
    const std::string name = "n" + std::to_string(i);
    auto r = create(root(), name.c_str(), name.size(), kRegular | 0644);
    if (r.is_error()) last = r.error();
  }
  EXPECT_EQ(last, Errno::ENOSPC);
}

}  // namespace
}  // namespace pvk::fs
