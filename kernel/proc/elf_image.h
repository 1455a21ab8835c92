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
  unsigned count = 0;
  ElfSegment segments[kMaxSegments] = {};
};

// Checks that image[0, size) is an x86-64 ET_EXEC whose loadable segments
// lie, page-aligned and non-overlapping, in [kUserBase, kUserMmapBase), with
// every file range inside the image and the entry point in an executable
// segment. ENOEXEC for anything malformed, E2BIG for more loadable segments
// than kMaxSegments. Never reads outside the buffer (any alignment).
ErrorOr<void> parse_elf_image(const uint8_t* image, size_t size, ElfImage& out);

}  // namespace pvk
