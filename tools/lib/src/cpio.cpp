#include "pvk/cpio.hpp"

#include <fmt/format.h>

namespace pvk {

void cpio_append(std::string& out, std::string_view name, unsigned mode, std::string_view data, unsigned rdev_major,
                 unsigned rdev_minor) {
  // Header fields, 8 hex digits each: ino mode uid gid nlink mtime filesize
  // devmajor devminor rdevmajor rdevminor namesize check.
  const unsigned ino = static_cast<unsigned>(out.size()) + 1;
  out += fmt::format("070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}", ino, mode,
                     0, 0, (mode & 0170000) == 040000 ? 2 : 1, 0, data.size(), 0, 0, rdev_major, rdev_minor,
                     name.size() + 1, 0);
  out += name;
  out += '\0';
  out.append((4 - out.size() % 4) % 4, '\0');
  out += data;
  out.append((4 - out.size() % 4) % 4, '\0');
}

void cpio_finish(std::string& out) {
  cpio_append(out, "TRAILER!!!", 0);
  out.append((512 - out.size() % 512) % 512, '\0');
}

}  // namespace pvk
