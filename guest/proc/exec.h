// Loading an embedded program into a fresh address space (execve).
#pragma once
#include "base/lib/error_or.h"

namespace pvk {

struct Process;

// Replaces p's address space with the named program and sets its user
// frame to the entry point, argv and envp on the stack. On error p is unchanged.
ErrorOr<void> exec_program(Process& p, const char* name, const char* const* argv, const char* const* envp);

}  // namespace pvk
