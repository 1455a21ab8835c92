// User programs embedded in the kernel image (built from bench/ and
// tests/user/, see bench/CMakeLists.txt); execve finds them by name.
#pragma once
#include <stdint.h>

struct PvkEmbeddedProgram {
  const char* name;
  const uint8_t* start;
  const uint8_t* end;
};

extern "C" const PvkEmbeddedProgram pvk_programs[];
extern "C" const uint64_t pvk_program_count;
