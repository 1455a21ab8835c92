// pvk's tiny freestanding runtime for user programs (bench/, tests/user/).
//
// System calls follow base/abi.h: Linux x86-64 numbers and layouts, so
// the same executables run on pvk and on Linux. Every wrapper returns what the
// kernel returned: a value >= 0, or a negative errno (-abi::EFAULT, ...).
// There is no errno variable and no stdio; see print()/printf() below.
//
// No FP/SIMD: the kernel does not save that state (-mgeneral-regs-only).
#pragma once
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lib/kstring.h"  // memset, memcpy, memcmp, strlen, strcmp, ... (extern "C")
#include "base/abi.h"

namespace pvk::user {

// ---------------------------------------------------------------------------
// Raw system calls.

inline int64_t syscall0(uint64_t n) {
  int64_t r;
  asm volatile("syscall" : "=a"(r) : "a"(n) : "rcx", "r11", "memory");
  return r;
}
inline int64_t syscall1(uint64_t n, uint64_t a1) {
  int64_t r;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a1) : "rcx", "r11", "memory");
  return r;
}
inline int64_t syscall2(uint64_t n, uint64_t a1, uint64_t a2) {
  int64_t r;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a1), "S"(a2) : "rcx", "r11", "memory");
  return r;
}
inline int64_t syscall3(uint64_t n, uint64_t a1, uint64_t a2, uint64_t a3) {
  int64_t r;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a1), "S"(a2), "d"(a3) : "rcx", "r11", "memory");
  return r;
}
inline int64_t syscall4(uint64_t n, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
  int64_t r;
  register uint64_t r10 asm("r10") = a4;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10) : "rcx", "r11", "memory");
  return r;
}
inline int64_t syscall6(uint64_t n, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5,
                        uint64_t a6) {
  int64_t r;
  register uint64_t r10 asm("r10") = a4;
  register uint64_t r8 asm("r8") = a5;
  register uint64_t r9 asm("r9") = a6;
  asm volatile("syscall"
               : "=a"(r)
               : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return r;
}

// Argument to register: integers sign-extend, pointers convert.
template <typename T>
inline uint64_t u(T v) {
  return static_cast<uint64_t>(v);
}
template <typename T>
inline uint64_t u(T* p) {
  return reinterpret_cast<uint64_t>(p);
}

// True for the -4095..-1 range the kernel uses for errors (mmap and brk
// return addresses, which are never in that range).
inline bool is_err(int64_t r) { return r < 0 && r >= -4095; }

// ---------------------------------------------------------------------------
// The calls of base/abi.h, one wrapper each.

using namespace pvk::abi;

inline int64_t read(int fd, void* buf, size_t n) { return syscall3(SYS_read, u(fd), u(buf), n); }
inline int64_t write(int fd, const void* buf, size_t n) { return syscall3(SYS_write, u(fd), u(buf), n); }
inline int64_t close(int fd) { return syscall1(SYS_close, u(fd)); }
// Returns the address, or a negative errno (test with is_err()).
inline int64_t mmap(void* addr, size_t len, uint64_t prot, uint64_t flags, int fd = -1, int64_t off = 0) {
  return syscall6(SYS_mmap, u(addr), len, prot, flags, u(fd), u(off));
}
inline int64_t mprotect(void* addr, size_t len, uint64_t prot) { return syscall3(SYS_mprotect, u(addr), len, prot); }
inline int64_t munmap(void* addr, size_t len) { return syscall2(SYS_munmap, u(addr), len); }
// Linux semantics: returns the new break, or the current one if the request
// is refused; brk(nullptr) asks for the current break.
inline int64_t brk(void* addr) { return syscall1(SYS_brk, u(addr)); }
// sigsetsize (8) as Linux wants it; pvk ignores the fourth argument.
inline int64_t rt_sigaction(int sig, const KernelSigaction* act, KernelSigaction* old) {
  return syscall4(SYS_rt_sigaction, u(sig), u(act), u(old), 8);
}
inline int64_t pipe(int fds[2]) { return syscall1(SYS_pipe, u(fds)); }
inline int64_t sched_yield() { return syscall0(SYS_sched_yield); }
// CPUs 0..63: one word of mask (len in bytes, as Linux takes it).
inline int64_t sched_setaffinity(int64_t tid, size_t len, const uint64_t* mask) {
  return syscall3(SYS_sched_setaffinity, u(tid), len, u(mask));
}
inline int64_t sched_getaffinity(int64_t tid, size_t len, uint64_t* mask) {
  return syscall3(SYS_sched_getaffinity, u(tid), len, u(mask));
}
inline int64_t getcpu(uint32_t* cpu, uint32_t* node) { return syscall3(SYS_getcpu, u(cpu), u(node), 0); }
inline int64_t dup2(int oldfd, int newfd) { return syscall2(SYS_dup2, u(oldfd), u(newfd)); }
inline int64_t getpid() { return syscall0(SYS_getpid); }
inline int64_t getppid() { return syscall0(SYS_getppid); }
inline int64_t fork() { return syscall0(SYS_fork); }
// path is an embedded program's name on pvk ("cowchild"); on Linux a path.
inline int64_t execve(const char* path, const char* const* argv, const char* const* envp) {
  return syscall3(SYS_execve, u(path), u(argv), u(envp));
}
[[noreturn]] inline void exit(int code) {
  syscall1(SYS_exit, u(code));
  __builtin_unreachable();
}
[[noreturn]] inline void exit_group(int code) {
  syscall1(SYS_exit_group, u(code));
  __builtin_unreachable();
}
inline int64_t wait4(int64_t pid, int* status, int options, void* rusage = nullptr) {
  return syscall4(SYS_wait4, u(pid), u(status), u(options), u(rusage));
}
inline int64_t kill(int64_t pid, int sig) { return syscall2(SYS_kill, u(pid), u(sig)); }
inline int64_t clock_gettime(int clock, Timespec* ts) { return syscall2(SYS_clock_gettime, u(clock), u(ts)); }
inline int64_t nanosleep(const Timespec* req, Timespec* rem) { return syscall2(SYS_nanosleep, u(req), u(rem)); }
inline int64_t clock_nanosleep(int clock, int flags, const Timespec* req, Timespec* rem) {
  return syscall4(SYS_clock_nanosleep, u(clock), u(flags), u(req), u(rem));
}
inline int64_t pvk_counters(PvkCounters* out) { return syscall1(SYS_pvk_counters, u(out)); }
inline int64_t pvk_cpa(uint64_t pages, uint64_t* ns) { return syscall2(SYS_pvk_cpa, pages, u(ns)); }
inline int64_t pvk_probe(uint64_t kind, uint64_t count, uint64_t* ns) { return syscall3(SYS_pvk_probe, kind, count, u(ns)); }
inline int64_t pvk_shutdown(int status) { return syscall1(SYS_pvk_shutdown, u(status)); }
// Threads (bench/libc/thread.h builds on these). clone() here is only for
// calls that fail or are fork-like (no CLONE_VM): a thread's first
// instructions run on its new stack and need thread.h's pvk_thread_clone.
inline int64_t clone(uint64_t flags, void* newsp, int32_t* parent_tid, int32_t* child_tid, uint64_t tls) {
  return syscall6(SYS_clone, flags, u(newsp), u(parent_tid), u(child_tid), tls, 0);
}
inline int64_t gettid() { return syscall0(SYS_gettid); }
inline int64_t set_tid_address(int32_t* tidptr) { return syscall1(SYS_set_tid_address, u(tidptr)); }
inline int64_t tgkill(int64_t tgid, int64_t tid, int sig) { return syscall3(SYS_tgkill, u(tgid), u(tid), u(sig)); }
inline int64_t arch_prctl(uint64_t code, uint64_t addr) { return syscall2(SYS_arch_prctl, code, addr); }
inline int64_t futex(volatile uint32_t* uaddr, uint64_t op, uint32_t val, const Timespec* timeout = nullptr) {
  return syscall6(SYS_futex, u(uaddr), op, val, u(timeout), 0, 0);
}

// ---------------------------------------------------------------------------
// Signals.

// The restorer every handler returns into (bench/libc/asm.S): rt_sigreturn.
extern "C" void pvk_sigreturn_restorer();

// Installs handler for sig with SA_RESTORER and pvk_sigreturn_restorer;
// extra_flags and mask (bit n-1 = signal n) as in KernelSigaction. The
// handler may be SIG_DFL or SIG_IGN (as uint64_t, see the overload).
int64_t sigaction(int sig, void (*handler)(int), uint64_t extra_flags = 0, uint64_t mask = 0);
int64_t sigaction(int sig, uint64_t handler_or_sig_dfl_ign, uint64_t extra_flags = 0, uint64_t mask = 0);

// Linux's SA_NODEFER (abi.h's SA_NODEFER once it has it): the signal is not
// blocked while its handler runs. Needed by a handler that leaves with
// longjmp, which never reaches rt_sigreturn to unblock it (there is no
// sigprocmask). Named apart so it cannot clash with abi.h's.
inline constexpr uint64_t kSaNodefer = 0x40000000;

// setjmp/longjmp over callee-saved registers, %rsp and %rip (asm.S), so a
// SIGSEGV/SIGFPE handler can escape a faulting instruction. Locals changed
// between pvk_setjmp and pvk_longjmp must be volatile. The signal mask is
// not touched (there is no sigprocmask).
struct JmpBuf {
  uint64_t regs[8];  // rbx rbp r12 r13 r14 r15 rsp rip
};
extern "C" int pvk_setjmp(JmpBuf* b) __attribute__((returns_twice));
extern "C" [[noreturn]] void pvk_longjmp(JmpBuf* b, int value);

// ---------------------------------------------------------------------------
// Output (fd 1) and small helpers.

// write() until everything is written or an error; returns bytes written or
// the negative errno of the first failing write.
int64_t write_all(int fd, const void* buf, size_t n);
// read() until n bytes or EOF; returns bytes read or a negative errno.
int64_t read_full(int fd, void* buf, size_t n);

void print(const char* s);                 // to fd 1
void print_fd(int fd, const char* s);
void printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));  // base/lib/format.h syntax
void vprintf(const char* fmt, va_list ap);

// The environment block crt0 found (envp of main).
extern "C" char** pvk_environ;

// Parses a decimal or 0x-prefixed hexadecimal number; false on junk.
bool parse_u64(const char* s, uint64_t* out);

// CLOCK_MONOTONIC in nanoseconds (0 if the call fails).
uint64_t now_ns();

// SYS_pvk_counters. Returns 0, or a negative errno (-ENOSYS on Linux).
inline int64_t read_counters(PvkCounters* c) {
  memset(c, 0, sizeof *c);
  return pvk_counters(c);
}

// Anonymous memory: mmap(len, prot, MAP_PRIVATE|MAP_ANONYMOUS or `flags`);
// nullptr on failure.
void* map_anon(size_t len, uint64_t prot = PROT_READ | PROT_WRITE, uint64_t flags = MAP_PRIVATE | MAP_ANONYMOUS);

// Forks n children alive at once (blocked on one pipe until it closes), then
// reaps them: with pgd_cache=on the kernel's root cache ends up full, so a
// free-frame baseline taken afterwards does not move when roots get cached.
void warm_root_cache(int n);

// A bump allocator over mmap'd 64 KiB chunks (larger requests get their own
// mapping). Never frees; for the few long-lived buffers a program needs.
void* alloc(size_t n);

inline constexpr uint64_t kPage = 4096;

}  // namespace pvk::user
