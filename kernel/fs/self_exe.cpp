// /proc/self/exe: the hook the process layer sets, and the reverse lookup
// that names a file for readlink (kernel/fs/ramfs.h).
#include "base/lib/kstring.h"
#include "kernel/fs/ramfs.h"

namespace pvk::fs {
namespace {

SelfExeHook g_self_exe = nullptr;
constexpr unsigned kMaxDepth = 64;  // deeper trees are not searched (a path that long is rare)

// Depth-first under dir; buf[0, len) is dir's own path. Directories are
// never hard-linked, so the walk has no cycle.
bool find_under(const Inode* dir, const Inode* target, char* buf, size_t cap, size_t& len, unsigned depth,
                bool& too_long) {
  for (const Dirent* d = dir->children; d; d = d->next) {
    const size_t at = len;
    if (at + 1 + d->len + 1 > cap) {
      too_long = true;
      continue;
    }
    buf[len++] = '/';
    memcpy(buf + len, d->name, d->len);
    len += d->len;
    if (d->node == target) {
      buf[len] = 0;
      return true;
    }
    if (d->node->is_dir() && depth < kMaxDepth && find_under(d->node, target, buf, cap, len, depth + 1, too_long))
      return true;
    len = at;
  }
  return false;
}

}  // namespace

void set_self_exe_hook(SelfExeHook hook) { g_self_exe = hook; }
Inode* self_exe() { return g_self_exe ? g_self_exe() : nullptr; }

ErrorOr<size_t> path_of(const Inode* node, char* buf, size_t cap) {
  if (cap < 2) return Errno::ENAMETOOLONG;
  if (node == root()) {
    buf[0] = '/', buf[1] = 0;
    return size_t{1};
  }
  size_t len = 0;
  bool too_long = false;
  if (find_under(root(), node, buf, cap, len, 0, too_long)) return len;
  return too_long ? Errno::ENAMETOOLONG : Errno::ENOENT;
}

}  // namespace pvk::fs
