// The file system calls (kernel/proc/fs_path_calls.cpp: calls that take a
// path; kernel/proc/fs_fd_calls.cpp: calls on descriptors), with Linux
// x86-64 numbers and errno values, over the root filesystem (kernel/fs/).
#pragma once
#include <stdint.h>

#include "base/lib/error_or.h"
#include "kernel/proc/file.h"

namespace pvk {

namespace fs {
struct Inode;
}
namespace abi {
struct Stat;
}

using SyscallArgs = uint64_t[6];

// The call's result as rax, or false if `nr` is none of these calls.
bool fs_path_call(uint64_t nr, const SyscallArgs& a, int64_t& ret);
bool fs_fd_call(uint64_t nr, const SyscallArgs& a, int64_t& ret);
bool sendfile_call(uint64_t nr, const SyscallArgs& a, int64_t& ret);  // kernel/proc/sendfile_call.cpp

namespace fscall {

int64_t result(Errno e);
File** fd_table();
FileRef fd_get(uint64_t fd);
// Puts f (whose reference the table takes over) at the lowest free
// descriptor >= min; EMFILE if none.
ErrorOr<int> install(File* f, bool cloexec, unsigned min = 0);
void set_cloexec(unsigned fd, bool on);
void fill_stat(const File* f, abi::Stat& st);
// After a successful execve: descriptors marked FD_CLOEXEC close.
void close_on_exec();

}  // namespace fscall
}  // namespace pvk
