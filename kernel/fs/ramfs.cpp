// The tree: node and name pools, lookup, and the operations that change
// names (kernel/fs/ramfs.h). File data is ramfs_data.cpp.
#include "kernel/fs/ramfs.h"

#include "base/lib/kstring.h"

namespace pvk::fs {

void release_data(Inode* n);  // ramfs_data.cpp

namespace {

constexpr unsigned kMaxInodes = 1024;
constexpr unsigned kMaxDirents = 1024;
Inode g_inodes[kMaxInodes];
Dirent g_dirents[kMaxDirents];
Inode* g_root = nullptr;
uint64_t g_next_ino = 1;

Inode* alloc_inode(uint32_t mode) {
  for (Inode& n : g_inodes) {
    if (n.in_use) continue;
    n = Inode{};
    n.in_use = true;
    n.mode = mode;
    n.ino = g_next_ino++;
    return &n;
  }
  return nullptr;
}

bool valid_name(const char* name, size_t len) {
  if (len == 0 || len > kNameMax) return false;
  for (size_t i = 0; i < len; ++i)
    if (name[i] == '/' || name[i] == 0) return false;
  return true;
}

bool same(const Dirent& d, const char* name, size_t len) { return d.len == len && memcmp(d.name, name, len) == 0; }

Dirent* find(Inode* dir, const char* name, size_t len, Dirent*** link_out = nullptr) {
  for (Dirent** p = &dir->children; *p; p = &(*p)->next)
    if (same(**p, name, len)) {
      if (link_out) *link_out = p;
      return *p;
    }
  return nullptr;
}

// Frees the node if nothing names or holds it.
void maybe_free(Inode* n) {
  if (n->nlink || n->refs || n == g_root) return;
  release_data(n);
  n->in_use = false;
}

// New names go at the end of the list, so a directory read in progress
// (getdents64 counts its position in names) neither skips nor repeats an
// entry because of a name added meanwhile.
ErrorOr<void> add_name(Inode* dir, const char* name, size_t len, Inode* node) {
  if (len > kNameMax) return Errno::ENAMETOOLONG;
  if (!valid_name(name, len)) return Errno::EINVAL;
  if (find(dir, name, len)) return Errno::EEXIST;
  Dirent** tail = &dir->children;
  while (*tail) tail = &(*tail)->next;
  for (Dirent& d : g_dirents) {
    if (d.in_use) continue;
    d = Dirent{};
    d.in_use = true;
    d.len = static_cast<uint8_t>(len);
    memcpy(d.name, name, len);
    d.node = node;
    *tail = &d;
    return {};
  }
  return Errno::ENOSPC;
}

// Takes the name out of dir and drops the link it was; the caller fixes
// directory link counts.
void drop_name(Dirent** at) {
  Dirent* d = *at;
  *at = d->next;
  d->in_use = false;
}

bool is_ancestor(const Inode* maybe, const Inode* of) {
  for (const Inode* p = of; p; p = p->parent == p ? nullptr : p->parent)
    if (p == maybe) return true;
  return false;
}

}  // namespace

Inode* root() { return g_root; }

void init() {
  for (Inode& n : g_inodes)
    if (n.in_use) release_data(&n);
  for (Inode& n : g_inodes) n = Inode{};
  for (Dirent& d : g_dirents) d = Dirent{};
  g_next_ino = 1;
  g_root = alloc_inode(kDir | 0755);
  g_root->nlink = 2;
  g_root->parent = g_root;
}

void inode_get(Inode* n) { ++n->refs; }

void inode_put(Inode* n) {
  if (!n->refs) panic("inode_put of node %lu with no reference", n->ino);
  --n->refs;
  maybe_free(n);
}

Inode* lookup(Inode* dir, const char* name, size_t len) {
  if (!dir->is_dir()) return nullptr;
  if (len == 1 && name[0] == '.') return dir;
  if (len == 2 && name[0] == '.' && name[1] == '.') return dir->parent;
  Dirent* d = find(dir, name, len);
  return d ? d->node : nullptr;
}

ErrorOr<Inode*> create(Inode* dir, const char* name, size_t len, uint32_t mode) {
  if (!dir->is_dir()) return Errno::ENOTDIR;
  if (!dir->nlink) return Errno::ENOENT;  // a removed directory takes no new names
  if (len > kNameMax) return Errno::ENAMETOOLONG;
  if (find(dir, name, len) || (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
    return Errno::EEXIST;
  Inode* n = alloc_inode(mode);
  if (!n) return Errno::ENOSPC;
  if (auto r = add_name(dir, name, len, n); r.is_error()) {
    n->in_use = false;
    return r.error();
  }
  n->mtime = n->ctime = n->atime = dir->mtime;
  if (n->is_dir()) {
    n->nlink = 2;
    n->parent = dir;
    ++dir->nlink;
  } else {
    n->nlink = 1;
  }
  return n;
}

ErrorOr<void> link(Inode* dir, const char* name, size_t len, Inode* node) {
  if (!dir->is_dir()) return Errno::ENOTDIR;
  if (node->is_dir()) return Errno::EPERM;
  TRY(add_name(dir, name, len, node));
  ++node->nlink;
  return {};
}

ErrorOr<void> unlink(Inode* dir, const char* name, size_t len) {
  if (!dir->is_dir()) return Errno::ENOTDIR;
  Dirent** at = nullptr;
  Dirent* d = find(dir, name, len, &at);
  if (!d) return Errno::ENOENT;
  Inode* n = d->node;
  if (n->is_dir()) return Errno::EISDIR;
  drop_name(at);
  --n->nlink;
  maybe_free(n);
  return {};
}

ErrorOr<void> rmdir(Inode* dir, const char* name, size_t len) {
  if (!dir->is_dir()) return Errno::ENOTDIR;
  if (len == 1 && name[0] == '.') return Errno::EINVAL;
  if (len == 2 && name[0] == '.' && name[1] == '.') return Errno::ENOTEMPTY;
  Dirent** at = nullptr;
  Dirent* d = find(dir, name, len, &at);
  if (!d) return Errno::ENOENT;
  Inode* n = d->node;
  if (!n->is_dir()) return Errno::ENOTDIR;
  if (n->children) return Errno::ENOTEMPTY;
  drop_name(at);
  n->nlink = 0;
  --dir->nlink;
  maybe_free(n);
  return {};
}

ErrorOr<void> rename(Inode* from_dir, const char* from, size_t from_len, Inode* to_dir, const char* to,
                     size_t to_len) {
  if (!from_dir->is_dir() || !to_dir->is_dir()) return Errno::ENOTDIR;
  if (to_len > kNameMax || from_len > kNameMax) return Errno::ENAMETOOLONG;
  Dirent** from_at = nullptr;
  Dirent* src = find(from_dir, from, from_len, &from_at);
  if (!src) return Errno::ENOENT;
  Inode* n = src->node;
  Dirent** to_at = nullptr;
  Dirent* dst = find(to_dir, to, to_len, &to_at);
  if (dst && dst->node == n) return {};  // two names of one file: nothing to do (POSIX)
  // A directory cannot move under itself.
  if (n->is_dir() && is_ancestor(n, to_dir)) return Errno::EINVAL;
  if (dst) {
    Inode* old = dst->node;
    if (n->is_dir() && !old->is_dir()) return Errno::ENOTDIR;
    if (!n->is_dir() && old->is_dir()) return Errno::EISDIR;
    if (old->is_dir() && old->children) return Errno::ENOTEMPTY;
    // The name now names n; the replaced node loses that link.
    dst->node = n;
    if (old->is_dir()) {
      old->nlink = 0;
      --to_dir->nlink;
    } else {
      --old->nlink;
    }
    maybe_free(old);
  } else {
    TRY(add_name(to_dir, to, to_len, n));
  }
  // The old name goes (found again: add_name may have changed the list head).
  find(from_dir, from, from_len, &from_at);
  drop_name(from_at);
  if (n->is_dir() && from_dir != to_dir) {
    --from_dir->nlink;
    ++to_dir->nlink;
    n->parent = to_dir;
  }
  return {};
}

const Dirent* nth_child(const Inode* dir, uint64_t k) {
  const Dirent* d = dir->children;
  for (; d && k; --k) d = d->next;
  return d;
}

unsigned inodes_in_use() {
  unsigned n = 0;
  for (const Inode& i : g_inodes) n += i.in_use;
  return n;
}

uint64_t frames_held() {
  uint64_t n = 0;
  for (const Inode& i : g_inodes)
    if (i.in_use) n += i.frames;
  return n;
}

}  // namespace pvk::fs
