// What kernbench's worker (bench/seed002.cpp) and its job, kbworker
// (bench/kbworker.cpp), agree on: the "source file" the worker pipes into
// each job, byte by byte, so the job can check every byte it read.
#pragma once
#include <stdint.h>

namespace bench {

// Byte k of a job's source text: printable, never the same for long.
inline char source_byte(uint64_t k) { return static_cast<char>(' ' + (k * 131 + k / 4096) % 95); }

}  // namespace bench
