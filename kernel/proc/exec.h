// Loading a program (embedded in the image, or a static ELF file of the
// root filesystem) into a fresh address space (execve).
#pragma once
#include "base/lib/error_or.h"

namespace pvk {

struct Process;
class ExecArgs;

// Whether exec_program would find something to run at `path` (an embedded
// program, or an executable regular file of the root filesystem): ENOENT,
// EACCES, ENOTDIR... as execve reports them.
ErrorOr<void> check_exec_file(const char* path);

// Replaces p's address space with the named program and sets its user
// frame to the entry point, argv and envp (args) on the stack. On error p
// is unchanged. A script's exec rewrites args' argv[0] (exec_args.h).
ErrorOr<void> exec_program(Process& p, const char* name, ExecArgs& args);

}  // namespace pvk
