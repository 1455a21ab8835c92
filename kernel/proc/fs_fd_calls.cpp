// System calls on descriptors: fstat, getdents64, lseek, pread64/pwrite64,
// ftruncate, fchdir, ioctl (a terminal's answers on the console), fcntl,
// dup, dup3, pipe2 (kernel/proc/fs_calls.h).
#include "base/abi.h"
#include "base/lib/kstring.h"
#include "kernel/fs/ramfs.h"
#include "kernel/proc/fd_table.h"
#include "kernel/proc/fs_calls.h"
#include "kernel/proc/process.h"
#include "kernel/proc/syscall_result.h"
#include "kernel/proc/user_copy.h"

namespace pvk {
namespace fscall {

int64_t result(Errno e) { return syscall_result(e); }

File** fd_table() { return current()->leader->fds; }

FileRef fd_get(uint64_t fd) { return FileRef::adopt(fd_hold(*current()->leader, fd)); }

// Atomic: a close of a pipe end clears its bit without the kernel lock
// (kernel/proc/fd_table.h).
void set_cloexec(unsigned fd, bool on) {
  uint32_t& bits = current()->leader->cloexec;
  if (on)
    __atomic_fetch_or(&bits, 1u << fd, __ATOMIC_RELAXED);
  else
    __atomic_fetch_and(&bits, ~(1u << fd), __ATOMIC_RELAXED);
}

ErrorOr<int> install(File* f, bool cloexec, unsigned min) {
  File** table = fd_table();
  for (unsigned fd = min; fd < Process::kMaxFds; ++fd) {
    if (table[fd]) continue;
    fd_swap(*current()->leader, fd, f, cloexec);  // was empty
    return static_cast<int>(fd);
  }
  return Errno::EMFILE;
}

void close_on_exec() {
  Process& p = *current()->leader;
  for (unsigned fd = 0; fd < Process::kMaxFds; ++fd)
    if (p.cloexec & (1u << fd))
      if (File* f = fd_swap(p, fd, nullptr, false)) file_put(f);
  p.cloexec = 0;
}

void fill_stat(const File* f, abi::Stat& st) {
  st = abi::Stat{};
  st.st_blksize = 4096;
  if (f->kind != File::Kind::Node) {
    // The console is a terminal (5:1, as /dev/console); pipes are FIFOs.
    st.st_dev = 2;
    st.st_nlink = 1;
    st.st_mode = f->kind == File::Kind::Console ? abi::S_IFCHR | 0620 : abi::S_IFIFO | 0600;
    st.st_rdev = f->kind == File::Kind::Console ? (5 << 8 | 1) : 0;
    st.st_ino = reinterpret_cast<uint64_t>(f->kind == File::Kind::Console ? nullptr : f->pipe) & 0xffffff;
    return;
  }
  const fs::Inode* n = f->node;
  st.st_dev = 1;  // the root filesystem
  st.st_ino = n->ino;
  st.st_nlink = n->nlink;
  st.st_mode = n->mode;
  st.st_uid = n->uid;
  st.st_gid = n->gid;
  st.st_rdev = n->rdev;
  st.st_size = static_cast<int64_t>(n->size);
  st.st_blocks = static_cast<int64_t>(n->frames * (4096 / 512));
  st.st_atime = n->atime;
  st.st_mtime = n->mtime;
  st.st_ctime = n->ctime;
}

}  // namespace fscall

namespace {

using namespace fscall;

int64_t ok(const ErrorOr<uint64_t>& r) { return r.is_error() ? result(r.error()) : static_cast<int64_t>(r.value()); }
int64_t ok(const ErrorOr<void>& r) { return r.is_error() ? result(r.error()) : 0; }

int64_t sys_fstat(const SyscallArgs& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  abi::Stat st;
  fill_stat(f.get(), st);
  return ok(copy_to_user(a[1], &st, sizeof st));
}

uint8_t dirent_type(const fs::Inode* n) {
  switch (n->type()) {
    case fs::kDir: return abi::DT_DIR;
    case fs::kRegular: return abi::DT_REG;
    case fs::kSymlink: return abi::DT_LNK;
    case fs::kCharDev: return abi::DT_CHR;
    default: return 0;
  }
}

// Records from the File's position: 0 is ".", 1 "..", k + 2 the k-th name.
int64_t sys_getdents64(const SyscallArgs& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  File* file = f.get();
  if (file->kind != File::Kind::Node || !file->node->is_dir()) return result(Errno::ENOTDIR);
  const uint64_t buf = a[1], cap = a[2];
  if (!user_range_ok(buf, cap)) return result(Errno::EFAULT);
  fs::Inode* dir = file->node;
  uint64_t used = 0;
  while (true) {
    const uint64_t pos = file->pos;
    const char* name;
    size_t len;
    const fs::Inode* node;
    if (pos == 0) name = ".", len = 1, node = dir;
    else if (pos == 1) name = "..", len = 2, node = dir->parent;
    else {
      const fs::Dirent* d = fs::nth_child(dir, pos - 2);
      if (!d) break;
      name = d->name, len = d->len, node = d->node;
    }
    const uint64_t reclen = (sizeof(abi::Dirent64) + len + 1 + 7) & ~uint64_t{7};
    if (used + reclen > cap) {
      if (!used) return result(Errno::EINVAL);  // not even one record fits
      break;
    }
    alignas(8) uint8_t rec[sizeof(abi::Dirent64) + fs::kNameMax + 1 + 8] = {};
    auto* e = reinterpret_cast<abi::Dirent64*>(rec);
    e->d_ino = node->ino;
    e->d_off = static_cast<int64_t>(pos + 1);
    e->d_reclen = static_cast<uint16_t>(reclen);
    e->d_type = dirent_type(node);
    memcpy(e->d_name, name, len);
    if (auto r = copy_to_user(buf + used, rec, reclen); r.is_error()) return used ? int64_t(used) : result(r.error());
    used += reclen;
    file->pos = pos + 1;
  }
  return static_cast<int64_t>(used);
}

int64_t sys_lseek(const SyscallArgs& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  File* file = f.get();
  if (file->kind != File::Kind::Node) return result(Errno::ESPIPE);
  if (file->node->device != fs::Device::None) return 0;  // /dev/null and /dev/zero: always at 0
  const int64_t off = static_cast<int64_t>(a[1]);
  int64_t base;
  switch (a[2]) {
    case abi::SEEK_SET: base = 0; break;
    case abi::SEEK_CUR: base = static_cast<int64_t>(file->pos); break;
    case abi::SEEK_END: base = static_cast<int64_t>(file->node->size); break;
    default: return result(Errno::EINVAL);
  }
  int64_t to;
  if (__builtin_add_overflow(base, off, &to) || to < 0) return result(Errno::EINVAL);
  file->pos = static_cast<uint64_t>(to);
  return to;
}

int64_t sys_pread64(const SyscallArgs& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  return ok(file_pread(f.get(), a[1], a[2], a[3]));
}

int64_t sys_pwrite64(const SyscallArgs& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  return ok(file_pwrite(f.get(), a[1], a[2], a[3]));
}

int64_t sys_ftruncate(const SyscallArgs& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  File* file = f.get();
  if (static_cast<int64_t>(a[1]) < 0) return result(Errno::EINVAL);
  if (file->kind != File::Kind::Node || !file->node->is_reg()) return result(Errno::EINVAL);
  if ((file->flags & abi::O_ACCMODE) == abi::O_RDONLY) return result(Errno::EINVAL);  // Linux: EINVAL, not EBADF
  return ok(fs::truncate(file->node, a[1]));
}

int64_t sys_fchdir(const SyscallArgs& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  if (f.get()->kind != File::Kind::Node || !f.get()->node->is_dir()) return result(Errno::ENOTDIR);
  Process& p = *current()->leader;
  fs::inode_get(f.get()->node);
  if (p.cwd) fs::inode_put(p.cwd);
  p.cwd = f.get()->node;
  return 0;
}

bool is_terminal(const File* f) {
  return f->kind == File::Kind::Console || (f->kind == File::Kind::Node && f->node->device == fs::Device::Console);
}

// The console answers as a terminal in its usual cooked mode would; a
// program may set modes (TCSETS*), which pvk's output-only console keeps
// no trace of.
int64_t sys_ioctl(const SyscallArgs& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  if (!is_terminal(f.get())) return result(Errno::ENOTTY);
  switch (a[1]) {
    case abi::TCGETS: {
      abi::Termios t{};
      t.c_iflag = 0x0500;  // ICRNL IXON
      t.c_oflag = 0x0005;  // OPOST ONLCR
      t.c_cflag = 0x00bf;  // B38400 CS8 CREAD
      t.c_lflag = 0x8a3b;  // ISIG ICANON ECHO ECHOE ECHOK ECHOCTL ECHOKE IEXTEN
      static constexpr uint8_t kCc[] = {3, 28, 127, 21, 4, 0, 1, 0, 17, 19, 26, 0, 18, 15, 23, 22, 0};
      memcpy(t.c_cc, kCc, sizeof kCc);
      return ok(copy_to_user(a[2], &t, sizeof t));
    }
    case abi::TCSETS:
    case abi::TCSETSW:
    case abi::TCSETSF: {
      abi::Termios t;
      return ok(copy_from_user(&t, a[2], sizeof t));
    }
    case abi::TIOCGWINSZ: {
      const abi::Winsize w{24, 80, 0, 0};
      return ok(copy_to_user(a[2], &w, sizeof w));
    }
    default: return result(Errno::ENOTTY);  // a request no terminal driver knows (Linux: ENOTTY too)
  }
}

int64_t sys_dup_at_least(const SyscallArgs& a, unsigned min, bool cloexec) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  if (min >= Process::kMaxFds) return result(Errno::EINVAL);
  auto fd = install(file_get(f.get()), cloexec, min);
  if (fd.is_error()) {
    file_put(f.get());
    return result(fd.error());
  }
  return fd.value();
}

int64_t sys_fcntl(const SyscallArgs& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  switch (a[1]) {
    case abi::F_DUPFD:
    case abi::F_DUPFD_CLOEXEC:
      if (a[2] >= Process::kMaxFds) return result(Errno::EINVAL);
      return sys_dup_at_least(a, static_cast<unsigned>(a[2]), a[1] == abi::F_DUPFD_CLOEXEC);
    case abi::F_GETFD: return (current()->leader->cloexec >> a[0]) & 1 ? abi::FD_CLOEXEC : 0;
    case abi::F_SETFD: set_cloexec(static_cast<unsigned>(a[0]), a[2] & abi::FD_CLOEXEC); return 0;
    case abi::F_GETFL: {
      const File* file = f.get();
      if (file->kind == File::Kind::PipeRead) return abi::O_RDONLY | (file->flags & abi::O_NONBLOCK);
      if (file->kind == File::Kind::PipeWrite) return abi::O_WRONLY | (file->flags & abi::O_NONBLOCK);
      return file->flags;
    }
    case abi::F_SETFL: {
      constexpr uint32_t kChangeable = abi::O_APPEND | abi::O_NONBLOCK;
      File* file = f.get();
      if (file->kind == File::Kind::Console) return 0;  // shared by every process: left as it is
      // One whole store: a pipe call on another CPU reads O_NONBLOCK unlocked.
      __atomic_store_n(&file->flags, (file->flags & ~kChangeable) | (static_cast<uint32_t>(a[2]) & kChangeable),
                       __ATOMIC_RELAXED);
      return 0;
    }
    default: return result(Errno::EINVAL);
  }
}

int64_t sys_dup3(const SyscallArgs& a) {
  if (a[2] & ~abi::O_CLOEXEC) return result(Errno::EINVAL);
  if (a[0] == a[1]) return result(Errno::EINVAL);
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  if (a[1] >= Process::kMaxFds) return result(Errno::EBADF);
  File* old = fd_swap(*current()->leader, static_cast<unsigned>(a[1]), file_get(f.get()), a[2] & abi::O_CLOEXEC);
  if (old) file_put(old);
  return static_cast<int64_t>(a[1]);
}

int64_t sys_pipe2(const SyscallArgs& a) {
  if (a[1] & ~(abi::O_CLOEXEC | abi::O_NONBLOCK)) return result(Errno::EINVAL);
  Process& p = *current()->leader;
  int fds[2] = {-1, -1};
  for (int fd = 0, n = 0; fd < int(Process::kMaxFds) && n < 2; ++fd)
    if (!p.fds[fd]) fds[n++] = fd;
  if (fds[1] < 0) return result(Errno::EMFILE);
  if (!user_range_ok(a[0], sizeof fds)) return result(Errno::EFAULT);
  File *r, *w;
  if (auto m = make_pipe(r, w); m.is_error()) return result(m.error());
  if (auto c = copy_to_user(a[0], fds, sizeof fds); c.is_error()) {
    file_put(r), file_put(w);
    return result(c.error());
  }
  // O_NONBLOCK: each end's File's, for F_GETFL and its reads or writes.
  r->flags = w->flags = static_cast<uint32_t>(a[1] & abi::O_NONBLOCK);
  fd_swap(p, static_cast<unsigned>(fds[0]), r, a[1] & abi::O_CLOEXEC);  // both were empty
  fd_swap(p, static_cast<unsigned>(fds[1]), w, a[1] & abi::O_CLOEXEC);
  return 0;
}

}  // namespace

// posix_fadvise: advice only (pvk's files are all in memory), checked as
// Linux checks it: EBADF, ESPIPE for a pipe, EINVAL for an unknown advice
// or a negative length.
int64_t sys_fadvise64(const SyscallArgs& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  if (f.get()->kind == File::Kind::PipeRead || f.get()->kind == File::Kind::PipeWrite) return result(Errno::ESPIPE);
  if (a[3] > 5 || static_cast<int64_t>(a[2]) < 0) return result(Errno::EINVAL);  // POSIX_FADV_NORMAL..NOREUSE
  return 0;
}

bool fs_fd_call(uint64_t nr, const SyscallArgs& a, int64_t& ret) {
  switch (nr) {
    case abi::SYS_fstat: ret = sys_fstat(a); return true;
    case abi::SYS_getdents64: ret = sys_getdents64(a); return true;
    case abi::SYS_lseek: ret = sys_lseek(a); return true;
    case abi::SYS_pread64: ret = sys_pread64(a); return true;
    case abi::SYS_pwrite64: ret = sys_pwrite64(a); return true;
    case abi::SYS_ftruncate: ret = sys_ftruncate(a); return true;
    case abi::SYS_fchdir: ret = sys_fchdir(a); return true;
    case abi::SYS_ioctl: ret = sys_ioctl(a); return true;
    case abi::SYS_fcntl: ret = sys_fcntl(a); return true;
    case abi::SYS_dup: ret = sys_dup_at_least(a, 0, false); return true;
    case abi::SYS_dup3: ret = sys_dup3(a); return true;
    case abi::SYS_pipe2: ret = sys_pipe2(a); return true;
    case abi::SYS_fadvise64: ret = sys_fadvise64(a); return true;
    case abi::SYS_getpeername: ret = fd_get(a[0]) ? result(Errno::ENOTSOCK) : result(Errno::EBADF); return true;
    default: return false;
  }
}

}  // namespace pvk
