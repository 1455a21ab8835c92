// Pipes under their own locks. Each pipe has a spinlock (class `pipe`,
// rank Pipe: inside the kernel lock's, since a call under it still reads
// and writes pipes, and outside the run queues', since a wake-up queues the
// woken under it) over its ring buffer, its ends' counts and two wait
// queues: readers waiting for bytes (or for the last writer to go) and
// writers waiting for room (or for the last reader to go). A waiter is an
// entry on its own kernel stack, as a futex waiter is
// (kernel/proc/futex_queue.h), and sleeps by the protocol of
// kernel/proc/wake.h, so a reader and a writer on two CPUs meet on this
// lock alone: neither needs the kernel lock, with it or without it.
//
// Lifetimes: a pipe lives while a File names it (its reader and writer
// counts are those Files), and every sleeper in it holds its File, so the
// pipe outlives its sleepers. The last close of its last end frees it
// with a release store after the lock is dropped, so the allocator (under
// the kernel lock) never hands out a pipe whose lock is still in use.
#pragma once
#include <stdint.h>

#include "base/lib/error_or.h"
#include "base/lib/spinlock.h"

namespace pvk {

struct Process;
struct WriteSource;

struct PipeWaiter {
  Process* thread;
  bool woken = false;  // set (sequentially consistent) by the waker that unlinked it
  PipeWaiter* next = nullptr;
};

struct Pipe {
  // The ring's size, and PIPE_BUF: a write of at most this many bytes goes
  // in whole, never interleaved with another writer's bytes.
  static constexpr uint32_t kSize = 4096;
  static constexpr LockClass kLockClass{"pipe", LockRank::Pipe, LockStat::pipe};

  Spinlock lock{kLockClass};
  uint32_t head = 0;  // next byte to read
  uint32_t count = 0;
  unsigned readers = 0;  // open read-end Files
  unsigned writers = 0;  // open write-end Files
  PipeWaiter* reading = nullptr;
  PipeWaiter* writing = nullptr;
  bool in_use = false;  // read and written with atomics (the free is unlocked)
  uint8_t buf[kSize] = {};
};

// A free pipe with one reader and one writer, or null (kernel lock held).
Pipe* pipe_alloc();
// Hands back a pipe from pipe_alloc that no File came to name.
void pipe_free_unused(Pipe& p);
// Reads and writes from the current thread, with or without the kernel
// lock; the caller holds a File of the right end. A write that finds no
// reader sets `broken` (the caller sends SIGPIPE) and is EPIPE. With
// `nonblock` (the File's O_NONBLOCK) a call that would wait returns what it
// moved, or EAGAIN if nothing (a write of at most PIPE_BUF bytes goes in
// whole or not at all), as on Linux.
ErrorOr<uint64_t> pipe_read(Pipe& p, uint64_t user_buf, uint64_t len, bool nonblock = false);
ErrorOr<uint64_t> pipe_write(Pipe& p, const WriteSource& src, uint64_t len, bool& broken, bool nonblock = false);
// The last File of one end has gone (with or without the kernel lock): a
// blocked peer sees EOF or EPIPE; the last end frees the pipe.
void pipe_close_end(Pipe& p, bool read_end);

}  // namespace pvk
