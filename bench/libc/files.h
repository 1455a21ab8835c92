// File system calls of pvk's runtime (Linux x86-64 numbers, base/abi.h):
// raw wrappers returning the kernel's value or a negative errno.
#pragma once
#include "bench/libc/user.h"

namespace pvk::user {

inline int64_t open(const char* path, uint64_t flags, uint64_t mode = 0) { return syscall3(SYS_open, u(path), flags, mode); }
inline int64_t openat(int dirfd, const char* path, uint64_t flags, uint64_t mode = 0) {
  return syscall4(SYS_openat, u(dirfd), u(path), flags, mode);
}
inline int64_t stat(const char* path, Stat* st) { return syscall2(SYS_stat, u(path), u(st)); }
inline int64_t lstat(const char* path, Stat* st) { return syscall2(SYS_lstat, u(path), u(st)); }
inline int64_t fstat(int fd, Stat* st) { return syscall2(SYS_fstat, u(fd), u(st)); }
inline int64_t newfstatat(int dirfd, const char* path, Stat* st, uint64_t flags) {
  return syscall4(SYS_newfstatat, u(dirfd), u(path), u(st), flags);
}
inline int64_t lseek(int fd, int64_t off, uint64_t whence) { return syscall3(SYS_lseek, u(fd), u(off), whence); }
inline int64_t sendfile(int out, int in, int64_t* offset, size_t n) {
  return syscall4(SYS_sendfile, u(out), u(in), u(offset), n);
}
inline int64_t pread(int fd, void* buf, size_t n, int64_t off) { return syscall4(SYS_pread64, u(fd), u(buf), n, u(off)); }
inline int64_t pwrite(int fd, const void* buf, size_t n, int64_t off) {
  return syscall4(SYS_pwrite64, u(fd), u(buf), n, u(off));
}
inline int64_t getdents64(int fd, void* buf, size_t n) { return syscall3(SYS_getdents64, u(fd), u(buf), n); }
inline int64_t readlink(const char* path, char* buf, size_t n) { return syscall3(SYS_readlink, u(path), u(buf), n); }
inline int64_t unlink(const char* path) { return syscall1(SYS_unlink, u(path)); }
inline int64_t unlinkat(int dirfd, const char* path, uint64_t flags) {
  return syscall3(SYS_unlinkat, u(dirfd), u(path), flags);
}
inline int64_t mkdir(const char* path, uint64_t mode) { return syscall2(SYS_mkdir, u(path), mode); }
inline int64_t rmdir(const char* path) { return syscall1(SYS_rmdir, u(path)); }
inline int64_t rename(const char* from, const char* to) { return syscall2(SYS_rename, u(from), u(to)); }
inline int64_t truncate(const char* path, int64_t len) { return syscall2(SYS_truncate, u(path), u(len)); }
inline int64_t ftruncate(int fd, int64_t len) { return syscall2(SYS_ftruncate, u(fd), u(len)); }
inline int64_t access(const char* path, uint64_t mode) { return syscall2(SYS_access, u(path), mode); }
inline int64_t chdir(const char* path) { return syscall1(SYS_chdir, u(path)); }
inline int64_t fchdir(int fd) { return syscall1(SYS_fchdir, u(fd)); }
inline int64_t getcwd(char* buf, size_t n) { return syscall2(SYS_getcwd, u(buf), n); }
inline int64_t ioctl(int fd, uint64_t req, void* arg) { return syscall3(SYS_ioctl, u(fd), req, u(arg)); }
inline int64_t fcntl(int fd, uint64_t cmd, uint64_t arg = 0) { return syscall3(SYS_fcntl, u(fd), cmd, arg); }
inline int64_t dup(int fd) { return syscall1(SYS_dup, u(fd)); }
inline int64_t dup3(int fd, int to, uint64_t flags) { return syscall3(SYS_dup3, u(fd), u(to), flags); }
inline int64_t pipe2(int fds[2], uint64_t flags) { return syscall2(SYS_pipe2, u(fds), flags); }

}  // namespace pvk::user
