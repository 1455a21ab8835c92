#include "kernel/proc/file_mmap.h"

#include "base/abi.h"
#include "kernel/fs/ramfs.h"
#include "kernel/proc/file.h"
#include "kernel/proc/process.h"
#include "mm/address_space.h"

namespace pvk {

// The file's frames cannot change under this: mmap runs under the kernel
// lock, as do the writes and truncations that add or drop a file's frames.
ErrorOr<VirtAddr> mmap_file(File* f, VirtAddr addr, uint64_t len, uint32_t prot, bool shared, bool fixed,
                            uint64_t offset) {
  if (f->kind != File::Kind::Node) return Errno::ENODEV;
  fs::Inode* node = f->node;
  if ((f->flags & abi::O_ACCMODE) == abi::O_WRONLY) return Errno::EACCES;
  if (offset % kPageSize) return Errno::EINVAL;
  AddressSpace& as = *current()->as;
  if (node->device == fs::Device::Zero) return as.mmap(addr, len, prot, shared ? vm::Shared : 0, fixed);
  if (!node->is_reg()) return Errno::ENODEV;
  if (shared) return Errno::ENODEV;
  if (len > abi::kUserTop || offset > fs::kMaxFileSize) return len ? Errno::EOVERFLOW : Errno::EINVAL;
  const VirtAddr at = TRY(as.mmap(addr, len, prot, 0, fixed));
  const uint64_t pages = align_up(len, kPageSize) / kPageSize;
  const uint64_t first = offset / kPageSize;
  // Runs of present file pages, a chunk at a time; holes and pages past
  // the end are left to demand paging (zeros).
  Pfn chunk[64];
  for (uint64_t i = 0; i < pages;) {
    unsigned n = 0;
    for (; n < 64 && i + n < pages; ++n) {
      auto frame = fs::page_frame(node, first + i + n);
      if (frame.is_error()) break;
      chunk[n] = frame.value();
    }
    if (n == 0) {
      ++i;
      continue;
    }
    if (auto r = as.map_cow_frames(at + i * kPageSize, chunk, n, prot); r.is_error()) {
      must(as.munmap(at, len), "undo file mmap");
      return r.error();
    }
    i += n;
  }
  return at;
}

}  // namespace pvk
