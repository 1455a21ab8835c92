// newc cpio archives ("070701"), the format Linux unpacks as an initramfs.
// Concatenated archives are unpacked in order, each starting at a 4-byte
// aligned offset (pad to 512 bytes to be safe with every loader).
#pragma once

#include <string>
#include <string_view>

namespace pvk {

// Appends one entry: a file (mode 0100xxx) with `data`, a directory
// (040xxx), or a character device (020xxx) with its major:minor. Inode
// numbers are distinct within one archive.
void cpio_append(std::string& archive, std::string_view name, unsigned mode, std::string_view data = {},
                 unsigned rdev_major = 0, unsigned rdev_minor = 0);

// Appends the TRAILER!!! entry and pads the archive to a multiple of 512.
void cpio_finish(std::string& archive);

}  // namespace pvk

#include <cstdint>
#include <filesystem>

namespace pvk {

// One entry with every header field the kernel's unpacker reads.
struct CpioEntry {
  std::string name;  // relative to the archive's root, no leading '/'
  unsigned mode = 0;  // file type and permission bits, as st_mode
  unsigned uid = 0, gid = 0;
  uint64_t mtime = 0;  // seconds since the epoch
  std::string data;    // a file's bytes, or a symlink's target
};
void cpio_append(std::string& archive, const CpioEntry& entry);

// A host directory as a newc archive, for pvk's root filesystem
// (pvk-cli run --rootfs): every directory, regular file and symlink
// under `dir`, parents before children, names sorted so the same tree
// packs to the same bytes. Other file types (sockets, devices, FIFOs)
// are refused with std::runtime_error naming the path, as is a file
// too large for the format (4 GiB).
std::string cpio_pack_directory(const std::filesystem::path& dir);

// Packs `dir` into a file under `cache_dir` named by the archive's
// content (written whole, then renamed, so concurrent runs never see half
// an archive) and returns its path.
std::filesystem::path cpio_pack_directory_to(const std::filesystem::path& dir, const std::filesystem::path& cache_dir);

// Writes `archive` into `cache_dir` under a name made of its content (as
// cpio_pack_directory_to) and returns its path.
std::filesystem::path cpio_write_to_cache(const std::string& archive, const std::filesystem::path& cache_dir);

// The archive a boot gets from --rootfs DIR (packed into the build's cache)
// or --initrd FILE (as it is); empty when neither is given. The command
// lines make the two exclusive.
std::filesystem::path rootfs_archive(const std::filesystem::path& rootfs, const std::filesystem::path& initrd,
                                     const std::filesystem::path& build_dir);

}  // namespace pvk
