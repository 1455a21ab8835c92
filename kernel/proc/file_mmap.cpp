#include "kernel/proc/file_mmap.h"

#include "base/abi.h"
#include "kernel/fs/file_pages.h"
#include "kernel/proc/file.h"
#include "kernel/proc/process.h"
#include "mm/address_space.h"

namespace pvk {

// A private mapping of a file is demand-paged from it (mm/page_source.h):
// its pages are mapped copy-on-write when a fault touches them; holes and
// pages past the end read as zeros.
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
  return as.mmap(addr, len, prot, 0, fixed, fs::file_pages(node, offset / kPageSize));
}

}  // namespace pvk
