// Unpacks a newc cpio archive into the root filesystem (kernel/fs/ramfs.h)
// and adds what every root has: /dev/null, /dev/zero, /dev/console and a
// world-writable /tmp, unless the archive made them.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace pvk::fs {

// True when every entry was unpacked. Otherwise `why` holds one line
// naming the entry and the reason (a malformed archive, a name escaping
// the root, a missing parent, no memory left), and what was unpacked so
// far stays in the tree (the caller refuses the boot).
bool unpack_archive(const uint8_t* bytes, uint64_t len, char* why, size_t cap);

// The nodes every root has (above), for a boot without an archive too.
bool add_standard_nodes(char* why, size_t cap);

}  // namespace pvk::fs
