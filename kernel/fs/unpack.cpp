#include "kernel/fs/unpack.h"

#include "base/lib/format.h"
#include "base/lib/kstring.h"
#include "kernel/fs/cpio_reader.h"
#include "kernel/fs/ramfs.h"

namespace pvk::fs {
namespace {

// A name as one printable line: bad bytes become '?', long ones are cut.
void printable(const char* name, size_t len, char* out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < len && n + 1 < cap; ++i) {
    const char c = name[i];
    out[n++] = (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  out[n] = 0;
}

bool refuse(char* why, size_t cap, uint64_t index, const char* name, size_t len, const char* what) {
  char shown[80];
  printable(name ? name : "", name ? len : 0, shown, sizeof shown);
  format(why, cap, "rootfs: archive entry %lu '%s': %s", index, shown, what);
  return false;
}

// The directory holding `path`'s last component, walking the tree as the
// archive built it (no symlinks followed: an archive cannot reach outside
// its own directories). Null if a parent is missing or not a directory.
Inode* parent_of(const char* path, size_t len, const char*& last, size_t& last_len) {
  Inode* dir = root();
  size_t start = 0;
  for (size_t i = 0; i <= len; ++i) {
    if (i < len && path[i] != '/') continue;
    if (i == len) {
      last = path + start;
      last_len = i - start;
      return dir;
    }
    Inode* next = lookup(dir, path + start, i - start);
    if (!next || !next->is_dir()) return nullptr;
    dir = next;
    start = i + 1;
  }
  return nullptr;
}

Device device_of(uint32_t rdev) {
  switch (rdev) {
    case (1u << 8) | 3: return Device::Null;
    case (1u << 8) | 5: return Device::Zero;
    case (5u << 8) | 1: return Device::Console;
    default: return Device::None;
  }
}

const char* errno_text(Errno e) {
  switch (e) {
    case Errno::ENOSPC: return "out of memory for the file (ENOSPC)";
    case Errno::EFBIG: return "file too large for the root filesystem (EFBIG)";
    case Errno::ENAMETOOLONG: return "name component longer than 255 bytes";
    default: return errno_name(e);
  }
}

}  // namespace

bool unpack_archive(const uint8_t* bytes, uint64_t len, char* why, size_t cap) {
  CpioReader reader(bytes, len);
  CpioEntry e;
  uint64_t index = 0;
  static char path[kPathMax];  // boot runs on one CPU: one buffer is enough
  for (; reader.next(e); ++index) {
    size_t plen = 0;
    if (e.name_len >= kPathMax) return refuse(why, cap, index, e.name, e.name_len, "name longer than PATH_MAX");
    if (!cpio_normalize(e.name, e.name_len, path, sizeof path, plen))
      return refuse(why, cap, index, e.name, e.name_len, "name leaves the root ('..')");
    const uint32_t type = e.mode & kTypeMask;
    if (type != kDir && type != kRegular && type != kSymlink && type != kCharDev)
      return refuse(why, cap, index, e.name, e.name_len, "not a directory, regular file, symlink or character device");
    if (plen == 0) {  // the root itself ("."): only its attributes
      if (type != kDir) return refuse(why, cap, index, e.name, e.name_len, "the root must be a directory");
      Inode* r = root();
      r->mode = e.mode, r->uid = e.uid, r->gid = e.gid, r->mtime = r->ctime = r->atime = static_cast<int64_t>(e.mtime);
      continue;
    }
    const char* last;
    size_t last_len;
    Inode* dir = parent_of(path, plen, last, last_len);
    if (!dir) return refuse(why, cap, index, e.name, e.name_len, "parent directory missing from the archive");
    if (type == kSymlink && (e.size == 0 || e.size >= kPageSize))
      return refuse(why, cap, index, e.name, e.name_len, "symlink target empty or longer than 4095 bytes");
    Inode* n = lookup(dir, last, last_len);
    if (n && !(n->is_dir() && type == kDir)) {
      // A later entry of the same name replaces the earlier (as Linux's initramfs).
      auto r = n->is_dir() ? rmdir(dir, last, last_len) : unlink(dir, last, last_len);
      if (r.is_error()) return refuse(why, cap, index, e.name, e.name_len, "replaces a directory that is not empty");
      n = nullptr;
    }
    if (!n) {
      auto made = create(dir, last, last_len, e.mode);
      if (made.is_error()) return refuse(why, cap, index, e.name, e.name_len, errno_text(made.error()));
      n = made.value();
    }
    n->mode = e.mode, n->uid = e.uid, n->gid = e.gid;
    if (type == kCharDev) {
      // The devices pvk has, by number; any other reads and writes as ENXIO-like EIO.
      n->rdev = (e.rdev_major & 0xfff) << 8 | (e.rdev_minor & 0xff);
      n->device = device_of(n->rdev);
    }
    if ((type == kRegular || type == kSymlink) && e.size) {
      auto w = write_bytes(n, 0, e.data, e.size);
      if (w.is_error()) return refuse(why, cap, index, e.name, e.name_len, errno_text(w.error()));
      if (w.value() != e.size) return refuse(why, cap, index, e.name, e.name_len, errno_text(Errno::ENOSPC));
    }
    n->mtime = n->ctime = n->atime = static_cast<int64_t>(e.mtime);
  }
  if (const CpioError& err = reader.error(); err.what)
    return refuse(why, cap, err.index, err.name, err.name_len, err.what);
  return add_standard_nodes(why, cap);
}

namespace {

// The directory `name` of dir, made (with `mode`) unless it exists.
Inode* ensure_dir(Inode* dir, const char* name, uint32_t mode) {
  const size_t len = strlen(name);
  if (Inode* n = lookup(dir, name, len)) return n->is_dir() ? n : nullptr;
  auto made = create(dir, name, len, kDir | mode);
  return made.is_error() ? nullptr : made.value();
}

// /proc/self/exe, the one entry of /proc these programs read (busybox
// runs its applets through it).
bool add_proc_self(char* why, size_t cap) {
  Inode* proc = ensure_dir(root(), "proc", 0555);
  Inode* self = proc ? ensure_dir(proc, "self", 0555) : nullptr;
  if (!self) return format(why, cap, "rootfs: cannot make /proc/self"), false;
  Inode* exe = lookup(self, "exe", 3);
  if (!exe) {
    auto made = create(self, "exe", 3, kSymlink | 0777);
    if (made.is_error()) return format(why, cap, "rootfs: cannot make /proc/self/exe"), false;
    exe = made.value();
  }
  if (exe->is_symlink()) exe->device = Device::SelfExe;
  return true;
}

}  // namespace

bool add_standard_nodes(char* why, size_t cap) {
  struct Dev {
    const char* name;
    Device device;
    uint32_t rdev;
  };
  static constexpr Dev kDevices[] = {
      {"null", Device::Null, (1u << 8) | 3}, {"zero", Device::Zero, (1u << 8) | 5}, {"console", Device::Console, (5u << 8) | 1}};
  Inode* dev = lookup(root(), "dev", 3);
  if (!dev) {
    auto made = create(root(), "dev", 3, kDir | 0755);
    if (made.is_error()) return format(why, cap, "rootfs: cannot make /dev (%s)", errno_name(made.error())), false;
    dev = made.value();
  }
  if (!dev->is_dir()) return format(why, cap, "rootfs: /dev is not a directory"), false;
  for (const Dev& d : kDevices) {
    const size_t len = strlen(d.name);
    Inode* n = lookup(dev, d.name, len);
    if (!n) {
      auto made = create(dev, d.name, len, kCharDev | 0666);
      if (made.is_error()) return format(why, cap, "rootfs: cannot make /dev/%s", d.name), false;
      n = made.value();
    }
    if ((n->mode & kTypeMask) == kCharDev) n->device = d.device, n->rdev = d.rdev;
  }
  if (!add_proc_self(why, cap)) return false;
  if (!lookup(root(), "tmp", 3)) {
    auto made = create(root(), "tmp", 3, kDir | 01777);
    if (made.is_error()) return format(why, cap, "rootfs: cannot make /tmp (%s)", errno_name(made.error())), false;
  }
  return true;
}

}  // namespace pvk::fs
