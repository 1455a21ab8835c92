#include "kernel/proc/random.h"

#include <stdint.h>

#include "base/arch/cpu.h"
#include "base/lib/kstring.h"

namespace pvk {
namespace {

// The stream's position, one word advanced atomically: getrandom runs
// without the kernel lock, on several CPUs at once, and each word of the
// stream goes to one caller.
uint64_t g_state = 0;

uint64_t next() {
  uint64_t unseeded = 0;
  if (!__atomic_load_n(&g_state, __ATOMIC_RELAXED))  // the first use seeds it (one seed wins)
    __atomic_compare_exchange_n(&g_state, &unseeded, cpu::rdtsc() | 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  uint64_t z = __atomic_add_fetch(&g_state, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

void random_bytes(void* dst, size_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  while (n) {
    const uint64_t w = next();
    const size_t k = n < sizeof w ? n : sizeof w;
    memcpy(out, &w, k);
    out += k, n -= k;
  }
}

}  // namespace pvk
