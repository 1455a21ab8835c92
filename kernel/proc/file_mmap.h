// mmap of a file: a private mapping of a regular file of the root
// filesystem, its pages the file's own frames mapped copy-on-write (a write
// gives the page a copy; the file never sees it), as Linux maps a file
// from its page cache.
#pragma once
#include <stdint.h>

#include "base/lib/error_or.h"
#include "base/lib/types.h"

namespace pvk {

struct File;

// Linux's checks and errors: EACCES for a file not open for reading,
// ENODEV for what cannot be mapped (a pipe, the console, a directory; and
// MAP_SHARED of a file, which this kernel does not do), EINVAL for an
// offset off a page boundary, EOVERFLOW past the largest offset. /dev/zero
// maps as anonymous memory. Pages past the file's end are demand-zero
// (Linux raises SIGBUS there).
ErrorOr<VirtAddr> mmap_file(File* f, VirtAddr addr, uint64_t len, uint32_t prot, bool shared, bool fixed,
                            uint64_t offset);

}  // namespace pvk
