// Validating a program image (a static ELF64 executable) before exec loads
// it. Pure: it reads only the bytes it is given and uses no kernel service,
// so host tests and the libFuzzer target run exactly this code.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/lib/error_or.h"

namespace pvk {

struct ElfSegment {
  uint64_t vaddr, memsz;    // where it goes; memsz > 0
  uint64_t offset, filesz;  // the file bytes that start it: inside the image, filesz <= memsz
  uint32_t flags;           // PF_R | PF_W | PF_X
};

struct ElfImage {
  static constexpr unsigned kMaxSegments = 16;
  uint64_t entry = 0;     // inside an executable segment
  uint64_t brk_base = 0;  // the page after the highest segment
  // Where the program headers are once loaded (AT_PHDR: glibc's static
  // startup finds its TLS segment through them), 0 if no segment holds them.
  uint64_t phdr_vaddr = 0;
  unsigned phnum = 0;
  bool interp = false;  // it asked for a dynamic loader (PT_INTERP): refused, and said so
  unsigned count = 0;
  ElfSegment segments[kMaxSegments] = {};
};

// Checks that a file of `file_size` bytes, whose first `header_len` bytes
// are `header`, is an x86-64 ET_EXEC whose loadable segments lie, without
// sharing a page, in [kUserBase, kUserMmapBase), each at an address
// congruent to its file offset modulo the page size (so a page of the file
// can back a page of the segment), with every file range inside the file,
// the program headers inside `header`, and the entry point in an executable
// segment. ENOEXEC for anything malformed and for a dynamic executable
// (PT_INTERP: `interp` says which), E2BIG for more loadable segments than
// kMaxSegments. Never reads outside the buffer (any alignment).
ErrorOr<void> parse_elf_image(const uint8_t* header, size_t header_len, uint64_t file_size, ElfImage& out);
// A whole image in memory.
inline ErrorOr<void> parse_elf_image(const uint8_t* image, size_t size, ElfImage& out) {
  return parse_elf_image(image, size, size, out);
}

}  // namespace pvk
