// A small thread library over clone and futex, for the SMP benchmarks and
// tests: thread_create / thread_join / thread_exit and a futex mutex.
//
// Each thread gets an mmap'd stack and, at the bottom of it, its TLS block
// (ThreadSelf, what %fs:0 points at, as the x86-64 TLS ABI has it),
// installed with CLONE_SETTLS. The kernel writes the new thread's id into
// Thread::tid before the thread runs (CLONE_PARENT_SETTID) and zeroes it
// and wakes its futex when the thread has exited (CLONE_CHILD_CLEARTID):
// thread_join waits for that zero. Runs unchanged on Linux.
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace pvk::user {

struct Thread {
  volatile int32_t tid = 0;  // the thread's id while it runs; 0 once it has exited
  void* stack = nullptr;     // its mapping (stack and TLS block), unmapped by thread_join
  size_t stack_size = 0;
};

// What %fs:0 points at in a thread thread_create made.
struct ThreadSelf {
  ThreadSelf* self;  // the TLS ABI's self pointer (%fs:0)
  Thread* thread;
  void* arg;
};

inline constexpr size_t kThreadStackSize = 64 * 1024;

// Starts fn(arg) in a new thread of this process; returns its tid, or a
// negative errno (nothing is left mapped then). fn returning ends the
// thread as thread_exit(0) does.
int64_t thread_create(Thread* t, void (*fn)(void*), void* arg, size_t stack_size = kThreadStackSize);
// Waits until t has exited, then frees its stack. 0, or a negative errno.
int64_t thread_join(Thread* t);
// Ends the calling thread (not the process).
[[noreturn]] void thread_exit(int code);
// The calling thread's ThreadSelf (%fs:0); only in threads thread_create made.
inline ThreadSelf* thread_self() {
  ThreadSelf* s;
  asm volatile("mov %%fs:0, %0" : "=r"(s));
  return s;
}

// A futex mutex (Drepper's "mutex 2"): 0 free, 1 held, 2 held with waiters.
struct Mutex {
  volatile uint32_t state = 0;
};
void mutex_lock(Mutex* m);
void mutex_unlock(Mutex* m);

// The raw thread clone (asm.S): clone(flags, newsp, parent_tid, child_tid,
// tls); in the child, pops fn and arg from newsp, calls fn(arg), then exit(0).
extern "C" int64_t pvk_thread_clone(uint64_t flags, void* newsp, volatile int32_t* parent_tid,
                                    volatile int32_t* child_tid, uint64_t tls);

}  // namespace pvk::user
