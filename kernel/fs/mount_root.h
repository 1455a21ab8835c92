// The root filesystem at boot: an empty tree, the loader's archive
// unpacked into it (if there is one), the standard nodes, and the
// archive's frames given back to the frame allocator.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace pvk {
struct BootInfo;
}

namespace pvk::fs {

struct MountReport {
  uint64_t archive_bytes = 0;
  uint64_t archive_frames_freed = 0;
  unsigned nodes = 0;
  uint64_t frames_held = 0;  // by the files' data
};

// False (with one line in `why`) when the archive is refused.
bool mount_root(const BootInfo& info, MountReport& report, char* why, size_t cap);

}  // namespace pvk::fs
