#include "kernel/fs/mount_root.h"

#include "base/boot_info.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#include "kernel/fs/ramfs.h"
#include "kernel/fs/unpack.h"

namespace pvk::fs {

bool mount_root(const BootInfo& info, MountReport& report, char* why, size_t cap) {
  init();
  bool ok = true;
  if (info.initrd_bytes) {
    const uint8_t* bytes = phys_to_virt<uint8_t>(Pfn{info.initrd_paddr >> kPageShift}) + (info.initrd_paddr & (kPageSize - 1));
    report.archive_bytes = info.initrd_bytes;
    ok = unpack_archive(bytes, info.initrd_bytes, why, cap);
    // The archive's own frames go back: the whole pages it covers (a
    // partial first page may share its frame with what the loader put
    // before it, so it stays reserved).
    const uint64_t first = (info.initrd_paddr + kPageSize - 1) >> kPageShift;
    const uint64_t end = (info.initrd_paddr + info.initrd_bytes + kPageSize - 1) >> kPageShift;
    for (uint64_t p = first; p < end; ++p)
      if (!frames().try_free(Pfn{p}).is_error()) ++report.archive_frames_freed;
  } else {
    ok = add_standard_nodes(why, cap);
  }
  report.nodes = inodes_in_use();
  report.frames_held = frames_held();
  return ok;
}

}  // namespace pvk::fs
