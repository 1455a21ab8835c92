// Kernel symbol lookup for backtraces. The table is generated from the
// first link of pvk.elf (see guest/CMakeLists.txt) and linked into the second.
#pragma once
#include <stdint.h>

namespace pvk {

// Name of the function containing addr and addr's offset into it, or null.
const char* symbol_for(uint64_t addr, uint64_t* offset);

// Prints "  #n 0xADDR name+0xOFF" lines following the frame-pointer chain.
void print_backtrace(uint64_t rip, uint64_t rbp);

}  // namespace pvk
