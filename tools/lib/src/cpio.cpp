#include "pvk/cpio.hpp"

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <vector>

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

void cpio_append(std::string& out, const CpioEntry& e) {
  if (e.data.size() > 0xffffffffu) throw std::runtime_error(fmt::format("cpio: {} is too large for newc (4 GiB)", e.name));
  const unsigned ino = static_cast<unsigned>(out.size()) + 1;
  out += fmt::format("070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}", ino,
                     e.mode, e.uid, e.gid, (e.mode & 0170000) == 040000 ? 2 : 1,
                     static_cast<uint32_t>(e.mtime), e.data.size(), 0, 0, 0, 0, e.name.size() + 1, 0);
  out += e.name;
  out += '\0';
  out.append((4 - out.size() % 4) % 4, '\0');
  out += e.data;
  out.append((4 - out.size() % 4) % 4, '\0');
}

namespace {

namespace fs = std::filesystem;

std::string read_whole(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("rootfs: cannot read {}", p.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void pack_tree(std::string& out, const fs::path& root, const fs::path& dir) {
  std::vector<fs::path> children;
  for (const auto& entry : fs::directory_iterator(dir)) children.push_back(entry.path());
  std::sort(children.begin(), children.end());
  for (const auto& child : children) {
    struct stat st {};
    if (lstat(child.c_str(), &st) != 0) throw std::runtime_error(fmt::format("rootfs: cannot stat {}", child.string()));
    CpioEntry e;
    e.name = child.lexically_relative(root).generic_string();  // lexical: a symlink is not followed
    e.mode = st.st_mode;
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.mtime = static_cast<uint64_t>(st.st_mtime);
    if (S_ISLNK(st.st_mode)) {
      e.data = fs::read_symlink(child).string();
    } else if (S_ISREG(st.st_mode)) {
      e.data = read_whole(child);
    } else if (!S_ISDIR(st.st_mode)) {
      throw std::runtime_error(fmt::format("rootfs: {} is not a directory, regular file or symlink", child.string()));
    }
    cpio_append(out, e);
    if (S_ISDIR(st.st_mode)) pack_tree(out, root, child);
  }
}

}  // namespace

std::string cpio_pack_directory(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw std::runtime_error(fmt::format("rootfs: {} is not a directory", dir.string()));
  std::string out;
  pack_tree(out, dir, dir);
  cpio_finish(out);
  return out;
}

fs::path cpio_pack_directory_to(const fs::path& dir, const fs::path& cache_dir) {
  return cpio_write_to_cache(cpio_pack_directory(dir), cache_dir);
}

fs::path cpio_write_to_cache(const std::string& archive, const fs::path& cache_dir) {
  fs::create_directories(cache_dir);
  const fs::path path = cache_dir / fmt::format("rootfs-{:016x}-{}.cpio", std::hash<std::string>{}(archive), archive.size());
  if (fs::exists(path) && fs::file_size(path) == archive.size()) return path;
  const fs::path tmp = cache_dir / fmt::format(".rootfs-{}.tmp", getpid());
  {
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    o.write(archive.data(), static_cast<std::streamsize>(archive.size()));
    if (!o) throw std::runtime_error(fmt::format("rootfs: cannot write {}", tmp.string()));
  }
  fs::rename(tmp, path);
  return path;
}

fs::path rootfs_archive(const fs::path& rootfs, const fs::path& initrd, const fs::path& build_dir) {
  return rootfs.empty() ? initrd : cpio_pack_directory_to(rootfs, build_dir / "cache" / "rootfs");
}

}  // namespace pvk
