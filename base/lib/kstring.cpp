#include "base/lib/kstring.h"

#include <stdint.h>

#if PVK_KERNEL
#include "base/counters.h"
#endif

namespace {

// The kernel's rep strings are counted in bytes (rep_clear_bytes,
// rep_copy_bytes): virtual time charges one instruction per byte for them,
// hardware a few hundred cycles per page, so the cost model re-prices them.
// User programs share this file and count nothing.
inline void count_rep(uint64_t* counter, size_t n) {
#if PVK_KERNEL
  __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
#else
  (void)counter;
  (void)n;
#endif
}

#if PVK_KERNEL
uint64_t* clear_counter() { return &pvk::g_cpu_counters.rep_clear_bytes; }
uint64_t* copy_counter() { return &pvk::g_cpu_counters.rep_copy_bytes; }
#else
uint64_t* clear_counter() { return nullptr; }
uint64_t* copy_counter() { return nullptr; }
#endif

}  // namespace

extern "C" {

void* memset(void* dst, int c, size_t n) {
  // rep stosb is fast on every CPU QEMU models and keeps this tiny.
  count_rep(clear_counter(), n);
  void* d = dst;
  asm volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
  return dst;
}

void* memcpy(void* dst, const void* src, size_t n) {
  count_rep(copy_counter(), n);
  void* d = dst;
  asm volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(n) : : "memory");
  return dst;
}

void* memmove(void* dst, const void* src, size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  auto* s = static_cast<const unsigned char*>(src);
  if (d < s || d >= s + n) return memcpy(dst, src, n);
  while (n--) d[n] = s[n];
  return dst;
}

int memcmp(const void* a, const void* b, size_t n) {
  auto* x = static_cast<const unsigned char*>(a);
  auto* y = static_cast<const unsigned char*>(b);
  for (size_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}

size_t strlen(const char* s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}

int strcmp(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return static_cast<unsigned char>(*a) - static_cast<unsigned char>(*b);
}

int strncmp(const char* a, const char* b, size_t n) {
  for (; n; --n, ++a, ++b) {
    if (*a != *b) return static_cast<unsigned char>(*a) - static_cast<unsigned char>(*b);
    if (!*a) return 0;
  }
  return 0;
}

}  // extern "C"
