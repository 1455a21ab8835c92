// Lock classes and the lock-order check. Every lock belongs to a class with
// a rank; a CPU may only take a lock whose rank is strictly higher than that
// of every lock it already holds. Two CPUs that both obey that order can
// never wait on each other in a cycle, so a violation is a deadlock waiting
// to happen even on a run where it did not: debug builds stop the kernel on
// the first one, naming both locks (Linux's lockdep in its simplest form:
// ranks fixed by hand instead of an order learnt at run time).
//
// LockOrder is the book one CPU keeps of the locks it holds; it has no
// hardware in it, so the host tests drive it directly.
#pragma once
#include <stdint.h>

#include "base/lib/lock_stats.h"

namespace pvk {

// Ranks, outermost first. Gaps leave room for locks added later.
enum class LockRank : uint8_t {
  Kernel = 10,    // the kernel lock (kernel/kernel_lock.h): taken first on entry
  FdTable = 12,   // one thread group's descriptor table (kernel/proc/fd_table.h): a lookup's slot and reference
  Futex = 15,     // one futex hash bucket's waiters (kernel/proc/futex.cpp): a wake queues under it
  Pipe = 17,      // one pipe's buffer and its ends' wait queues (kernel/proc/pipe.h): a wake queues under it
  RunQueue = 20,  // one CPU's run queue (kernel/proc/run_queue.h)
  Mm = 30,        // one address space's page tables
  Spaces = 32,    // the table of address spaces and the root cache (mm/address_space_parts.h)
  FilePages = 35, // the root filesystem's file-page index (a fault maps a file's page under Mm)
  Frames = 40,    // the frame allocator
  CrossCpu = 50,  // mailboxes of cross-CPU requests
  Console = 60,   // console output: innermost, so a report can be made from under any lock
};

struct LockClass {
  const char* name;
  LockRank rank;
  LockStat stat = LockStat::none;  // where its statistics are counted
};

class LockOrder {
 public:
  static constexpr unsigned kMaxHeld = 8;

  // The held lock that makes taking `next` a violation (rank not above
  // it), or null if `next` may be taken. Also a violation: more than
  // kMaxHeld locks at once (reported as the innermost held one).
  const LockClass* conflict(const LockClass& next) const;
  // Records `next` as held (call after conflict() said yes).
  void push(const LockClass& next);
  // Records `cls` as released; false if it was not the innermost held lock
  // of that class (locks are released in the reverse order they were taken).
  bool pop(const LockClass& cls);
  unsigned depth() const { return depth_; }

 private:
  const LockClass* held_[kMaxHeld] = {};
  unsigned depth_ = 0;
};

}  // namespace pvk
