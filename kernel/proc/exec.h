// Loading an embedded program into a fresh address space (execve).
#pragma once
#include "base/lib/error_or.h"

namespace pvk {

struct Process;

// Is there an embedded program of that name (what exec_program would run)?
bool program_exists(const char* name);

// Replaces p's address space with the named program and sets its user
// frame to the entry point, argv and envp on the stack. On error p is unchanged.
ErrorOr<void> exec_program(Process& p, const char* name, const char* const* argv, const char* const* envp);

}  // namespace pvk
