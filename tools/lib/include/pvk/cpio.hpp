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
