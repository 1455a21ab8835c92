// Programs whose runtime is glibc's, not pvk's: the project's own C
// programs in tests/glibc, linked statically against Debian's glibc by the
// host's gcc, run on pvk natively and under every Xen backend. They check
// FP and vector state across context switches between processes and
// glibc's pthreads, across signal handlers that use FP, and print glibc's
// formatting and parsing of doubles; what pvk's console shows must be byte
// for byte what the same binaries print on the host, and the boot's leak
// check must hold.
#include "boot_support.hpp"

#include "pvk/cpio.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <set>

#include <unistd.h>

namespace pvk::boot_test {
namespace {

namespace fs = std::filesystem;

// The suite runner (pid 1 on pvk) and what it runs, in order.
constexpr const char* kRunner = "glibc_suite";
constexpr std::array<const char*, 4> kPrograms = {"fpu_procs", "fpu_threads", "fpu_signal", "float_format"};

// The system calls glibc may try and do without when pvk answers ENOSYS:
// rseq (334) at every start, clone3 (435) before pthread_create falls back
// to clone, madvise (28) when a thread's stack is let go at its exit.
const std::set<uint64_t> kKnownMissing = {28, 334, 435};

std::string host_output(const fs::path& bin) {
  std::string cmd = (bin / kRunner).string();
  for (const char* p : kPrograms) cmd += " " + (bin / p).string();
  cmd += " 2>&1";
  return host_command_output(cmd);
}

struct Case {
  Platform platform;
  const char* mmu;  // the backend (native: the only one)
};

class Glibc : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    for (const char* p : kPrograms)
      if (!fs::exists(fs::path(PVK_GLIBC_PROGRAMS_DIR) / p)) GTEST_FAIL() << p << " was not built (tests/glibc)";
    dir_ = fs::temp_directory_path() / fmt::format("pvk-glibc-{}-{}", ::getpid(), GetParam().mmu);
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tree/bin");
    fs::copy_file(fs::path(PVK_GLIBC_PROGRAMS_DIR) / kRunner, dir_ / "tree/bin" / kRunner);
    for (const char* p : kPrograms) fs::copy_file(fs::path(PVK_GLIBC_PROGRAMS_DIR) / p, dir_ / "tree/bin" / p);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(Glibc, ProgramsPrintWhatTheyPrintOnTheHost) {
  const std::string expected = host_output(dir_ / "tree/bin");
  ASSERT_NE(expected.find("glibc suite: 0 of 4 programs failed\n"), std::string::npos)
      << "the programs fail on the host itself: " << expected;
  // The programs say which registers they hold: pvk (QEMU's "max" CPU)
  // enables AVX, so a host without it prints another line.
  if (expected.find(" xmm registers") != std::string::npos) GTEST_SKIP() << "the host has no AVX: " << expected;
  const fs::path archive = dir_ / "rootfs.cpio";
  std::ofstream(archive, std::ios::binary) << cpio_pack_directory(dir_ / "tree");
  std::string args = "init_args=";
  for (const char* p : kPrograms) args += fmt::format("{}/bin/{}", args.back() == '=' ? "" : ",", p);
  const RunResult r =
      boot_with_initrd(GetParam().platform, fmt::format("mmu={} init=/bin/{} {}", GetParam().mmu, kRunner, args), archive);
  EXPECT_EQ(guest_output(r), expected) << transcript(r);
  ASSERT_TRUE(r.pass) << transcript(r);  // the leak check included
  const auto exit = find_record(r, "init_exit");
  ASSERT_TRUE(exit) << transcript(r);
  EXPECT_EQ(r.records[*exit].value("code", -1), 0);
  // What glibc asked for and pvk lacks: one record per number, and nothing
  // beyond what glibc carries on without. clone3 must be among them: the
  // threads ran on glibc's fallback to clone.
  std::set<uint64_t> missing;
  for (const json& rec : r.records)
    if (rec.value("event", "") == "enosys") {
      const uint64_t nr = rec.value("nr", uint64_t{0});
      EXPECT_TRUE(missing.insert(nr).second) << "reported twice: " << rec.dump();
      EXPECT_TRUE(kKnownMissing.count(nr)) << "glibc needed a call pvk lacks: " << rec.dump();
    }
  EXPECT_TRUE(missing.count(435)) << "pthread_create did not try clone3: " << transcript(r);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.mmu; }

INSTANTIATE_TEST_SUITE_P(Native, Glibc, ::testing::Values(Case{Platform::native, "native"}), case_name);
INSTANTIATE_TEST_SUITE_P(Xen, Glibc,
                         ::testing::Values(Case{Platform::xen, "batched"}, Case{Platform::xen, "direct"},
                                           Case{Platform::xen, "wrpt"}, Case{Platform::xen, "unhook"},
                                           Case{Platform::xen, "auto"}),
                         case_name);

}  // namespace
}  // namespace pvk::boot_test
