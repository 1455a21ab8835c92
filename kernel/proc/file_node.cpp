// Reads and writes of root-filesystem nodes through a File: regular files
// at the File's offset (or an explicit one), /dev/null and /dev/zero.
// Bytes cross straight between the file's frames and user memory; the
// File's reference keeps the node, and the kernel lock (held across the
// whole call: a fault in a user copy is handled in place) keeps every
// other call from shrinking the file meanwhile.
#include "base/abi.h"
#include "kernel/fs/ramfs.h"
#include "kernel/proc/file.h"
#include "kernel/proc/user_copy.h"

namespace pvk {
namespace {

ErrorOr<void> to_user(void* ctx, uint64_t done, const void* src, size_t n) {
  return copy_to_user(*static_cast<uint64_t*>(ctx) + done, src, n);
}
ErrorOr<void> from_source(void* ctx, uint64_t done, void* dst, size_t n) {
  return static_cast<const WriteSource*>(ctx)->copy(dst, done, n);
}

bool readable(const File* f) { return (f->flags & abi::O_ACCMODE) != abi::O_WRONLY; }
bool writable(const File* f) { return (f->flags & abi::O_ACCMODE) != abi::O_RDONLY; }

ErrorOr<uint64_t> read_at(File* f, uint64_t user_buf, uint64_t len, uint64_t offset) {
  fs::Inode* n = f->node;
  if (!readable(f)) return Errno::EBADF;
  if (!len) return uint64_t{0};
  if (!user_range_ok(user_buf, len)) return Errno::EFAULT;
  switch (n->device) {
    case fs::Device::Null: return uint64_t{0};
    case fs::Device::Zero: {
      static const uint8_t zeros[256] = {};
      uint64_t done = 0;
      while (done < len) {
        const uint64_t chunk = len - done < sizeof zeros ? len - done : sizeof zeros;
        if (auto r = copy_to_user(user_buf + done, zeros, chunk); r.is_error()) return done ? ErrorOr<uint64_t>(done) : r.error();
        done += chunk;
      }
      return done;
    }
    case fs::Device::Console: return uint64_t{0};
    case fs::Device::None: break;
  }
  if (n->is_dir()) return Errno::EISDIR;
  if (!n->is_reg()) return Errno::EINVAL;
  return fs::read(n, offset, len, &to_user, &user_buf);
}

ErrorOr<uint64_t> write_at(File* f, WriteSource src, uint64_t len, uint64_t offset) {
  fs::Inode* n = f->node;
  if (!writable(f)) return Errno::EBADF;
  if (!len) return uint64_t{0};
  if (!src.range_ok(len)) return Errno::EFAULT;
  if (n->device != fs::Device::None) return len;  // null and zero take everything
  if (n->is_dir()) return Errno::EISDIR;
  if (!n->is_reg()) return Errno::EINVAL;
  return fs::write(n, offset, len, &from_source, &src);
}

}  // namespace

ErrorOr<uint64_t> node_read(File* f, uint64_t user_buf, uint64_t len) {
  const uint64_t done = TRY(read_at(f, user_buf, len, f->pos));
  f->pos += done;
  return done;
}

ErrorOr<uint64_t> node_write(File* f, WriteSource src, uint64_t len) {
  if (f->flags & abi::O_APPEND) f->pos = f->node->size;
  const uint64_t done = TRY(write_at(f, src, len, f->pos));
  f->pos += done;
  return done;
}

ErrorOr<uint64_t> file_pread(File* f, uint64_t user_buf, uint64_t len, uint64_t offset) {
  if (f->kind != File::Kind::Node) return Errno::ESPIPE;  // the console and pipes have no offset
  if (static_cast<int64_t>(offset) < 0) return Errno::EINVAL;
  return read_at(f, user_buf, len, offset);
}

ErrorOr<uint64_t> file_pwrite(File* f, uint64_t user_buf, uint64_t len, uint64_t offset) {
  if (f->kind != File::Kind::Node) return Errno::ESPIPE;
  if (static_cast<int64_t>(offset) < 0) return Errno::EINVAL;
  return write_at(f, WriteSource::from_user(user_buf), len, offset);
}

}  // namespace pvk
