#include "kernel/fs/path.h"

namespace pvk::fs {
namespace {

// Walks `path` from `start`. With `parent`, stops at the last component
// and describes it there instead of stepping into it.
ErrorOr<Inode*> walk(Inode* start, const char* p, size_t len, bool follow_last, unsigned& links, ParentPath* parent) {
  if (len == 0) return Errno::ENOENT;
  Inode* cur = p[0] == '/' ? root() : start;
  size_t i = 0;
  while (i < len && p[i] == '/') ++i;
  if (i == len) {  // "/" or "///": the root (or start) itself
    if (parent) *parent = ParentPath{cur, nullptr, 0, true, cur};
    return cur;
  }
  while (true) {
    size_t j = i;
    while (j < len && p[j] != '/') ++j;
    const size_t comp = j - i;
    if (comp > kNameMax) return Errno::ENAMETOOLONG;
    size_t k = j;
    while (k < len && p[k] == '/') ++k;
    const bool last = k == len, trailing = k > j;
    if (!cur->is_dir()) return Errno::ENOTDIR;
    Inode* next = lookup(cur, p + i, comp);
    if (last && parent) {
      *parent = ParentPath{cur, p + i, comp, trailing, next};
      return next;
    }
    if (!next) return Errno::ENOENT;
    if (next->is_symlink() && (!last || follow_last || trailing) && next->device == Device::SelfExe) {
      next = self_exe();  // a jump to the file itself, not a walk of a path (as Linux's magic links)
      if (!next) return Errno::ENOENT;
    } else if (next->is_symlink() && (!last || follow_last || trailing)) {
      if (++links > kMaxLinksFollowed) return Errno::ELOOP;
      const char* target = symlink_target(next);
      if (!target) return Errno::ENOENT;
      next = TRY(walk(cur, target, next->size, true, links, nullptr));
    }
    cur = next;
    if (last) {
      if (trailing && !cur->is_dir()) return Errno::ENOTDIR;
      return cur;
    }
    i = k;
  }
}

}  // namespace

ErrorOr<Inode*> resolve(Inode* start, const char* path, size_t len, bool follow_last) {
  unsigned links = 0;
  return walk(start, path, len, follow_last, links, nullptr);
}

ErrorOr<ParentPath> resolve_parent(Inode* start, const char* path, size_t len) {
  unsigned links = 0;
  ParentPath out;
  TRY(walk(start, path, len, false, links, &out));
  return out;
}

}  // namespace pvk::fs
