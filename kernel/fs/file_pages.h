// A regular file of the root filesystem as the page source of a private
// file mapping (mm/page_source.h): exec maps a program's segments and mmap
// a file through it, and mm's fault path asks it for the file's frames.
#pragma once
#include "kernel/fs/ramfs.h"
#include "mm/page_source.h"

namespace pvk::fs {

// The source for file n, its page `first_page` at the mapping's start. The
// mapping (each VMA made of it) holds a reference to the node, so an
// unlinked file's pages stay while a mapping needs them.
PageSource file_pages(Inode* n, uint64_t first_page);

// Whether a mapping's last reference to a file was dropped without the
// kernel lock and its put waits; and those puts, run under the kernel lock
// (the way back to user mode of a call that ran without it). Inline: every
// unlocked system call's way back asks.
extern bool g_deferred_pending;
inline bool puts_deferred() { return __atomic_load_n(&g_deferred_pending, __ATOMIC_ACQUIRE); }
void run_deferred_puts();

}  // namespace pvk::fs
