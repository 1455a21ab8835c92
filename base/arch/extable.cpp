#include "base/arch/probe.h"

struct ExtableEntry {
  uint64_t insn;
  uint64_t fixup;
};
extern "C" const ExtableEntry __extable_start[], __extable_end[];

namespace pvk {

uint64_t extable_fixup(uint64_t rip) {
  for (const ExtableEntry* e = __extable_start; e != __extable_end; ++e)
    if (e->insn == rip) return e->fixup;
  return 0;
}

}  // namespace pvk
