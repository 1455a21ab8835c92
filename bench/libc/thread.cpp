// The thread library (thread.h).
#include "bench/libc/thread.h"

#include "bench/libc/user.h"

namespace pvk::user {

int64_t thread_create(Thread* t, void (*fn)(void*), void* arg, size_t stack_size) {
  stack_size = (stack_size + kPage - 1) & ~(kPage - 1);
  if (stack_size < 2 * kPage) stack_size = 2 * kPage;
  const int64_t m = mmap(nullptr, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
  if (is_err(m)) return m;
  auto* base = reinterpret_cast<uint8_t*>(m);
  auto* self = reinterpret_cast<ThreadSelf*>(base);  // the TLS block, at the bottom
  self->self = self;
  self->thread = t;
  self->arg = arg;
  // The new stack's top holds what the child pops: fn, then arg; after the
  // pops rsp is 16-byte aligned, as a call expects.
  auto* top = reinterpret_cast<uint64_t*>(base + stack_size);
  top[-1] = reinterpret_cast<uint64_t>(arg);
  top[-2] = reinterpret_cast<uint64_t>(fn);
  t->stack = base;
  t->stack_size = stack_size;
  t->tid = -1;  // until the kernel writes the id (CLONE_PARENT_SETTID)
  const int64_t tid = pvk_thread_clone(kCloneThreadFlags, top - 2, &t->tid, &t->tid, reinterpret_cast<uint64_t>(self));
  if (tid < 0) {
    munmap(base, stack_size);
    t->stack = nullptr;
    t->tid = 0;
  }
  return tid;
}

int64_t thread_join(Thread* t) {
  for (;;) {
    const int32_t v = __atomic_load_n(&t->tid, __ATOMIC_ACQUIRE);
    if (v == 0) break;
    const int64_t r = futex(reinterpret_cast<volatile uint32_t*>(&t->tid), FUTEX_WAIT, static_cast<uint32_t>(v));
    if (r < 0 && r != -EAGAIN && r != -EINTR) return r;
  }
  const int64_t r = t->stack ? munmap(t->stack, t->stack_size) : 0;
  t->stack = nullptr;
  return r;
}

void thread_exit(int code) {
  syscall1(SYS_exit, u(code));
  __builtin_unreachable();
}

void mutex_lock(Mutex* m) {
  uint32_t c = 0;
  if (__atomic_compare_exchange_n(&m->state, &c, 1u, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
  if (c != 2) c = __atomic_exchange_n(&m->state, 2u, __ATOMIC_ACQUIRE);
  while (c != 0) {
    futex(&m->state, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 2);
    c = __atomic_exchange_n(&m->state, 2u, __ATOMIC_ACQUIRE);
  }
}

void mutex_unlock(Mutex* m) {
  if (__atomic_fetch_sub(&m->state, 1u, __ATOMIC_RELEASE) != 1) {
    __atomic_store_n(&m->state, 0u, __ATOMIC_RELEASE);
    futex(&m->state, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1);
  }
}

}  // namespace pvk::user
