// The descriptor table's lock: one per thread group (class `fd_table`,
// rank FdTable, inside the kernel lock's). Every lookup takes its own
// reference to the File under it (fd_hold), and every change of a slot is
// made under it (fd_swap), the slot and its close-on-exec bit together. So
// a close or dup2 by another thread either comes first (the lookup finds
// the new slot) or after (the call holds the File, which the close's put
// then does not free): no lookup ever takes a reference to a File being
// put. Lookups and changes under the kernel lock take it too, since a
// close of a pipe end runs without the kernel lock (fd_close_pipe_end), as
// do the reads and writes of pipe ends (fd_get_pipe_end); anything else
// that changes a table (dup2, open, pipe, exec) still runs under the
// kernel lock, so searches for a free slot there see slots only freed
// meanwhile, never taken.
//
// A File is put only after its slot has been changed and the lock
// dropped: the last put of a pipe end takes the pipe's lock, and a put of
// any other kind the file tree's (the kernel lock's) locks.
#pragma once
#include <stdint.h>

#include "kernel/proc/file.h"

namespace pvk {

struct Process;

// Process::kMaxFds, here so the batch calls can name their arrays
// without the process header (checked in fd_table.cpp).
inline constexpr unsigned kMaxFdSlots = 16;

// Puts f (which may be null) into descriptor fd of the group that leader
// leads, with its close-on-exec bit, returning what was there, for the
// caller to put.
File* fd_swap(Process& leader, unsigned fd, File* f, bool cloexec);
// A new reference to the File descriptor fd of leader's group names, or
// null (a bad descriptor).
File* fd_hold(const Process& leader, uint64_t fd);

// The whole table at once, under one take of its lock (fork and exit: a
// take per slot cost a fork and exit about 2,300 instructions):
// fd_hold_all copies leader's group's descriptors into `out`, a new
// reference each, and returns their close-on-exec bits; fd_take_all empties
// the table into `out` (no reference taken: the table's own move there) for
// the caller to put.
uint32_t fd_hold_all(const Process& leader, File* (&out)[kMaxFdSlots]);
void fd_take_all(Process& leader, File* (&out)[kMaxFdSlots]);

// Without the kernel lock: the File descriptor fd of the caller's group
// names, held for the call, if it is a pipe end; empty otherwise (a bad
// descriptor, or another kind of file: the caller takes the locked path,
// which says which).
FileRef fd_get_pipe_end(uint64_t fd);
// Without the kernel lock: closes descriptor fd of the caller's group if it
// names a pipe end (true); false, with nothing done, otherwise.
bool fd_close_pipe_end(uint64_t fd);

}  // namespace pvk
