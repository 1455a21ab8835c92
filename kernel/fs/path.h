// Path resolution over the root filesystem, as Linux resolves: absolute
// paths from the root, others from a starting directory (the working
// directory, or a directory descriptor for the *at calls); "." and "..";
// symlinks followed in every component but maybe the last, at most 40 in
// all (ELOOP); a trailing '/' asks for a directory.
#pragma once
#include <stddef.h>

#include "base/lib/error_or.h"
#include "kernel/fs/ramfs.h"

namespace pvk::fs {

// The node a path names (ENOENT, ENOTDIR, ENAMETOOLONG, ELOOP).
ErrorOr<Inode*> resolve(Inode* start, const char* path, size_t len, bool follow_last);

// For calls that make or remove a name: the directory holding the last
// component and that component. `node` is what it names now (null if
// nothing; a symlink is not followed). `last_len` 0 means the path had no
// last component ("/"). `trailing_slash`: the path ended in '/'.
struct ParentPath {
  Inode* dir = nullptr;
  const char* last = nullptr;
  size_t last_len = 0;
  bool trailing_slash = false;
  Inode* node = nullptr;
};
ErrorOr<ParentPath> resolve_parent(Inode* start, const char* path, size_t len);

}  // namespace pvk::fs
