// libFuzzer target: program-image validation (kernel/proc/elf_image.cpp),
// the part of execve that reads an untrusted ELF. The input is copied into a
// buffer of exactly its size, so ASan flags any read past it; an accepted
// image is checked against what exec then relies on.
// abi.h first: it spells its constants like the C library's macros, so it
// must be parsed before any header that defines them (tests/host/host_compat.h).
#include "base/abi.h"
#include "kernel/proc/elf_image.h"

#include <elf.h>
#include <stdint.h>
#include <string.h>

#include <vector>

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();  // a crash libFuzzer reports with the input
}

void check_accepted(const pvk::ElfImage& im, size_t size) {
  check(im.count >= 1 && im.count <= pvk::ElfImage::kMaxSegments);
  bool entry_in_code = false;
  for (unsigned i = 0; i < im.count; ++i) {
    const pvk::ElfSegment& s = im.segments[i];
    check(s.memsz > 0 && s.filesz <= s.memsz);
    check(s.offset <= size && s.filesz <= size - s.offset);
    check(s.vaddr >= pvk::abi::kUserBase && s.vaddr + s.memsz <= pvk::abi::kUserMmapBase);
    const uint64_t end = (s.vaddr + s.memsz + 0xfff) & ~uint64_t{0xfff};
    check(end <= im.brk_base);
    for (unsigned j = 0; j < i; ++j) {
      const pvk::ElfSegment& t = im.segments[j];
      const uint64_t t_end = (t.vaddr + t.memsz + 0xfff) & ~uint64_t{0xfff};
      check((s.vaddr & ~uint64_t{0xfff}) >= t_end || (t.vaddr & ~uint64_t{0xfff}) >= end);
    }
    if ((s.flags & PF_X) && im.entry >= s.vaddr && im.entry < s.vaddr + s.memsz) entry_in_code = true;
  }
  check(entry_in_code);
  check(im.brk_base <= pvk::abi::kUserMmapBase);
}

}  // namespace

namespace pvk {
// error_or.h declares it; the validation never calls it.
[[noreturn]] void panic(const char*, ...) { __builtin_trap(); }
}  // namespace pvk

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> image(data, data + size);
  pvk::ElfImage out;
  auto r = pvk::parse_elf_image(image.data(), image.size(), out);
  if (!r.is_error())
    check_accepted(out, size);
  else
    check(r.error() == pvk::Errno::ENOEXEC || r.error() == pvk::Errno::E2BIG);
  return 0;
}
