// The root filesystem (docs/rootfs.md): a host directory packed by
// pvk_hostlib's packer (as `pvk run --rootfs` packs it) is unpacked at
// boot, and init=fstest (tests/user/fstest.cpp) reads it back, writes
// under /tmp and checks errno values; the boot's leak check must hold.
// Malformed archives are refused at boot with one line naming the entry.
#include "boot_support.hpp"

#include "pvk/cpio.hpp"

#include <fmt/format.h>

#include <fstream>

#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

namespace pvk::boot_test {
namespace {

namespace fs = std::filesystem;

constexpr time_t kMtime = 1700000000;

void write_file(const fs::path& p, const std::string& data, unsigned mode) {
  std::ofstream(p, std::ios::binary) << data;
  ASSERT_EQ(::chmod(p.c_str(), mode), 0) << p;
  const struct timeval times[2] = {{kMtime, 0}, {kMtime, 0}};
  ASSERT_EQ(::utimes(p.c_str(), times), 0) << p;
}

class Rootfs : public ::testing::TestWithParam<Platform> {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("pvk-rootfs-{}-{}-{}", ::getpid(), info->name(),
                                                   platform_name(GetParam()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The tree fstest expects.
  void make_tree() {
    const fs::path t = dir_ / "tree";
    fs::create_directories(t / "etc");
    fs::create_directories(t / "bin");
    fs::create_directories(t / "data/nested/deep");
    write_file(t / "etc/hello.txt", "hello, rootfs\n", 0644);
    write_file(t / "etc/secret", "s", 0600);
    write_file(t / "bin/tool", "#!/bin/sh\n", 0755);
    std::string big(10000, '\0');
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + 3);
    write_file(t / "data/nested/deep/file.bin", big, 0644);
    ASSERT_EQ(::chmod((t / "data/nested").c_str(), 0750), 0);
    fs::create_symlink("hello.txt", t / "etc/link");
    fs::create_symlink("loop2", t / "loop1");
    fs::create_symlink("loop1", t / "loop2");
  }

  // fstest's verdict and the unpacker's record of a boot of it.
  void expect_fstest_passed(const RunResult& r, const fs::path& archive);

  fs::path archive_of(const std::string& bytes) {
    const fs::path p = dir_ / "archive.cpio";
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  fs::path dir_;
};

TEST_P(Rootfs, FilesReadBackAndTmpIsWritable) {
  make_tree();
  const fs::path archive = archive_of(cpio_pack_directory(dir_ / "tree"));
  const RunResult r = boot_with_initrd(GetParam(), fmt::format("init=fstest init_args=uid={},gid={}", ::getuid(), ::getgid()),
                                       archive);
  expect_fstest_passed(r, archive);
}

// The same checks with file mappings demand-paged (file_map=demand) and a
// window of four pages: fstest's mappings of a file (bytes, zeros past the
// end, a child's writes, mprotect then write, an unlinked file's pages)
// come through faults, and every frame still comes back.
TEST_P(Rootfs, FilesReadBackWithDemandPagedMappings) {
  make_tree();
  const fs::path archive = archive_of(cpio_pack_directory(dir_ / "tree"));
  const RunResult r = boot_with_initrd(
      GetParam(), fmt::format("file_map=demand fault_around=4 init=fstest init_args=uid={},gid={}", ::getuid(), ::getgid()),
      archive);
  expect_fstest_passed(r, archive);
  const auto exit = find_record(r, "init_exit");
  ASSERT_TRUE(exit) << transcript(r);
  EXPECT_GT(r.records[*exit].value("file_faults", 0u), 0u) << "the mappings faulted their pages in" << transcript(r);
}

void Rootfs::expect_fstest_passed(const RunResult& r, const fs::path& archive) {
  ASSERT_TRUE(r.pass) << transcript(r);
  const auto unpacked = find_record(r, "rootfs");
  ASSERT_TRUE(unpacked) << "no rootfs record" << transcript(r);
  const json& rec = r.records[*unpacked];
  EXPECT_EQ(rec.value("archive_bytes", 0u), fs::file_size(archive));
  EXPECT_GT(rec.value("archive_frames_freed", 0u), 0u) << "the archive's frames go back" << transcript(r);
  EXPECT_GE(rec.value("frames_held", 0u), 3u) << "the 10000-byte file holds 3 data frames" << transcript(r);
  const auto checks = find_record(r, "fstest");
  ASSERT_TRUE(checks) << transcript(r);
  EXPECT_EQ(r.records[*checks].value("failures", 1u), 0u) << transcript(r);
  EXPECT_GT(r.records[*checks].value("checks", 0u), 100u) << transcript(r);
}

// One newc header with the given fields, for archives made wrong on purpose.
std::string header(const std::string& name, unsigned mode, uint64_t size) {
  return fmt::format("070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}", 1, mode, 0,
                     0, 1, 0, size, 0, 0, 0, 0, name.size() + 1, 0) +
         name + std::string(1, '\0');
}

struct Malformed {
  const char* label;
  std::string bytes;
  const char* names;  // what the refusal line must contain
};

std::vector<Malformed> malformed_archives() {
  std::string good;
  cpio_append(good, "etc", 040755);
  std::string escape = good;
  cpio_append(escape, "../evil", 0100644, "x");
  cpio_finish(escape);
  std::string dotdot = good;
  cpio_append(dotdot, "etc/../../evil", 0100644, "x");
  cpio_finish(dotdot);
  std::string bad_magic = "070707" + header("x", 0100644, 0).substr(6);
  std::string truncated = good + header("file", 0100644, 0).substr(0, 50);
  std::string past_end = good + header("file", 0100644, 4096) + std::string(3, '\0') + "short";
  std::string enormous = good + header("huge", 0100644, 0xFFFFFFFFu) + std::string(3, '\0') + "tiny";
  return {{"name_escaping_root", escape, "'../evil'"},
          {"dotdot_in_the_middle", dotdot, "'etc/../../evil'"},
          {"bad_magic", bad_magic, "bad magic"},
          {"truncated_header", truncated, "entry 1"},
          {"size_past_end", past_end, "'file'"},
          {"enormous_size", enormous, "'huge'"}};
}

TEST_P(Rootfs, MalformedArchivesAreRefusedInOneLine) {
  for (const Malformed& m : malformed_archives()) {
    SCOPED_TRACE(m.label);
    const RunResult r = boot_with_initrd(GetParam(), "init=hello", archive_of(m.bytes));
    EXPECT_TRUE(failed_cleanly(r)) << transcript(r);
    EXPECT_TRUE(any_text_line(r, [&](std::string_view l) {
      return contains(l, "pvk: rootfs: archive entry") && contains(l, m.names);
    })) << "expected one line 'pvk: rootfs: archive entry ...' naming " << m.names << transcript(r);
    EXPECT_FALSE(find_record(r, "init_exit")) << "init must not run on a refused archive" << transcript(r);
  }
}

std::string platform_case(const ::testing::TestParamInfo<Platform>& info) {
  return std::string(platform_name(info.param));
}

INSTANTIATE_TEST_SUITE_P(Native, Rootfs, ::testing::Values(Platform::native), platform_case);
INSTANTIATE_TEST_SUITE_P(Xen, Rootfs, ::testing::Values(Platform::xen), platform_case);

}  // namespace
}  // namespace pvk::boot_test
