#include "kernel/proc/mm_calls.h"

#include "base/abi.h"
#include "kernel/proc/file.h"
#include "kernel/proc/file_mmap.h"
#include "kernel/proc/fs_calls.h"
#include "kernel/proc/process.h"
#include "kernel/proc/syscall_result.h"
#include "mm/address_space.h"

namespace pvk {
namespace {

using Args = uint64_t[6];

// mmap's flags and protection, checked alike for both kinds of mapping.
bool mmap_args_valid(const Args& a) {
  const uint64_t prot = a[2], flags = a[3];
  const bool shared = flags & abi::MAP_SHARED, priv = flags & abi::MAP_PRIVATE;
  return shared != priv && !(prot & ~uint64_t{7});
}

int64_t sys_mmap(const Args& a) {
  if (!mmap_args_valid(a)) return syscall_result(Errno::EINVAL);
  const uint64_t prot = a[2], flags = a[3];
  const bool shared = flags & abi::MAP_SHARED;
  if (!(flags & abi::MAP_ANONYMOUS)) {
    const FileRef f = fscall::fd_get(a[4]);
    if (!f) return syscall_result(Errno::EBADF);
    return syscall_result(
        mmap_file(f.get(), VirtAddr{a[0]}, a[1], static_cast<uint32_t>(prot), shared, flags & abi::MAP_FIXED, a[5]));
  }
  return syscall_result(current()->as->mmap(VirtAddr{a[0]}, a[1], static_cast<uint32_t>(prot),
                                            shared ? vm::Shared : 0, flags & abi::MAP_FIXED));
}

}  // namespace

bool mm_call(uint64_t nr, const Args& a, int64_t& ret, bool unlocked) {
  switch (nr) {
    case abi::SYS_mmap:
      // A file's mapping looks its descriptor up: the file table is the
      // kernel lock's (a bad mapping is refused either way).
      if (unlocked && !(a[3] & abi::MAP_ANONYMOUS) && mmap_args_valid(a)) return false;
      ret = sys_mmap(a);
      return true;
    case abi::SYS_mprotect: ret = mprotect_call(*current()->as, a[0], a[1], a[2]); return true;
    case abi::SYS_munmap: ret = munmap_call(*current()->as, a[0], a[1]); return true;
    case abi::SYS_brk: ret = syscall_result(current()->as->brk(VirtAddr{a[0]})); return true;
    default: return false;
  }
}

}  // namespace pvk
