// Hostile execve (docs/linux-programs.md): the test crafts bad files on the
// host — a directory, text, ELF files cut short, with overlapping
// segments, a segment in the kernel's half, a wrapping segment, an entry
// outside the code, a dynamic executable, scripts naming them — packs them
// with a good ELF built the same way, and boots init=exectest
// (tests/user/exectest.cpp), which checks each refusal's errno, that bad
// argv/envp pointers are EFAULT and Linux's size limits E2BIG, that it is
// intact after each, and ends with an exec of large arguments that works.
// The boot's leak check must hold: a refused exec keeps no frame.
#include "boot_support.hpp"

#include "pvk/cpio.hpp"

#include <fmt/format.h>

#include <elf.h>

#include <cstring>
#include <fstream>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace pvk::boot_test {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kBase = 0x400000;
// mov $60, %eax; mov $42, %edi; syscall: exit(42).
constexpr unsigned char kExit42[] = {0xb8, 0x3c, 0, 0, 0, 0xbf, 0x2a, 0, 0, 0, 0x0f, 0x05};

Elf64_Phdr load(uint64_t offset, uint64_t vaddr, uint64_t filesz, uint64_t memsz, uint32_t flags) {
  Elf64_Phdr ph{};
  ph.p_type = PT_LOAD;
  ph.p_offset = offset;
  ph.p_vaddr = ph.p_paddr = vaddr;
  ph.p_filesz = filesz;
  ph.p_memsz = memsz;
  ph.p_flags = flags;
  ph.p_align = 0x1000;
  return ph;
}

// A static x86-64 executable: the header, the program headers, then the
// code; the file is `size` bytes (0: just what it holds). The first
// segment, if it is left at its default, maps the whole file at kBase.
struct Elf {
  std::vector<Elf64_Phdr> phdrs;
  uint64_t entry = 0;  // 0: the code's address
  size_t size = 0;
  uint16_t phnum_claimed = 0;  // 0: phdrs.size()

  size_t code_offset() const { return sizeof(Elf64_Ehdr) + phdrs.size() * sizeof(Elf64_Phdr); }
  std::string bytes() const {
    std::string out(std::max(size, code_offset() + sizeof kExit42), '\0');
    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_entry = entry ? entry : kBase + code_offset();
    eh.e_phoff = sizeof eh;
    eh.e_ehsize = sizeof eh;
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = phnum_claimed ? phnum_claimed : static_cast<uint16_t>(phdrs.size());
    std::memcpy(out.data(), &eh, sizeof eh);
    for (size_t i = 0; i < phdrs.size(); ++i)
      std::memcpy(out.data() + sizeof eh + i * sizeof(Elf64_Phdr), &phdrs[i], sizeof(Elf64_Phdr));
    std::memcpy(out.data() + code_offset(), kExit42, sizeof kExit42);
    return out;
  }
};

// One PT_LOAD covering the file (its size known once the headers are).
Elf good(unsigned extra_phdrs = 0) {
  Elf e;
  e.phdrs.resize(1 + extra_phdrs);
  const uint64_t size = e.code_offset() + sizeof kExit42;
  e.phdrs[0] = load(0, kBase, size, size, PF_R | PF_X);
  return e;
}

void write_file(const fs::path& p, const std::string& data, unsigned mode) {
  std::ofstream(p, std::ios::binary) << data;
  ASSERT_EQ(::chmod(p.c_str(), mode), 0) << p;
}

struct Case {
  Platform platform;
  const char* mmu;
};

class Exec : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("pvk-exec-{}-{}", ::getpid(), GetParam().mmu);
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tree/bad/dir");
    const fs::path bad = dir_ / "tree/bad";
    write_file(bad / "good", good().bytes(), 0755);
    write_file(bad / "noexec", good().bytes(), 0644);
    write_file(bad / "text", "just some words, no #! and no ELF\n", 0755);
    write_file(bad / "empty", "", 0755);
    write_file(bad / "truncated", good().bytes().substr(0, 40), 0755);
    Elf short_phdrs = good();
    short_phdrs.phnum_claimed = 3;  // two of them past the end of the file
    write_file(bad / "short_phdrs", short_phdrs.bytes(), 0755);
    Elf short_segment = good();
    short_segment.phdrs[0].p_filesz = short_segment.phdrs[0].p_memsz = 0x10000;
    write_file(bad / "short_segment", short_segment.bytes(), 0755);
    Elf overlap = good(1);  // a second segment in the first one's page
    overlap.phdrs[1] = load(0x800, kBase + 0x800, 0x100, 0x100, PF_R | PF_W);
    overlap.size = 0x1000;
    write_file(bad / "overlap", overlap.bytes(), 0755);
    Elf kernel = good(1);  // a second segment in the kernel's half
    kernel.phdrs[1] = load(0, 0xffff800000000000, 0x100, 0x1000, PF_R | PF_W);
    write_file(bad / "kernel", kernel.bytes(), 0755);
    Elf wrap = good(1);  // memsz runs past the top of the address space
    wrap.phdrs[1] = load(0, 0x800000, 0x100, ~uint64_t{0} - 0x7fffff, PF_R | PF_W);
    write_file(bad / "wrap", wrap.bytes(), 0755);
    Elf entry = good();
    entry.entry = 0xdead0000;
    write_file(bad / "entry", entry.bytes(), 0755);
    Elf dynamic = good(1);
    dynamic.phdrs[1] = Elf64_Phdr{};
    dynamic.phdrs[1].p_type = PT_INTERP;
    dynamic.phdrs[1].p_offset = dynamic.code_offset();
    dynamic.phdrs[1].p_filesz = 1;
    write_file(bad / "dynamic", dynamic.bytes(), 0755);
    write_file(bad / "script_to_dynamic", "#!/bad/dynamic\n", 0755);
    write_file(bad / "script_loop", "#!/bad/script_to_dynamic arg\n", 0755);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(Exec, HostileExecsFailCleanlyAndLargeArgumentsWork) {
  const fs::path archive = dir_ / "rootfs.cpio";
  std::ofstream(archive, std::ios::binary) << cpio_pack_directory(dir_ / "tree");
  const RunResult r = boot_with_initrd(GetParam().platform, fmt::format("mmu={} init=exectest", GetParam().mmu), archive);
  ASSERT_TRUE(r.pass) << transcript(r);  // the leak check among others
  const auto checks = find_record(r, "exectest");
  ASSERT_TRUE(checks) << transcript(r);
  EXPECT_EQ(r.records[*checks].value("failures", 1u), 0u) << transcript(r);
  EXPECT_GT(r.records[*checks].value("checks", 0u), 70u) << transcript(r);
  // The last exec: hello with a 128 KiB argument and 2000 more.
  const auto hello = find_record(r, "hello");
  ASSERT_TRUE(hello) << transcript(r);
  EXPECT_EQ(r.records[*hello].value("argc", 0u), 2002u) << transcript(r);
  // The dynamic executable: directly (twice: once with a second thread)
  // and as a script's interpreter.
  unsigned refused = 0;
  for (const json& rec : r.records)
    if (rec.value("event", "") == "exec_refused" && rec.value("path", "") == "/bad/dynamic") ++refused;
  EXPECT_EQ(refused, 3u) << transcript(r);
  const auto exit = find_record(r, "init_exit");
  ASSERT_TRUE(exit) << transcript(r);
  EXPECT_EQ(r.records[*exit].value("code", -1), 0);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.mmu; }

INSTANTIATE_TEST_SUITE_P(Native, Exec, ::testing::Values(Case{Platform::native, "native"}), case_name);
INSTANTIATE_TEST_SUITE_P(Xen, Exec, ::testing::Values(Case{Platform::xen, "batched"}), case_name);

}  // namespace
}  // namespace pvk::boot_test
