// The user/kernel ABI of pvk processes: syscall numbers, structures and
// constants, shared by the kernel and the user programs (bench/libc).
//
// Numbers and layouts follow Linux x86-64 wherever Linux has the call, so
// the same benchmark sources build as static Linux executables with a thin
// shim; pvk's own calls live above 500. Calling convention: the `syscall`
// instruction, number in rax, arguments in rdi, rsi, rdx, r10, r8, r9,
// result in rax (negative errno on failure); rcx and r11 are clobbered.
//
// Plain C++ with fixed-width types only: no kernel headers.
#pragma once
#include <stdint.h>

namespace pvk::abi {

enum Syscall : uint64_t {
  SYS_read = 0,
  SYS_write = 1,
  SYS_close = 3,
  SYS_mmap = 9,
  SYS_mprotect = 10,
  SYS_munmap = 11,
  SYS_brk = 12,
  SYS_rt_sigaction = 13,
  SYS_rt_sigreturn = 15,
  SYS_rt_sigprocmask = 14,  // (how, const uint64_t* set, uint64_t* old, sigsetsize = 8)
  SYS_rt_sigsuspend = 130,
  // Identity and limits, as glibc's static startup and busybox ask for them
  // (kernel/proc/linux_calls.cpp).
  SYS_uname = 63,
  SYS_getuid = 102,
  SYS_getgid = 104,
  SYS_geteuid = 107,
  SYS_getegid = 108,
  SYS_prctl = 157,
  SYS_getrlimit = 97,
  SYS_prlimit64 = 302,
  SYS_set_robust_list = 273,
  SYS_gettimeofday = 96,  // (Timeval* tv, Timezone* tz)
  SYS_time = 201,          // (int64_t* tloc) -> seconds
  SYS_sysinfo = 99,        // (Sysinfo* info)
  SYS_setpgid = 109,
  SYS_getpgrp = 111,
  SYS_setsid = 112,
  SYS_getpgid = 121,
  SYS_getsid = 124,
  SYS_fadvise64 = 221,     // (fd, offset, len, advice)
  SYS_getpeername = 52,    // (fd, sockaddr*, socklen_t*): pvk has no sockets
  SYS_sendfile = 40,       // (out_fd, in_fd, int64_t* offset, count)
  SYS_getrandom = 318,  // (const uint64_t* mask, sigsetsize = 8) -> -EINTR once a signal is handled
  SYS_pipe = 22,
  SYS_sched_yield = 24,
  SYS_sched_setaffinity = 203,  // (pid, len, const uint64_t* mask): CPUs 0..63 in the first word
  SYS_sched_getaffinity = 204,  // (pid, len, uint64_t* mask): returns the bytes written
  SYS_getcpu = 309,             // (unsigned* cpu, unsigned* node, void* unused)
  SYS_dup2 = 33,
  SYS_nanosleep = 35,  // (const Timespec* req, Timespec* rem)
  SYS_getpid = 39,
  SYS_clone = 56,  // (flags, newsp, parent_tid*, child_tid*, tls): Linux x86-64's argument order
  SYS_fork = 57,
  SYS_execve = 59,
  SYS_exit = 60,
  SYS_wait4 = 61,
  SYS_kill = 62,
  SYS_getppid = 110,
  SYS_arch_prctl = 158,
  SYS_gettid = 186,
  SYS_futex = 202,  // (uint32_t* uaddr, op, val, const Timespec* timeout, ...)
  SYS_set_tid_address = 218,
  SYS_clock_gettime = 228,
  SYS_clock_nanosleep = 230,  // (clockid, flags, const Timespec* req, Timespec* rem)
  SYS_exit_group = 231,
  SYS_tgkill = 234,
  // Files (the root filesystem, docs/rootfs.md).
  SYS_open = 2,
  SYS_stat = 4,
  SYS_fstat = 5,
  SYS_lstat = 6,
  SYS_lseek = 8,
  SYS_ioctl = 16,
  SYS_pread64 = 17,
  SYS_pwrite64 = 18,
  SYS_access = 21,
  SYS_dup = 32,
  SYS_fcntl = 72,
  SYS_truncate = 76,
  SYS_ftruncate = 77,
  SYS_getcwd = 79,
  SYS_chdir = 80,
  SYS_fchdir = 81,
  SYS_rename = 82,
  SYS_mkdir = 83,
  SYS_rmdir = 84,
  SYS_unlink = 87,
  SYS_readlink = 89,
  SYS_getdents64 = 217,
  SYS_openat = 257,
  SYS_mkdirat = 258,
  SYS_newfstatat = 262,
  SYS_unlinkat = 263,
  SYS_renameat = 264,
  SYS_readlinkat = 267,
  SYS_faccessat = 269,
  SYS_dup3 = 292,
  SYS_pipe2 = 293,
  // pvk's own.
  SYS_pvk_counters = 500,  // (PvkCounters* out) -> 0
  SYS_pvk_shutdown = 501,  // (int status) -> only init (pid 1) may call it
  SYS_pvk_cpa = 502,       // (pages, uint64_t ns[2]) -> 0: set_memory_wc, set_memory_wb timed in the kernel
  SYS_pvk_probe = 503,     // (PvkProbe kind, count, uint64_t ns[1]) -> 0: `count` events of one kind, timed in the kernel
};

// SYS_pvk_probe: one kind of event the cost model prices (base/counters.inc,
// tools/bench's cost model), run `count` times (1..kMaxProbeCount) with
// nothing else in between, timed by the kernel with the TSC. `pvk
// calibrate` (bench/calibrate.cpp) takes the slope between two counts, so
// the call's own fixed cost cancels. -EINVAL: an unknown kind or a count
// out of range; -EFAULT: ns is not writable user memory; -EOPNOTSUPP: the
// platform has no such event (hypercalls natively, an IPI with one CPU
// online, the ptwr assist refused); -ETIMEDOUT: an IPI was not answered.
enum PvkProbe : uint64_t {
  PROBE_work = 0,        // ordinary kernel code (the kernel's formatter), no event: the instruction factor
  PROBE_invlpg = 1,      // flush_tlb_one of a kernel address (natively invlpg, under Xen an mmuext op)
  PROBE_cr3_reload = 2,  // flush_tlb_all (natively a CR3 reload, under Xen an mmuext op)
  PROBE_exception = 3,   // arms `count` user page faults at kProbeFaultAddress, each returned from past the load (ns: 0; the caller times them)
  PROBE_hypercall = 4,   // Xen: a null hypercall (xen_version)
  PROBE_multicall = 5,   // Xen: null calls inside multicalls of up to 32
  PROBE_mmu_update = 6,  // Xen: mmu_update entries toggling a scratch leaf's write bit, up to 32 a hypercall
  PROBE_ptwr = 7,        // Xen: trapped stores into a scratch L1 table (writable page tables), toggling the write bit
  PROBE_ipi = 8,         // an IPI to another CPU and its acknowledgement, waited for
  PROBE_clear = 9,       // memset of a 4 KiB frame (rep stosb)
  PROBE_copy = 10,       // memcpy of a 4 KiB frame (rep movsb)
  PROBE_walk = 11,       // ordinary kernel code with a spread-out working set: page walks of the physmap, 2 MiB apart
  PROBE_kinds = 12,
};
inline constexpr uint64_t kMaxProbeCount = 65536;
// PROBE_exception's faults: a load from this address (no program maps the
// page below kUserBase), made with `movq (%rax), %rax` — kProbeLoadBytes
// long, which the kernel steps over.
inline constexpr uint64_t kProbeFaultAddress = 0x1000;
inline constexpr uint64_t kProbeLoadBytes = 3;

// errno values (Linux's).
enum Errno : int64_t {
  EPERM = 1, ENOENT = 2, ESRCH = 3, EINTR = 4, EIO = 5, E2BIG = 7, ENOEXEC = 8, EBADF = 9, ECHILD = 10,
  EAGAIN = 11, ENOMEM = 12, EFAULT = 14, EBUSY = 16, EEXIST = 17, EINVAL = 22, EMFILE = 24, EPIPE = 32,
  ENOSYS = 38, EOPNOTSUPP = 95, ETIMEDOUT = 110,
  EACCES = 13, EXDEV = 18, ENOTDIR = 20, EISDIR = 21, ENOTTY = 25, EFBIG = 27, ENOSPC = 28, ESPIPE = 29, ERANGE = 34, ENAMETOOLONG = 36, ENOTEMPTY = 39, ELOOP = 40, ENODEV = 19, EOVERFLOW = 75, ENOTSOCK = 88,
};

// open flags, *at flags, lseek, fcntl and ioctl requests (Linux x86-64's).
inline constexpr uint64_t O_RDONLY = 0, O_WRONLY = 1, O_RDWR = 2, O_ACCMODE = 3, O_CREAT = 0100, O_EXCL = 0200,
                          O_NOCTTY = 0400, O_TRUNC = 01000, O_APPEND = 02000, O_NONBLOCK = 04000,
                          O_LARGEFILE = 0100000, O_DIRECTORY = 0200000, O_NOFOLLOW = 0400000,
                          O_CLOEXEC = 02000000;
inline constexpr int64_t AT_FDCWD = -100;
inline constexpr uint64_t AT_SYMLINK_NOFOLLOW = 0x100, AT_REMOVEDIR = 0x200, AT_EACCESS = 0x200,
                          AT_EMPTY_PATH = 0x1000;
inline constexpr uint64_t F_OK = 0, X_OK = 1, W_OK = 2, R_OK = 4;
inline constexpr uint64_t SEEK_SET = 0, SEEK_CUR = 1, SEEK_END = 2;
inline constexpr uint64_t F_DUPFD = 0, F_GETFD = 1, F_SETFD = 2, F_GETFL = 3, F_SETFL = 4, F_DUPFD_CLOEXEC = 1030;
inline constexpr uint64_t FD_CLOEXEC = 1;
inline constexpr uint64_t TCGETS = 0x5401, TCSETS = 0x5402, TCSETSW = 0x5403, TCSETSF = 0x5404,
                          TIOCGWINSZ = 0x5413, TIOCSWINSZ = 0x5414;
inline constexpr uint32_t S_IFMT = 0170000, S_IFDIR = 0040000, S_IFREG = 0100000, S_IFLNK = 0120000,
                          S_IFCHR = 0020000, S_IFIFO = 0010000;
inline constexpr uint8_t DT_FIFO = 1, DT_CHR = 2, DT_DIR = 4, DT_REG = 8, DT_LNK = 10;

// struct stat as Linux x86-64 lays it out (144 bytes).
struct Stat {
  uint64_t st_dev, st_ino, st_nlink;
  uint32_t st_mode, st_uid, st_gid;
  int32_t pad0;
  uint64_t st_rdev;
  int64_t st_size, st_blksize, st_blocks;
  int64_t st_atime, st_atime_nsec, st_mtime, st_mtime_nsec, st_ctime, st_ctime_nsec;
  int64_t unused[3];
};
static_assert(sizeof(Stat) == 144, "Linux x86-64 struct stat");

// getdents64's record: d_reclen bytes, 8-aligned, the name NUL-terminated.
struct Dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  uint16_t d_reclen;
  uint8_t d_type;
  char d_name[];
};

// sysinfo's struct sysinfo as Linux x86-64 lays it out (112 bytes).
struct Sysinfo {
  int64_t uptime;
  uint64_t loads[3];
  uint64_t totalram, freeram, sharedram, bufferram, totalswap, freeswap;
  uint16_t procs;
  uint16_t pad;
  uint32_t pad2;
  uint64_t totalhigh, freehigh;
  uint32_t mem_unit;
  char reserved[4];
};
static_assert(sizeof(Sysinfo) == 112, "Linux x86-64 struct sysinfo");

// TCGETS's struct termios (the kernel's, 36 bytes) and TIOCGWINSZ's winsize.
struct Termios {
  uint32_t c_iflag, c_oflag, c_cflag, c_lflag;
  uint8_t c_line;
  uint8_t c_cc[19];
};
static_assert(sizeof(Termios) == 36, "Linux's kernel termios");
struct Winsize {
  uint16_t ws_row, ws_col, ws_xpixel, ws_ypixel;
};

// clone flags (Linux's). The low byte (CSIGNAL) is the signal a fork-like
// child sends its parent on exit.
inline constexpr uint64_t CSIGNAL = 0xff;
inline constexpr uint64_t CLONE_VM = 0x100, CLONE_FS = 0x200, CLONE_FILES = 0x400, CLONE_SIGHAND = 0x800;
inline constexpr uint64_t CLONE_VFORK = 0x4000, CLONE_PARENT = 0x8000, CLONE_THREAD = 0x10000;
inline constexpr uint64_t CLONE_SYSVSEM = 0x40000, CLONE_SETTLS = 0x80000, CLONE_PARENT_SETTID = 0x100000;
inline constexpr uint64_t CLONE_CHILD_CLEARTID = 0x200000, CLONE_CHILD_SETTID = 0x01000000;
// What a thread library passes for a thread (glibc's and musl's set).
inline constexpr uint64_t kCloneThreadFlags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                                              CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                                              CLONE_CHILD_CLEARTID;

// futex operations (Linux's). The command is op & FUTEX_CMD_MASK.
inline constexpr uint64_t FUTEX_WAIT = 0, FUTEX_WAKE = 1, FUTEX_WAIT_BITSET = 9, FUTEX_WAKE_BITSET = 10;
// The bitset FUTEX_WAIT and FUTEX_WAKE imply: every waiter matches every wake.
inline constexpr uint32_t FUTEX_BITSET_MATCH_ANY = 0xffffffff;
inline constexpr uint64_t FUTEX_PRIVATE_FLAG = 128, FUTEX_CLOCK_REALTIME = 256;
inline constexpr uint64_t FUTEX_CMD_MASK = ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);

// arch_prctl codes (Linux's).
inline constexpr uint64_t ARCH_SET_GS = 0x1001, ARCH_SET_FS = 0x1002, ARCH_GET_FS = 0x1003, ARCH_GET_GS = 0x1004;

// mmap / mprotect.
inline constexpr uint64_t PROT_NONE = 0, PROT_READ = 1, PROT_WRITE = 2, PROT_EXEC = 4;
inline constexpr uint64_t MAP_SHARED = 0x01, MAP_PRIVATE = 0x02, MAP_FIXED = 0x10, MAP_ANONYMOUS = 0x20;
inline constexpr uint64_t MAP_FAILED = ~uint64_t{0};

// Signals (Linux numbers) and sigaction (the kernel's struct layout on Linux).
enum Signal : int {
  SIGILL = 4, SIGTRAP = 5, SIGBUS = 7, SIGFPE = 8, SIGKILL = 9, SIGUSR1 = 10, SIGSEGV = 11, SIGPIPE = 13,
  SIGTERM = 15, SIGCHLD = 17, SIGCONT = 18, SIGSTOP = 19, SIGURG = 23, SIGWINCH = 28,
};
inline constexpr int kNumSignals = 64;
inline constexpr uint64_t SA_RESTORER = 0x04000000;
inline constexpr uint64_t SA_NODEFER = 0x40000000;  // the signal is not blocked while its handler runs
inline constexpr uint64_t SA_RESETHAND = 0x80000000;  // the handler is reset to SIG_DFL on delivery
inline constexpr uint64_t SIG_DFL = 0, SIG_IGN = 1;
struct KernelSigaction {
  uint64_t handler;   // void (*)(int), or SIG_DFL / SIG_IGN
  uint64_t flags;     // must include SA_RESTORER
  uint64_t restorer;  // called when the handler returns; issues rt_sigreturn
  uint64_t mask;      // signals blocked while the handler runs (bit n-1 = signal n)
};

// wait4 status words (Linux encoding).
inline constexpr int wait_exited(int code) { return (code & 0xff) << 8; }
inline constexpr int wait_signaled(int sig) { return sig & 0x7f; }
inline constexpr bool WIFEXITED(int s) { return (s & 0x7f) == 0; }
inline constexpr int WEXITSTATUS(int s) { return (s >> 8) & 0xff; }
inline constexpr bool WIFSIGNALED(int s) { return (s & 0x7f) != 0 && (s & 0x7f) != 0x7f; }
inline constexpr int WTERMSIG(int s) { return s & 0x7f; }
inline constexpr int WNOHANG = 1;

struct Timespec {
  int64_t tv_sec;
  int64_t tv_nsec;
};
inline constexpr int CLOCK_REALTIME = 0;
inline constexpr int CLOCK_MONOTONIC = 1;
inline constexpr int TIMER_ABSTIME = 1;  // clock_nanosleep: req is a time on the clock, not an interval

// SYS_pvk_counters: the pvops counters plus what mm and the entry code count, so user-mode
// benchmarks can report deltas next to their times.
// The counters are every line of base/counters.inc, in its order.
struct PvkCounters {
#define PVK_MMU_COUNTER(name) uint64_t name;
#define PVK_MM_COUNTER(name) uint64_t name;
#define PVK_CPU_COUNTER(name) uint64_t name;
#include "base/counters.inc"
  uint64_t free_frames;
  uint64_t tsc_khz;
  const char* platform_unused;  // reserved (0)
};

// User address space.
inline constexpr uint64_t kUserBase = 0x400000;           // programs are linked here
inline constexpr uint64_t kUserStackTop = 0x7ffffff000;   // initial stack grows down from here
inline constexpr uint64_t kUserStackPages = 64;           // 256 KiB
inline constexpr uint64_t kUserMmapBase = 0x100000000;    // mmap without a hint starts here
// The last page below the canonical hole is never user memory (as on Linux):
// a `syscall` in its last bytes would return to a non-canonical address.
inline constexpr uint64_t kUserTop = 0x00007ffffffff000;  // first non-user address
inline constexpr uint64_t kNonCanonicalStart = 0x0000800000000000;

}  // namespace pvk::abi
