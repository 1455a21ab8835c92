// A shell nobody here wrote: Debian's bash-static (/bin/bash-static of the
// build host) runs a script on pvk, natively and under every Xen backend,
// and what it prints must be byte for byte what the same bash prints on
// the host for the same script (with an empty environment on both sides).
// The script uses bash's own features (arrays, associative arrays,
// arithmetic, recursive functions, parameter expansion, here-documents,
// `$(...)`, subshells, loops, `case`, `trap`, `wait`, redirections to
// files and descriptors, a `#!/bin/bash` script) and busybox's applets
// from the same tree as its external commands. The boot's leak check must
// hold, and no `enosys` number may be reported twice.
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

constexpr const char* kBash = "/bin/bash-static";
constexpr const char* kBusybox = "/bin/busybox";

// $1 is a directory the script may write (pvk's /tmp; a fresh one on the
// host) and leaves empty, $2 the tree's root (its bin/ is the script's
// PATH); nothing printed depends on either.
constexpr const char* kScript = R"SH(D=$1 R=$2
PATH=$R/bin
echo "start $# ${BASH_VERSINFO[0]}"
name=world
declare -a arr=(one "two words" three)
arr+=(four)
echo "hello $name, ${#arr[@]} items: ${arr[1]} / ${arr[*]:2}"
declare -A map=([k1]=v1 [k2]=v2)
for k in $(printf '%s\n' "${!map[@]}" | busybox sort); do echo "$k=${map[$k]}"; done
echo "arith $(( (7 * 6) % 5 + 2 ** 10 )) $((0x10 | 3))"
let "n = 5 << 2"; echo "let $n"
fact() { local k=$1; if (( k <= 1 )); then echo 1; else echo $(( k * $(fact $((k - 1))) )); fi; }
echo "fact $(fact 6)"
s="Hello, Bash"
echo "${s,,} ${s^^} ${s/Bash/pvk} ${s:7} ${#s}"
for i in 3 1 2; do echo "line $i"; done > "$D/lines"
busybox sort "$D/lines"
busybox sort -r < "$D/lines" | busybox head -n 2
cat_() { while IFS= read -r l; do echo "read: $l"; done; }
cat_ < "$D/lines"
busybox cat > "$D/doc" <<EOT
a here-document
with $name expanded
EOT
busybox wc -l < "$D/doc"
busybox sha256sum < "$D/doc"
x=$(echo hello | busybox wc -c)
echo "wc says $x"
here=$PWD
( cd "$D" && echo "subshell in a dir: $(busybox ls | busybox tr '\n' ' ')" )
[[ $PWD == "$here" ]] && echo "cwd unchanged"
i=0; until [[ $i -ge 4 ]]; do ((i++)); done; echo "until $i"
case "$s" in H*) echo "case H";; *) echo "case other";; esac
trap 'echo trapped USR1' USR1
kill -USR1 $$
busybox sleep 0 & wait $!
echo "waited $?"
{ echo a; echo b; } | { read -r one; read -r two; echo "group $two$one"; }
false || echo "false failed as it should"
echo abc | busybox tr a-c x-z | busybox sed 's/z/!/'
printf '%05d|%-4s|%x\n' 42 ab 255
set -- p q r; shift; echo "args $# $*"
exec 3> "$D/fd3"; echo "via fd 3" >&3; exec 3>&-; busybox cat "$D/fd3"
echo "exit of subshell: $(exit 7; echo no) $?"
"$R/bin/greet" one "two three"
echo "greet said $?"
busybox rm "$D/lines" "$D/doc" "$D/fd3"
trap 'echo bye from EXIT' EXIT
echo done
)SH";

std::string host_output(const fs::path& script, const fs::path& tmp) {
  const std::string cmd = fmt::format("env -i {} {} {} {} 2>&1", kBash, script.string(), tmp.string(),
                                      script.parent_path().string());
  return host_command_output(cmd);
}

struct Case {
  Platform platform;
  const char* mmu;  // the backend (native: the only one)
};

class Bash : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    for (const char* tool : {kBash, kBusybox})
      if (!fs::exists(tool)) GTEST_SKIP() << tool << " is missing: tools/pvk's bootstrap installs bash-static and busybox-static";
    dir_ = fs::temp_directory_path() / fmt::format("pvk-bash-{}-{}", ::getpid(), GetParam().mmu);
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tree/bin");
    fs::create_directories(dir_ / "hosttmp");
    fs::copy_file(kBash, dir_ / "tree/bin/bash");
    fs::copy_file(kBusybox, dir_ / "tree/bin/busybox");
    std::ofstream(dir_ / "tree/script.sh") << kScript;
    std::ofstream(dir_ / "tree/bin/greet") << "#!/bin/bash\necho \"greet: $# $*\"\nexit 3\n";
    fs::permissions(dir_ / "tree/bin/greet", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(Bash, AScriptPrintsWhatItPrintsOnTheHost) {
  const std::string expected = host_output(dir_ / "tree/script.sh", dir_ / "hosttmp");
  ASSERT_NE(expected.find("done\nbye from EXIT\n"), std::string::npos) << "the host's bash did not finish: " << expected;
  ASSERT_TRUE(fs::is_empty(dir_ / "hosttmp"));
  const fs::path archive = dir_ / "rootfs.cpio";
  std::ofstream(archive, std::ios::binary) << cpio_pack_directory(dir_ / "tree");
  const RunResult r = boot_with_initrd(
      GetParam().platform, fmt::format("mmu={} init=/bin/bash init_args=/script.sh,/tmp,/", GetParam().mmu), archive);
  EXPECT_EQ(guest_output(r), expected) << transcript(r);
  ASSERT_TRUE(r.pass) << transcript(r);
  const auto exit = find_record(r, "init_exit");
  ASSERT_TRUE(exit) << transcript(r);
  EXPECT_EQ(r.records[*exit].value("code", -1), 0);
  // What bash and busybox asked for and pvk lacks: one record per number,
  // and only the calls they carry on without (rseq at glibc's start,
  // socket for glibc's name service): every other call this script makes
  // is implemented (busybox's cat uses sendfile).
  const std::set<uint64_t> allowed = {334, 41};
  std::set<uint64_t> missing;
  for (const json& rec : r.records)
    if (rec.value("event", "") == "enosys") {
      const uint64_t nr = rec.value("nr", uint64_t{0});
      EXPECT_TRUE(missing.insert(nr).second) << "reported twice: " << rec.dump();
      EXPECT_TRUE(allowed.count(nr)) << "bash or busybox needed a call pvk lacks: " << rec.dump();
    }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.mmu; }

INSTANTIATE_TEST_SUITE_P(Native, Bash, ::testing::Values(Case{Platform::native, "native"}), case_name);
INSTANTIATE_TEST_SUITE_P(Xen, Bash,
                         ::testing::Values(Case{Platform::xen, "batched"}, Case{Platform::xen, "direct"},
                                           Case{Platform::xen, "wrpt"}, Case{Platform::xen, "unhook"},
                                           Case{Platform::xen, "auto"}),
                         case_name);

}  // namespace
}  // namespace pvk::boot_test
