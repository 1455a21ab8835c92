// The root filesystem: a tree of nodes in RAM (docs/rootfs.md). Nodes and
// names come from fixed pools; file data lives in frames of the frame
// allocator, counted like every other frame, and goes back to it when a
// file shrinks or its node is freed.
//
// Lifetimes (Linux's): a node lives while a name links it (nlink) or
// something holds it (refs: an open File, a process's working directory,
// a system call between lookup and use). An unlinked file stays readable
// and writable through its open descriptors; its frames are freed when the
// last of them is closed. The kernel runs one system call at a time (the
// kernel lock; a fault in copy_to_user/copy_from_user is handled in place,
// without sleeping), and every call holds a reference to the node it reads
// or writes, so no frame of a file is freed under a transfer.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/lib/error_or.h"
#include "base/lib/types.h"

namespace pvk::fs {

inline constexpr size_t kNameMax = 255;        // one component (NAME_MAX)
inline constexpr size_t kPathMax = 4096;       // a whole path with its NUL (PATH_MAX)
inline constexpr unsigned kMaxLinksFollowed = 40;  // Linux's MAXSYMLINKS
inline constexpr unsigned kIndexFrames = 16;   // of 512 data frames each: 32 MiB per file
inline constexpr uint64_t kMaxFileSize = uint64_t{kIndexFrames} * 512 * kPageSize;

// st_mode's type bits (Linux's).
inline constexpr uint32_t kTypeMask = 0170000, kDir = 0040000, kRegular = 0100000, kSymlink = 0120000,
                          kCharDev = 0020000;

// SelfExe: /proc/self/exe, a symlink whose target is the caller's program.
enum class Device : uint8_t { None, Null, Zero, Console, SelfExe };

struct Dirent;

struct Inode {
  bool in_use = false;
  Device device = Device::None;
  uint32_t mode = 0;  // type and permission bits
  uint32_t uid = 0, gid = 0;
  uint32_t nlink = 0;
  uint32_t refs = 0;
  uint32_t rdev = 0;  // character devices: major << 8 | minor
  uint64_t ino = 0;
  uint64_t size = 0;
  int64_t mtime = 0, ctime = 0, atime = 0;  // seconds
  uint64_t index[kIndexFrames] = {};  // regular files and symlinks: pfn + 1 of each index frame, 0 none
  Inode* parent = nullptr;    // directories: the one holding it (its "..")
  Dirent* children = nullptr;  // directories: their names, oldest first
  uint64_t frames = 0;         // data and index frames held
  // Mappings' references (kernel/fs/file_pages.cpp): VMAs that map the
  // file, counted atomically apart from refs so that mm calls without the
  // kernel lock can split and drop them; refs holds one for all of them.
  uint32_t map_refs = 0;
  uint32_t deferred_puts = 0;     // puts of that reference waiting for the kernel lock
  Inode* deferred_next = nullptr;  // in the list of nodes with deferred puts

  uint32_t type() const { return mode & kTypeMask; }
  bool is_dir() const { return type() == kDir; }
  bool is_reg() const { return type() == kRegular; }
  bool is_symlink() const { return type() == kSymlink; }
};

struct Dirent {
  bool in_use = false;
  uint8_t len = 0;
  char name[kNameMax + 1] = {};
  Inode* node = nullptr;
  Dirent* next = nullptr;
};

// The tree's root ("/"), made by init().
Inode* root();
// Empties the pools and makes an empty root directory (mode 0755). The
// host tests call it before each test; the kernel once, at boot.
void init();

void inode_get(Inode* n);
void inode_put(Inode* n);  // frees the node (and its frames) with no link and no reference left

// Directory operations. Names are one component (no '/'), 1..255 bytes.
Inode* lookup(Inode* dir, const char* name, size_t len);
ErrorOr<Inode*> create(Inode* dir, const char* name, size_t len, uint32_t mode);  // any type; EEXIST, ENOSPC
ErrorOr<void> link(Inode* dir, const char* name, size_t len, Inode* node);
ErrorOr<void> unlink(Inode* dir, const char* name, size_t len);  // files, symlinks, devices: EISDIR for a directory
ErrorOr<void> rmdir(Inode* dir, const char* name, size_t len);   // ENOTDIR, ENOTEMPTY
ErrorOr<void> rename(Inode* from_dir, const char* from, size_t from_len, Inode* to_dir, const char* to,
                     size_t to_len);
// The k-th name of a directory (after "." and ".."), or null past the end.
const Dirent* nth_child(const Inode* dir, uint64_t k);

// File data. Transfers go through a callback per contiguous piece so the
// callers choose how bytes cross (user copies in the kernel, memcpy in the
// host tests); a callback's error ends the transfer with what was done.
using CopyOut = ErrorOr<void> (*)(void* ctx, uint64_t done, const void* src, size_t n);
using CopyIn = ErrorOr<void> (*)(void* ctx, uint64_t done, void* dst, size_t n);
ErrorOr<uint64_t> read(Inode* n, uint64_t offset, uint64_t len, CopyOut out, void* ctx);
// ENOSPC when no frame is left (or past kMaxFileSize: EFBIG) and nothing was written.
ErrorOr<uint64_t> write(Inode* n, uint64_t offset, uint64_t len, CopyIn in, void* ctx);
ErrorOr<void> truncate(Inode* n, uint64_t size);
// memcpy-style helpers for kernel-side data (the unpacker, symlink targets).
ErrorOr<uint64_t> write_bytes(Inode* n, uint64_t offset, const void* src, uint64_t len);
ErrorOr<uint64_t> read_bytes(Inode* n, uint64_t offset, void* dst, uint64_t len);

// The frames holding pages page, page + 1, ... (at most count) of regular
// file n, for a private mapping of them, each with one frame_refs
// reference taken for the mapper (under the file-page lock, so the file
// cannot free one in between; may run without the kernel lock, from a page
// fault). Stops at a hole or the end of the file; returns how many it
// took. The bytes of the last page past the file's size read as zeros
// (write and truncate keep them so).
unsigned take_page_frames(const Inode* n, uint64_t page, unsigned count, Pfn* out);

// A symlink's target (n->size bytes, in its one data frame), or null.
const char* symlink_target(const Inode* n);

// /proc/self/exe leads to the calling process' program file: the process
// layer (above this one) says which file that is. Null without a hook, or
// for a program that is not a file of the tree.
using SelfExeHook = Inode* (*)();
void set_self_exe_hook(SelfExeHook hook);
Inode* self_exe();
// A name of `node` in the tree ("/bin/busybox", NUL-terminated), found by
// a walk from the root: what readlink of /proc/self/exe answers. ENOENT
// for a node no name links, ENAMETOOLONG past cap.
ErrorOr<size_t> path_of(const Inode* node, char* buf, size_t cap);

// Counts for the tests and the boot record.
unsigned inodes_in_use();
uint64_t frames_held();

}  // namespace pvk::fs
