// A program nobody here wrote: Debian's busybox-static (/bin/busybox of the
// build host) runs shell scripts on pvk, natively and under every Xen
// backend, and what it prints must be byte for byte what the same busybox
// prints on the host for the same script. The scripts fork, exec (busybox
// runs its applets through /proc/self/exe), pipe, redirect into files of
// /tmp, and checksum what they wrote; the boot's leak check must hold.
#include "boot_support.hpp"

#include "pvk/cpio.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

namespace pvk::boot_test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBusybox = "/bin/busybox";

// $1 is a directory the script may write (pvk's /tmp; a fresh one on the
// host) and leaves empty, $2 the tree's root (where bin/greet, a `#!`
// script, is); nothing printed depends on either.
constexpr const char* kScript = R"SH(
D=$1
echo "start $#"
x=$(echo hello | wc -c)
echo "wc says $x"
for i in 3 1 2; do echo "line $i"; done > "$D/lines"
sort "$D/lines"
sort -r < "$D/lines" | head -n 2
cat <<EOF > "$D/doc"
a here-document
with $x expanded
EOF
wc -l < "$D/doc"
sha256sum < "$D/doc"
square() { echo $(( $1 * $1 )); }
echo "squares $(square 7) $(square 12)"
( cd "$D" && echo "subshell in a dir: $(ls | sort | tr '\n' ' ')" )
n=0
while [ $n -lt 5 ]; do n=$((n + 1)); done
echo "counted $n"
trap 'echo trapped USR1' USR1
kill -USR1 $$
sleep 0 & wait $!
echo "waited $?"
false || echo "false failed as it should"
echo abc | tr a-c x-z | sed 's/z/!/'
"$2/bin/greet" one "two three"
echo "greet said $?"
rm "$D/lines" "$D/doc"
echo done
)SH";

std::string host_output(const fs::path& script, const fs::path& tmp) {
  const std::string cmd =
      fmt::format("{} sh {} {} {} 2>&1", kBusybox, script.string(), tmp.string(), script.parent_path().string());
  return host_command_output(cmd);
}

struct Case {
  Platform platform;
  const char* mmu;          // the backend (native: the only one)
  const char* file_map = "eager";  // how exec maps busybox's pages (demand: by faults)
};

class Busybox : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!fs::exists(kBusybox)) GTEST_SKIP() << kBusybox << " is missing: tools/pvk's bootstrap installs busybox-static";
    dir_ = fs::temp_directory_path() / fmt::format("pvk-busybox-{}-{}", ::getpid(), GetParam().mmu);
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tree/bin");
    fs::create_directories(dir_ / "hosttmp");
    fs::copy_file(kBusybox, dir_ / "tree/bin/busybox");
    std::ofstream(dir_ / "tree/script.sh") << kScript;
    std::ofstream(dir_ / "tree/bin/greet") << "#!/bin/busybox sh\necho \"greet: $# $*\"\nexit 3\n";
    fs::permissions(dir_ / "tree/bin/greet", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(Busybox, AScriptPrintsWhatItPrintsOnTheHost) {
  const std::string expected = host_output(dir_ / "tree/script.sh", dir_ / "hosttmp");
  ASSERT_NE(expected.find("done\n"), std::string::npos) << "the host's busybox did not finish: " << expected;
  ASSERT_TRUE(fs::is_empty(dir_ / "hosttmp"));
  const fs::path archive = dir_ / "rootfs.cpio";
  std::ofstream(archive, std::ios::binary) << cpio_pack_directory(dir_ / "tree");
  const RunResult r = boot_with_initrd(
      GetParam().platform, fmt::format("mmu={} file_map={} init=/bin/busybox init_args=sh,/script.sh,/tmp,/", GetParam().mmu,
                                      GetParam().file_map), archive);
  EXPECT_EQ(guest_output(r), expected) << transcript(r);
  ASSERT_TRUE(r.pass) << transcript(r);
  const auto exit = find_record(r, "init_exit");
  ASSERT_TRUE(exit) << transcript(r);
  EXPECT_EQ(r.records[*exit].value("code", -1), 0);
  EXPECT_GT(r.records[*exit].value("cow_copies", 0u), 0u) << "busybox's forks share pages copy-on-write";
  // exec maps busybox's pages from the file's frames: only the partial
  // pages of its segments are copied (a few per exec, never the ~500
  // pages of its image).
  const uint64_t shared = r.records[*exit].value("cow_frames_mapped", uint64_t{0});
  const uint64_t filled = r.records[*exit].value("exec_pages_filled", uint64_t{0});
  EXPECT_GT(shared, 10 * filled) << "exec shared " << shared << " file pages and copied " << filled;
  // Demand paging: the pages came through faults of busybox's file VMAs.
  const uint64_t file_faults = r.records[*exit].value("file_faults", uint64_t{0});
  if (std::string_view(GetParam().file_map) == "demand")
    EXPECT_GT(file_faults, 0u);
  else
    EXPECT_EQ(file_faults, 0u) << "eager mapping leaves no file page to fault in";
  // What busybox asked for and pvk lacks: one record per number, however
  // many times it was called (rseq, at every glibc start, is one today).
  std::set<uint64_t> missing;
  for (const json& rec : r.records)
    if (rec.value("event", "") == "enosys")
      EXPECT_TRUE(missing.insert(rec.value("nr", uint64_t{0})).second) << "reported twice: " << rec.dump();
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(info.param.mmu) + (std::string_view(info.param.file_map) == "demand" ? "_demand" : "");
}

INSTANTIATE_TEST_SUITE_P(Native, Busybox,
                         ::testing::Values(Case{Platform::native, "native"}, Case{Platform::native, "native", "demand"}),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Xen, Busybox,
                         ::testing::Values(Case{Platform::xen, "batched"}, Case{Platform::xen, "direct"},
                                           Case{Platform::xen, "wrpt"}, Case{Platform::xen, "unhook"},
                                           Case{Platform::xen, "auto"}, Case{Platform::xen, "batched", "demand"}),
                         case_name);

}  // namespace
}  // namespace pvk::boot_test
