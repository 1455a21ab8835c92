// Program image validation (kernel/proc/elf_image.{h,cpp}), the part of
// execve that reads untrusted bytes.
#include "host_compat.h"  // first: see there

#include <elf.h>
#include <string.h>

#include <vector>

#include "kernel/proc/elf_image.h"

namespace pvk {
namespace {

// A minimal valid image: the header, n program headers, then file bytes.
struct Image {
  Elf64_Ehdr eh{};
  std::vector<Elf64_Phdr> ph;
  size_t body = 64;

  Image() {
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_phoff = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_entry = 0x401000;
    ph.push_back(segment(0x401000, 0x100, PF_R | PF_X));
    ph.push_back(segment(0x402000, 0x3000, PF_R | PF_W));
  }
  Elf64_Phdr segment(uint64_t vaddr, uint64_t memsz, uint32_t flags) {
    Elf64_Phdr p{};
    p.p_type = PT_LOAD;
    p.p_vaddr = vaddr;
    p.p_memsz = memsz;
    p.p_flags = flags;
    p.p_offset = 0;
    p.p_filesz = 16;
    return p;
  }
  std::vector<uint8_t> bytes() {
    eh.e_phnum = static_cast<uint16_t>(ph.size());
    std::vector<uint8_t> b(sizeof eh + ph.size() * sizeof(Elf64_Phdr) + body, 0xcc);
    memcpy(b.data(), &eh, sizeof eh);
    if (!ph.empty()) memcpy(b.data() + sizeof eh, ph.data(), ph.size() * sizeof(Elf64_Phdr));
    return b;
  }
};

Errno parse(const std::vector<uint8_t>& b, ElfImage& out) {
  auto r = parse_elf_image(b.data(), b.size(), out);
  return r.is_error() ? r.error() : Errno::Ok;
}
Errno parse(Image& im) {
  ElfImage out;
  return parse(im.bytes(), out);
}

TEST(ElfImage, AValidImage) {
  Image im;
  ElfImage out;
  ASSERT_EQ(parse(im.bytes(), out), Errno::Ok);
  EXPECT_EQ(out.entry, 0x401000u);
  ASSERT_EQ(out.count, 2u);
  EXPECT_EQ(out.segments[1].vaddr, 0x402000u);
  EXPECT_EQ(out.segments[1].memsz, 0x3000u);
  EXPECT_EQ(out.brk_base, 0x405000u);
}

TEST(ElfImage, EveryTruncationIsENOEXEC) {
  Image im;
  std::vector<uint8_t> b = im.bytes();
  for (size_t n = 0; n < sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr); ++n) {
    // A copy of exactly n bytes, so ASan sees a read past it.
    std::vector<uint8_t> cut(b.begin(), b.begin() + static_cast<long>(n));
    ElfImage out;
    auto r = parse_elf_image(cut.data(), cut.size(), out);
    ASSERT_TRUE(r.is_error()) << n;
    EXPECT_EQ(r.error(), Errno::ENOEXEC) << n;
  }
  ElfImage out;
  EXPECT_EQ(parse_elf_image(nullptr, 0, out).error(), Errno::ENOEXEC);
}

TEST(ElfImage, BadHeaders) {
  const std::vector<std::function<void(Image&)>> breakers = {
      [](Image& i) { i.eh.e_ident[0] = 0; },
      [](Image& i) { i.eh.e_ident[EI_CLASS] = ELFCLASS32; },
      [](Image& i) { i.eh.e_ident[EI_DATA] = ELFDATA2MSB; },
      [](Image& i) { i.eh.e_ident[EI_VERSION] = 0; },
      [](Image& i) { i.eh.e_machine = EM_386; },
      [](Image& i) { i.eh.e_type = ET_DYN; },
      [](Image& i) { i.eh.e_phentsize = sizeof(Elf64_Phdr) - 1; },
      [](Image& i) { i.ph.clear(); },
      [](Image& i) { i.eh.e_phoff = 1u << 20; },
      // Found by review before the fuzzer ran: e_phoff + e_phnum * 56 wrapped
      // around and passed the bound, so exec read program headers anywhere.
      [](Image& i) { i.eh.e_phoff = ~uint64_t{0} - 16; },
      [](Image& i) { i.eh.e_entry = 0x402000; },     // not executable
      [](Image& i) { i.eh.e_entry = 0x401100; },     // just past the code
      [](Image& i) { i.eh.e_entry = 0x8000000000000000; },
  };
  for (size_t k = 0; k < breakers.size(); ++k) {
    Image im;
    breakers[k](im);
    EXPECT_EQ(parse(im), Errno::ENOEXEC) << "case " << k;
  }
}

TEST(ElfImage, BadSegments) {
  const std::vector<std::function<void(Elf64_Phdr&)>> breakers = {
      [](Elf64_Phdr& p) { p.p_filesz = p.p_memsz + 1; },
      [](Elf64_Phdr& p) { p.p_offset = 1u << 20; },
      [](Elf64_Phdr& p) { p.p_offset = ~uint64_t{0} - 8; },  // offset + filesz wraps
      [](Elf64_Phdr& p) { p.p_vaddr = abi::kUserBase - kPageSize; },
      [](Elf64_Phdr& p) { p.p_vaddr = abi::kUserMmapBase; },
      [](Elf64_Phdr& p) { p.p_vaddr = abi::kUserMmapBase - 0x1000, p.p_memsz = 0x1001; },
      [](Elf64_Phdr& p) { p.p_memsz = ~uint64_t{0}; },                 // vaddr + memsz wraps
      [](Elf64_Phdr& p) { p.p_vaddr = ~uint64_t{0} - 0xfff; },         // align_up wraps
      [](Elf64_Phdr& p) { p.p_vaddr = 0x401800, p.p_memsz = 0x100; },  // shares the code page
  };
  for (size_t k = 0; k < breakers.size(); ++k) {
    Image im;
    breakers[k](im.ph[1]);
    EXPECT_EQ(parse(im), Errno::ENOEXEC) << "case " << k;
  }
}

TEST(ElfImage, OtherSegmentsAreIgnored) {
  Image im;
  Elf64_Phdr note{};
  note.p_type = PT_NOTE;
  note.p_offset = ~uint64_t{0};  // never read
  im.ph.push_back(note);
  Elf64_Phdr empty = im.segment(0x500000, 0, PF_R);
  empty.p_offset = ~uint64_t{0};
  im.ph.push_back(empty);
  ElfImage out;
  ASSERT_EQ(parse(im.bytes(), out), Errno::Ok);
  EXPECT_EQ(out.count, 2u);
}

TEST(ElfImage, TooManySegmentsIsE2BIG) {
  Image im;
  for (unsigned i = 0; im.ph.size() <= ElfImage::kMaxSegments; ++i)
    im.ph.push_back(im.segment(0x600000 + i * 0x1000, 0x10, PF_R));
  EXPECT_EQ(parse(im), Errno::E2BIG);
  im.ph.pop_back();
  EXPECT_EQ(parse(im), Errno::Ok) << "exactly kMaxSegments";
}

TEST(ElfImage, UnalignedBuffer) {
  Image im;
  std::vector<uint8_t> b = im.bytes();
  std::vector<uint8_t> shifted(b.size() + 1);
  memcpy(shifted.data() + 1, b.data(), b.size());
  ElfImage out;
  EXPECT_FALSE(parse_elf_image(shifted.data() + 1, b.size(), out).is_error());
}

TEST(ElfImage, ADynamicExecutableIsRefusedAndSaysSo) {
  Image im;
  Elf64_Phdr interp{};
  interp.p_type = PT_INTERP;
  im.ph.insert(im.ph.begin(), interp);
  ElfImage out;
  EXPECT_EQ(parse(im.bytes(), out), Errno::ENOEXEC);
  EXPECT_TRUE(out.interp);
  ElfImage plain;
  Image ok;
  ASSERT_EQ(parse(ok.bytes(), plain), Errno::Ok);
  EXPECT_FALSE(plain.interp);
}

TEST(ElfImage, ASegmentNotCongruentWithItsFileOffsetIsENOEXEC) {
  Image im;
  im.ph[1].p_offset = 8;  // vaddr 0x402000, offset 8: no file page could back it
  EXPECT_EQ(parse(im), Errno::ENOEXEC);
  im.ph[1].p_offset = 0;
  im.ph[1].p_vaddr = 0x402008;  // both 8 into their page: fine (Linux's rule)
  im.ph[1].p_offset = 8;
  EXPECT_EQ(parse(im), Errno::Ok);
}

TEST(ElfImage, ProgramHeadersAddressForTheAuxiliaryVector) {
  Image im;
  im.ph[0].p_filesz = 0xb0;  // the text segment's file bytes start at offset 0: they hold the headers
  ElfImage out;
  ASSERT_EQ(parse(im.bytes(), out), Errno::Ok);
  EXPECT_EQ(out.phdr_vaddr, 0x401000u + sizeof(Elf64_Ehdr));
  EXPECT_EQ(out.phnum, 2u);
  Elf64_Phdr phdr{};
  phdr.p_type = PT_PHDR;
  phdr.p_vaddr = 0x401234;
  im.ph.insert(im.ph.begin(), phdr);
  ASSERT_EQ(parse(im.bytes(), out), Errno::Ok);
  EXPECT_EQ(out.phdr_vaddr, 0x401234u) << "PT_PHDR wins";
  EXPECT_EQ(out.phnum, 3u);
}

TEST(ElfImage, HeadersAloneAgainstTheFileSize) {
  // exec reads only the first page of a file: segments are checked against
  // the file's size, the program headers against the bytes read.
  Image im;
  im.ph[1].p_offset = 0x5000;
  im.ph[1].p_vaddr = 0x405000;
  im.ph[1].p_filesz = 0x1000;
  const std::vector<uint8_t> b = im.bytes();
  ElfImage out;
  EXPECT_FALSE(parse_elf_image(b.data(), b.size(), 0x6000, out).is_error());
  EXPECT_EQ(parse_elf_image(b.data(), b.size(), 0x5fff, out).error(), Errno::ENOEXEC) << "file bytes past its end";
  EXPECT_EQ(parse_elf_image(b.data(), sizeof(Elf64_Ehdr) + 8, 0x6000, out).error(), Errno::ENOEXEC)
      << "headers past what was read";
  EXPECT_EQ(parse_elf_image(b.data(), b.size(), b.size() - 1, out).error(), Errno::ENOEXEC)
      << "more bytes read than the file has";
}

}  // namespace
}  // namespace pvk
