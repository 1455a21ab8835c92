// sendfile(out_fd, in_fd, offset*, count): a regular file's bytes straight
// to another descriptor (a file, a pipe, the console), through one kernel
// page instead of the caller's memory. Linux's semantics and errors:
// EBADF for a descriptor not open, in_fd not readable or out_fd not
// writable; EINVAL for an in_fd that is not a regular file, an out_fd in
// append mode or a negative offset; EFAULT for an offset pointer that does
// not read or write back. With an offset pointer the bytes come from
// *offset, which is advanced, and in_fd's own offset stays; without one
// they come from in_fd's offset, which is advanced. A write cut short (a
// full file system, a signal while a pipe is full) returns what it moved.
#include "base/abi.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#include "kernel/fs/ramfs.h"
#include "kernel/proc/fs_calls.h"
#include "kernel/proc/syscall_result.h"
#include "kernel/proc/user_copy.h"

namespace pvk {
namespace {

using fscall::fd_get;

constexpr uint64_t kMaxRwCount = 0x7ffff000;  // Linux's MAX_RW_COUNT: the most one call moves

bool can_write(const File* f) {
  switch (f->kind) {
    case File::Kind::Console:
    case File::Kind::PipeWrite: return true;
    case File::Kind::Node: return (f->flags & abi::O_ACCMODE) != abi::O_RDONLY;
    default: return false;
  }
}

// Moves up to `count` bytes from `in` (a regular file) at *pos to `out`,
// a page at a time, advancing *pos by what was written.
ErrorOr<uint64_t> copy_file(File* in, File* out, uint64_t& pos, uint64_t count) {
  const Pfn page = TRY(frames().try_alloc());
  uint8_t* buf = phys_to_virt<uint8_t>(page);
  uint64_t done = 0;
  Errno error = Errno::Ok;
  while (done < count) {
    const uint64_t want = count - done < kPageSize ? count - done : kPageSize;
    auto got = fs::read_bytes(in->node, pos, buf, want);
    if (got.is_error()) {
      error = got.error();
      break;
    }
    if (got.value() == 0) break;  // the end of the file
    auto wrote = file_write_from(out, WriteSource::from_kernel(buf), got.value());
    if (wrote.is_error()) {
      error = wrote.error();
      break;
    }
    done += wrote.value();
    pos += wrote.value();
    if (wrote.value() < got.value()) break;
  }
  frames().must_free(page);
  if (!done && error != Errno::Ok) return error;
  return done;
}

int64_t sys_sendfile(const SyscallArgs& a) {
  const FileRef out = fd_get(a[0]);
  const FileRef in = fd_get(a[1]);
  if (!out || !in) return syscall_result(Errno::EBADF);
  File* src = in.get();
  File* dst = out.get();
  if (src->kind == File::Kind::Node && (src->flags & abi::O_ACCMODE) == abi::O_WRONLY)
    return syscall_result(Errno::EBADF);
  if (src->kind == File::Kind::PipeWrite) return syscall_result(Errno::EBADF);
  if (!can_write(dst)) return syscall_result(Errno::EBADF);
  if (src->kind != File::Kind::Node || !src->node->is_reg() || src->node->device != fs::Device::None)
    return syscall_result(Errno::EINVAL);
  if (dst->kind == File::Kind::Node && (dst->flags & abi::O_APPEND)) return syscall_result(Errno::EINVAL);
  const uint64_t offset_ptr = a[2];
  uint64_t pos = src->pos;
  if (offset_ptr) {
    int64_t off = 0;
    if (auto r = copy_from_user(&off, offset_ptr, sizeof off); r.is_error()) return syscall_result(r.error());
    if (off < 0) return syscall_result(Errno::EINVAL);
    pos = static_cast<uint64_t>(off);
  }
  const uint64_t count = a[3] < kMaxRwCount ? a[3] : kMaxRwCount;
  auto moved = count ? copy_file(src, dst, pos, count) : ErrorOr<uint64_t>(uint64_t{0});
  if (moved.is_error()) return syscall_result(moved.error());
  if (offset_ptr) {
    const int64_t now = static_cast<int64_t>(pos);
    if (auto r = copy_to_user(offset_ptr, &now, sizeof now); r.is_error()) return syscall_result(r.error());
  } else {
    src->pos = pos;
  }
  return static_cast<int64_t>(moved.value());
}

}  // namespace

bool sendfile_call(uint64_t nr, const SyscallArgs& a, int64_t& ret) {
  if (nr != abi::SYS_sendfile) return false;
  ret = sys_sendfile(a);
  return true;
}

}  // namespace pvk
