// Loading a program (embedded in the image, or a static ELF file of the
// root filesystem) into a fresh address space (execve).
#pragma once
#include <stdint.h>

#include "base/lib/error_or.h"
#include "kernel/proc/elf_image.h"
#include "kernel/proc/shebang.h"

namespace pvk {

namespace fs {
struct Inode;
}
struct Process;
class ExecArgs;

// What exec loads from: an image embedded in the kernel, or a regular file
// of the root filesystem (a reference held while exec reads it).
struct ExecFile {
  const uint8_t* image = nullptr;
  fs::Inode* node = nullptr;
  uint64_t size = 0;
  const char* name = nullptr;  // what the process is called: the file's last path component

  ErrorOr<void> read(uint64_t offset, void* dst, uint64_t len) const;
  void release();
};

// An exec checked as far as it goes before anything is built: the file
// found, a `#!` script's interpreter found (and argv rewritten for it),
// the ELF headers parsed. Every refusal — ENOENT, EACCES, ENOEXEC, ELOOP,
// E2BIG — comes from prepare_exec, so execve refuses before the caller's
// other threads end (Linux's point of no return is after the same checks).
struct ExecPlan {
  ExecFile file;
  ElfImage elf;
  const char* path = nullptr;  // what runs: the path asked for, or a script's interpreter
  char head[kShebangBytes];    // a script's first bytes: the interpreter's strings point in here
  ExecPlan() = default;
  ExecPlan(const ExecPlan&) = delete;
  ExecPlan& operator=(const ExecPlan&) = delete;
  ~ExecPlan() { file.release(); }
};

ErrorOr<void> prepare_exec(ExecPlan& plan, const char* path, ExecArgs& args);
// Builds the new address space and replaces p's with it. On error (no
// memory) p is unchanged.
ErrorOr<void> commit_exec(Process& p, ExecPlan& plan, const ExecArgs& args);

// Whether exec_program would find something to run at `path` (an embedded
// program, or an executable regular file of the root filesystem): ENOENT,
// EACCES, ENOTDIR... as execve reports them.
ErrorOr<void> check_exec_file(const char* path);

// Replaces p's address space with the named program and sets its user
// frame to the entry point, argv and envp (args) on the stack. On error p
// is unchanged. A script's exec rewrites args' argv[0] (exec_args.h).
ErrorOr<void> exec_program(Process& p, const char* name, ExecArgs& args);

}  // namespace pvk
