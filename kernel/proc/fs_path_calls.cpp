// System calls that take a path: open/openat, stat/lstat/newfstatat,
// readlink/readlinkat, unlink/unlinkat/rmdir, mkdir/mkdirat,
// rename/renameat, truncate, access/faccessat, chdir, getcwd
// (kernel/proc/fs_calls.h).
//
// Paths are copied into one static buffer per argument: system calls run
// under the kernel lock and none of these sleeps (a fault while copying
// is handled in place), so no two calls use the buffers at once, and the
// kernel stack keeps its 16 KiB for what nests deeper.
#include "base/abi.h"
#include "base/lib/kstring.h"
#include "kernel/fs/path.h"
#include "kernel/proc/fs_calls.h"
#include "kernel/proc/process.h"
#include "kernel/proc/user_copy.h"

namespace pvk {
namespace {

using namespace fscall;

char g_path[2][fs::kPathMax];

int64_t ok(const ErrorOr<void>& r) { return r.is_error() ? result(r.error()) : 0; }

// A path argument: EFAULT for a bad pointer, ENAMETOOLONG past PATH_MAX,
// ENOENT for "" (unless the call allows an empty path).
ErrorOr<size_t> path_arg(unsigned which, uint64_t user, bool empty_ok = false) {
  auto n = string_from_user(g_path[which], user, fs::kPathMax);
  if (n.is_error()) return n.error() == Errno::E2BIG ? Errno::ENAMETOOLONG : n.error();
  if (!n.value() && !empty_ok) return Errno::ENOENT;
  return n.value();
}

fs::Inode* cwd() {
  fs::Inode* c = current()->leader->cwd;
  return c ? c : fs::root();
}

// Where a relative path starts: the working directory (AT_FDCWD) or a
// directory descriptor. An absolute path ignores dirfd, as on Linux.
ErrorOr<fs::Inode*> start_dir(uint64_t dirfd, const char* path) {
  if (path[0] == '/' || static_cast<int64_t>(static_cast<int32_t>(dirfd)) == abi::AT_FDCWD) return cwd();
  const FileRef f = fd_get(dirfd);
  if (!f) return Errno::EBADF;
  if (f.get()->kind != File::Kind::Node || !f.get()->node->is_dir()) return Errno::ENOTDIR;
  return f.get()->node;
}

ErrorOr<fs::Inode*> lookup_at(uint64_t dirfd, unsigned which, uint64_t user_path, bool follow) {
  const size_t len = TRY(path_arg(which, user_path));
  fs::Inode* start = TRY(start_dir(dirfd, g_path[which]));
  return fs::resolve(start, g_path[which], len, follow);
}

ErrorOr<fs::ParentPath> parent_at(uint64_t dirfd, unsigned which, uint64_t user_path) {
  const size_t len = TRY(path_arg(which, user_path));
  fs::Inode* start = TRY(start_dir(dirfd, g_path[which]));
  return fs::resolve_parent(start, g_path[which], len);
}

constexpr uint64_t kOpenFlags = abi::O_ACCMODE | abi::O_CREAT | abi::O_EXCL | abi::O_NOCTTY | abi::O_TRUNC |
                                abi::O_APPEND | abi::O_NONBLOCK | abi::O_LARGEFILE | abi::O_DIRECTORY |
                                abi::O_NOFOLLOW | abi::O_CLOEXEC;

ErrorOr<fs::Inode*> open_target(uint64_t dirfd, uint64_t user_path, uint64_t flags, uint32_t mode) {
  const bool follow = !(flags & abi::O_NOFOLLOW);
  if (!(flags & abi::O_CREAT)) {
    fs::Inode* n = TRY(lookup_at(dirfd, 0, user_path, follow));
    if (n->is_symlink()) return Errno::ELOOP;  // O_NOFOLLOW on a symlink
    return n;
  }
  const fs::ParentPath p = TRY(parent_at(dirfd, 0, user_path));
  if (p.node) {
    if (flags & abi::O_EXCL) return Errno::EEXIST;
    if (!p.node->is_symlink()) return p.node;
    if (!follow) return Errno::ELOOP;
    return fs::resolve(p.dir, p.last, p.last_len, true);  // the link, followed from where it is
  }
  if (!p.last_len || p.trailing_slash) return Errno::EISDIR;
  return fs::create(p.dir, p.last, p.last_len, fs::kRegular | (mode & 07777));
}

int64_t sys_openat(uint64_t dirfd, uint64_t user_path, uint64_t flags, uint64_t mode) {
  if (flags & ~kOpenFlags) return result(Errno::EINVAL);
  auto target = open_target(dirfd, user_path, flags, static_cast<uint32_t>(mode));
  if (target.is_error()) return result(target.error());
  fs::Inode* n = target.value();
  const uint64_t acc = flags & abi::O_ACCMODE;
  if (acc == 3) return result(Errno::EINVAL);
  if ((flags & abi::O_DIRECTORY) && !n->is_dir()) return result(Errno::ENOTDIR);
  if (n->is_dir() && (acc != abi::O_RDONLY || (flags & abi::O_TRUNC))) return result(Errno::EISDIR);
  File* f;
  if (n->device == fs::Device::Console) {
    f = console_file();
  } else {
    auto made = open_node(n, static_cast<uint32_t>(flags & (abi::O_ACCMODE | abi::O_APPEND | abi::O_NONBLOCK)));
    if (made.is_error()) return result(made.error());
    f = made.value();
  }
  if ((flags & abi::O_TRUNC) && acc != abi::O_RDONLY && n->is_reg())
    if (auto t = fs::truncate(n, 0); t.is_error()) return file_put(f), result(t.error());
  auto fd = install(f, flags & abi::O_CLOEXEC);
  if (fd.is_error()) return file_put(f), result(fd.error());
  return fd.value();
}

int64_t stat_at(uint64_t dirfd, uint64_t user_path, uint64_t user_buf, uint64_t flags) {
  if (flags & ~(abi::AT_SYMLINK_NOFOLLOW | abi::AT_EMPTY_PATH)) return result(Errno::EINVAL);
  auto len = path_arg(0, user_path, flags & abi::AT_EMPTY_PATH);
  if (len.is_error()) return result(len.error());
  abi::Stat st;
  if (!len.value()) {  // AT_EMPTY_PATH: the descriptor itself
    if (static_cast<int64_t>(static_cast<int32_t>(dirfd)) == abi::AT_FDCWD) {
      File tmp{File::Kind::Node, 1, nullptr, cwd(), 0, 0};
      fill_stat(&tmp, st);
    } else {
      const FileRef f = fd_get(dirfd);
      if (!f) return result(Errno::EBADF);
      fill_stat(f.get(), st);
    }
  } else {
    auto start = start_dir(dirfd, g_path[0]);
    if (start.is_error()) return result(start.error());
    auto n = fs::resolve(start.value(), g_path[0], len.value(), !(flags & abi::AT_SYMLINK_NOFOLLOW));
    if (n.is_error()) return result(n.error());
    File tmp{File::Kind::Node, 1, nullptr, n.value(), 0, 0};  // only read by fill_stat: no reference taken
    fill_stat(&tmp, st);
  }
  return ok(copy_to_user(user_buf, &st, sizeof st));
}

int64_t readlink_at(uint64_t dirfd, uint64_t user_path, uint64_t user_buf, uint64_t size) {
  if (static_cast<int64_t>(size) <= 0) return result(Errno::EINVAL);
  auto n = lookup_at(dirfd, 0, user_path, false);
  if (n.is_error()) return result(n.error());
  if (!n.value()->is_symlink()) return result(Errno::EINVAL);
  const char* target = fs::symlink_target(n.value());
  uint64_t len = n.value()->size;
  if (n.value()->device == fs::Device::SelfExe) {
    fs::Inode* exe = fs::self_exe();
    if (!exe) return result(Errno::ENOENT);
    auto named = fs::path_of(exe, g_path[1], sizeof g_path[1]);
    if (named.is_error()) return result(named.error());
    target = g_path[1], len = named.value();
  }
  if (len > size) len = size;
  if (auto r = copy_to_user(user_buf, target, len); r.is_error()) return result(r.error());
  return static_cast<int64_t>(len);
}

int64_t unlink_at(uint64_t dirfd, uint64_t user_path, uint64_t flags) {
  if (flags & ~abi::AT_REMOVEDIR) return result(Errno::EINVAL);
  auto p = parent_at(dirfd, 0, user_path);
  if (p.is_error()) return result(p.error());
  const fs::ParentPath& pp = p.value();
  if (flags & abi::AT_REMOVEDIR) {
    if (!pp.last_len) return result(Errno::EBUSY);  // rmdir("/")
    if (pp.node && pp.node == cwd() && pp.node == fs::root()) return result(Errno::EBUSY);
    return ok(fs::rmdir(pp.dir, pp.last, pp.last_len));
  }
  if (!pp.last_len) return result(Errno::EISDIR);
  if (!pp.node) return result(Errno::ENOENT);
  if (pp.trailing_slash && !pp.node->is_dir()) return result(Errno::ENOTDIR);
  return ok(fs::unlink(pp.dir, pp.last, pp.last_len));
}

int64_t mkdir_at(uint64_t dirfd, uint64_t user_path, uint64_t mode) {
  auto p = parent_at(dirfd, 0, user_path);
  if (p.is_error()) return result(p.error());
  const fs::ParentPath& pp = p.value();
  if (!pp.last_len || pp.node) return result(Errno::EEXIST);
  auto made = fs::create(pp.dir, pp.last, pp.last_len, fs::kDir | (static_cast<uint32_t>(mode) & 07777));
  return made.is_error() ? result(made.error()) : 0;
}

int64_t rename_at(uint64_t olddirfd, uint64_t user_old, uint64_t newdirfd, uint64_t user_new) {
  auto from = parent_at(olddirfd, 0, user_old);
  if (from.is_error()) return result(from.error());
  auto to = parent_at(newdirfd, 1, user_new);
  if (to.is_error()) return result(to.error());
  const fs::ParentPath &f = from.value(), &t = to.value();
  if (!f.last_len || !t.last_len) return result(Errno::EBUSY);
  if (!f.node) return result(Errno::ENOENT);
  if ((f.trailing_slash || t.trailing_slash) && !f.node->is_dir()) return result(Errno::ENOTDIR);
  return ok(fs::rename(f.dir, f.last, f.last_len, t.dir, t.last, t.last_len));
}

int64_t sys_truncate(uint64_t user_path, uint64_t size) {
  if (static_cast<int64_t>(size) < 0) return result(Errno::EINVAL);
  auto n = lookup_at(static_cast<uint64_t>(abi::AT_FDCWD), 0, user_path, true);
  if (n.is_error()) return result(n.error());
  if (n.value()->is_dir()) return result(Errno::EISDIR);
  if (!n.value()->is_reg()) return result(Errno::EINVAL);
  return ok(fs::truncate(n.value(), size));
}

// Every process runs as root: access is a question of existence, and of
// an execute bit for X_OK on anything but a directory.
int64_t access_at(uint64_t dirfd, uint64_t user_path, uint64_t mode, uint64_t flags) {
  if (mode & ~uint64_t{7}) return result(Errno::EINVAL);
  if (flags & ~(abi::AT_EACCESS | abi::AT_SYMLINK_NOFOLLOW)) return result(Errno::EINVAL);
  auto n = lookup_at(dirfd, 0, user_path, !(flags & abi::AT_SYMLINK_NOFOLLOW));
  if (n.is_error()) return result(n.error());
  if ((mode & abi::X_OK) && !n.value()->is_dir() && !(n.value()->mode & 0111)) return result(Errno::EACCES);
  return 0;
}

int64_t sys_chdir(uint64_t user_path) {
  auto n = lookup_at(static_cast<uint64_t>(abi::AT_FDCWD), 0, user_path, true);
  if (n.is_error()) return result(n.error());
  if (!n.value()->is_dir()) return result(Errno::ENOTDIR);
  Process& p = *current()->leader;
  fs::inode_get(n.value());
  if (p.cwd) fs::inode_put(p.cwd);
  p.cwd = n.value();
  return 0;
}

// The working directory's path, built from the end: each directory's
// name is found in its parent. A removed directory has none (ENOENT).
int64_t sys_getcwd(uint64_t user_buf, uint64_t size) {
  char* buf = g_path[0];
  size_t at = fs::kPathMax - 1;
  buf[at] = 0;
  const fs::Inode* dir = cwd();
  if (!dir->nlink) return result(Errno::ENOENT);
  while (dir != fs::root()) {
    const fs::Inode* parent = dir->parent;
    const fs::Dirent* d = nullptr;
    for (uint64_t k = 0; (d = fs::nth_child(parent, k)); ++k)
      if (d->node == dir) break;
    if (!d) return result(Errno::ENOENT);
    if (at < d->len + 1u) return result(Errno::ENAMETOOLONG);
    at -= d->len;
    memcpy(buf + at, d->name, d->len);
    buf[--at] = '/';
    dir = parent;
  }
  if (at == fs::kPathMax - 1) buf[--at] = '/';
  const uint64_t len = fs::kPathMax - at;  // with the NUL
  if (size < len) return result(Errno::ERANGE);
  if (auto r = copy_to_user(user_buf, buf + at, len); r.is_error()) return result(r.error());
  return static_cast<int64_t>(len);
}

}  // namespace

bool fs_path_call(uint64_t nr, const SyscallArgs& a, int64_t& ret) {
  const uint64_t cwdfd = static_cast<uint64_t>(abi::AT_FDCWD);
  switch (nr) {
    case abi::SYS_open: ret = sys_openat(cwdfd, a[0], a[1], a[2]); return true;
    case abi::SYS_openat: ret = sys_openat(a[0], a[1], a[2], a[3]); return true;
    case abi::SYS_stat: ret = stat_at(cwdfd, a[0], a[1], 0); return true;
    case abi::SYS_lstat: ret = stat_at(cwdfd, a[0], a[1], abi::AT_SYMLINK_NOFOLLOW); return true;
    case abi::SYS_newfstatat: ret = stat_at(a[0], a[1], a[2], a[3]); return true;
    case abi::SYS_readlink: ret = readlink_at(cwdfd, a[0], a[1], a[2]); return true;
    case abi::SYS_readlinkat: ret = readlink_at(a[0], a[1], a[2], a[3]); return true;
    case abi::SYS_unlink: ret = unlink_at(cwdfd, a[0], 0); return true;
    case abi::SYS_rmdir: ret = unlink_at(cwdfd, a[0], abi::AT_REMOVEDIR); return true;
    case abi::SYS_unlinkat: ret = unlink_at(a[0], a[1], a[2]); return true;
    case abi::SYS_mkdir: ret = mkdir_at(cwdfd, a[0], a[1]); return true;
    case abi::SYS_mkdirat: ret = mkdir_at(a[0], a[1], a[2]); return true;
    case abi::SYS_rename: ret = rename_at(cwdfd, a[0], cwdfd, a[1]); return true;
    case abi::SYS_renameat: ret = rename_at(a[0], a[1], a[2], a[3]); return true;
    case abi::SYS_truncate: ret = sys_truncate(a[0], a[1]); return true;
    case abi::SYS_access: ret = access_at(cwdfd, a[0], a[1], 0); return true;
    case abi::SYS_faccessat: ret = access_at(a[0], a[1], a[2], 0); return true;
    case abi::SYS_chdir: ret = sys_chdir(a[0]); return true;
    case abi::SYS_getcwd: ret = sys_getcwd(a[0], a[1]); return true;
    default: return false;
  }
}

}  // namespace pvk
