#include "kernel/proc/random.h"

#include <stdint.h>

#include "base/arch/cpu.h"
#include "base/lib/kstring.h"

namespace pvk {
namespace {

uint64_t g_state = 0;  // under the kernel lock, like every caller

uint64_t next() {
  if (!g_state) g_state = cpu::rdtsc() | 1;
  uint64_t z = (g_state += 0x9e3779b97f4a7c15ull);
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
