#include "arch/symbols.h"

#include "base/arch/probe.h"
#include "base/console/console.h"

struct KsymEntry {
  uint64_t addr;
  const char* name;
};
extern "C" const uint64_t pvk_ksyms_count;
extern "C" const KsymEntry pvk_ksyms[];

namespace pvk {

const char* symbol_for(uint64_t addr, uint64_t* offset) {
  // Sorted by address: find the last entry at or below addr.
  uint64_t lo = 0, hi = pvk_ksyms_count;
  if (hi == 0 || addr < pvk_ksyms[0].addr) return nullptr;
  while (hi - lo > 1) {
    uint64_t mid = (lo + hi) / 2;
    if (pvk_ksyms[mid].addr <= addr)
      lo = mid;
    else
      hi = mid;
  }
  *offset = addr - pvk_ksyms[lo].addr;
  return pvk_ksyms[lo].name;
}

namespace {
void print_frame(unsigned n, uint64_t addr) {
  uint64_t off = 0;
  const char* name = symbol_for(addr, &off);
  if (name)
    kprintf("  #%u 0x%016lx %s+0x%lx\n", n, addr, name, off);
  else
    kprintf("  #%u 0x%016lx ?\n", n, addr);
}
}  // namespace

void print_backtrace(uint64_t rip, uint64_t rbp) {
  kprintf("backtrace:\n");
  print_frame(0, rip);
  // Walk saved frame pointers; every read is probed so a corrupt chain ends
  // the backtrace instead of faulting inside the fault handler.
  for (unsigned n = 1; n < 32 && rbp && !(rbp & 7); ++n) {
    uint64_t next = 0, ret = 0;
    if (!probe_read_u64(reinterpret_cast<void*>(rbp), &next) ||
        !probe_read_u64(reinterpret_cast<void*>(rbp + 8), &ret) || !ret)
      break;
    print_frame(n, ret);
    if (next <= rbp) break;  // stacks grow down: the chain must go up
    rbp = next;
  }
}

}  // namespace pvk
