// sysfuzz: the in-guest system call fuzzer, run by pvk as init
// ("init=sysfuzz", defaults) or through the bench driver
// ("bench=sysfuzz:seed=1:iters=100000").
//
//   sysfuzz [seed=N] [iters=N] [children=N] [parallel=N] [regress=0|1]
//           [lifetimes=OPS [procs=N] [threads=N]]
//
// lifetimes=OPS adds the lifetime mode (sysfuzz_lifetimes.cpp: threads of
// several processes racing close/dup2/pipe/read/write/futex/clone on shared
// descriptors, every byte read checked for a leak) after the fuzzing;
// iters=0 leaves the fuzzing out.
//
// `iters` system calls in total, split over `children` forked children
// (`parallel` alive at once). Each child makes random system calls — every
// number pvk implements, unimplemented and 64-bit garbage numbers — with
// random and hostile arguments (0, -1, kernel and non-canonical addresses,
// huge lengths, bad fds and signal numbers, pointers into unmapped,
// read-only and PROT_NONE memory) and random RFLAGS (DF, AC, NT, IOPL bits;
// never TF) set right before the `syscall`. Everything is derived from the
// seed (xorshift), so a run is reproducible: a failing child prints the
// seed and child index to rerun. Children never touch the console (fds 1
// and 2 are a pipe), never kill their ancestors or pid 1, never call
// pvk_shutdown; memory-management calls on user addresses are kept inside
// the child's own arena so the child does not unmap itself by design.
//
// A child ends well if it finishes its slice, exits through a fuzzed
// exit/execve, or dies of SIGKILL, SIGSEGV, or a signal it sent itself (or
// SIGPIPE from a write, or the watchdog's SIGUSR2). A child stuck in a call
// gets SIGUSR2 from the parent (the blocking call returns EINTR); one stuck
// anyway is killed: fine in read/write/wait4 and the sleeps (nanosleep,
// clock_nanosleep: a mask that blocks SIGUSR2 can outlive a frame the
// fuzzer forged), a kernel hang anywhere else.
// Anything else — another signal, an unimplemented number not answering
// ENOSYS, getpid/getppid lying, a read-only page written by the kernel — is
// a failure. Records: one per child (sysfuzz_child), then
//   {"event":"sysfuzz","seed":..,"iters":..,"syscalls":..,"children":..,
//    "crashed_children":..,"unexpected":..,"free_frames_start":..,"free_frames_end":..,"pass":..}
// The exit status is 0 iff no child ended unexpectedly and the free frames
// are back at their baseline once every child is reaped.
#include "base/console/record.h"
#include "base/layout.h"
#include <initializer_list>

#include "bench/libc/user.h"
#include "base/lib/format.h"
#include "flagged_syscall.h"
#include "sysfuzz_common.h"
#include "sysfuzz_lifetimes.h"

namespace {

using namespace pvk::user;

// Seeds that once found a kernel bug: run again with regress=1 (the boot
// tests do), each with kRegressIters calls over kRegressChildren children.
// Add a failing seed here with a comment naming the bug.
struct RegressionSeed {
  uint64_t seed;
  const char* found;
};
const RegressionSeed kRegressionSeeds[] = {
    {1, "baseline seed of the short boot tests"},
    {0x5eed0013, "the security suite's seed: DF/AC/NT before every call"},
};
constexpr uint64_t kRegressIters = 1500, kRegressChildren = 3;

using sysfuzz::mix;
using sysfuzz::Rng;

// ---------------------------------------------------------------------------
// What children report to the parent (one MAP_SHARED slot each).

struct Slot {
  volatile uint64_t done;       // calls made so far (progress, for the watchdog)
  volatile uint64_t last_nr;    // the call in progress or last made
  volatile uint64_t last_args[6];
  volatile uint64_t last_flags;
  volatile uint64_t faults;     // user faults escaped through the handler
  volatile uint64_t kicks;      // SIGUSR2 received
  volatile uint32_t finished;
  volatile uint32_t bug;        // a kernel misbehaviour the child saw itself
  char bug_msg[120];
};
static_assert(sizeof(Slot) <= 256);

// The child's fixed layout (all inside the user mmap area, far from the
// program, its stack and the runtime's allocations).
constexpr uint64_t kArena = 0x5000000000;   // kArenaPages pages, the fuzzer's playground
constexpr uint64_t kArenaPages = 24;
// Inside the arena: RW pages, then one read-only, one PROT_NONE, one hole,
// more RW.
constexpr uint64_t kRoPage = kArena + 16 * kPage, kNonePage = kArena + 17 * kPage, kHolePage = kArena + 18 * kPage;
constexpr uint64_t kCanary = 0x5100000000;  // read-only pattern page the fuzzer may name but never remap
constexpr uint64_t kScratchStack = 0x5200000000;  // stack for forged sigreturn landings (4 pages)

// ---------------------------------------------------------------------------
// The calls.

constexpr uint64_t kNr[] = {
    SYS_read, SYS_write, SYS_close, SYS_mmap, SYS_mprotect, SYS_munmap, SYS_brk, SYS_rt_sigaction,
    SYS_rt_sigreturn, SYS_pipe, SYS_sched_yield, SYS_dup2, SYS_getpid, SYS_fork, SYS_execve, SYS_exit,
    SYS_wait4, SYS_kill, SYS_getppid, SYS_clock_gettime, SYS_exit_group, SYS_pvk_counters,
    SYS_nanosleep, SYS_clock_nanosleep,
};
// Relative weights (same order): the calls with pointers and lengths often.
constexpr unsigned kWeight[] = {
    12, 12, 4, 10, 8, 6, 3, 10, 2, 3, 1, 4, 1, 2, 3, 0, 3, 6, 1, 4, 0, 3, 2, 2,
};
static_assert(sizeof kNr / sizeof kNr[0] == sizeof kWeight / sizeof kWeight[0]);

// The thread calls: implemented, so a random number that names
// one must not expect ENOSYS. clone and futex are not fuzzed with random
// arguments (a random FUTEX_WAIT sleeps for ever, a random thread runs
// from a random stack); the others are.
constexpr uint64_t kThreadCalls[] = {SYS_clone, SYS_futex, SYS_gettid, SYS_set_tid_address, SYS_tgkill,
                                     SYS_arch_prctl};

// The file system calls (docs/rootfs.md): implemented, so fuzzed with
// random arguments when a random number names one. open and openat lose
// O_CREAT: a file the fuzzer made could keep frames (its data) past the
// run, which the frame check would take for a leak.
constexpr uint64_t kFileCalls[] = {
    SYS_open, SYS_stat, SYS_fstat, SYS_lstat, SYS_lseek, SYS_ioctl, SYS_pread64, SYS_pwrite64, SYS_access,
    SYS_dup, SYS_fcntl, SYS_truncate, SYS_ftruncate, SYS_getcwd, SYS_chdir, SYS_fchdir, SYS_rename, SYS_mkdir,
    SYS_rmdir, SYS_unlink, SYS_readlink, SYS_getdents64, SYS_openat, SYS_mkdirat, SYS_newfstatat, SYS_unlinkat,
    SYS_renameat, SYS_readlinkat, SYS_faccessat, SYS_dup3, SYS_pipe2};

// The CPU calls (kernel/proc/cpu_calls.h): implemented, fuzzed with random
// arguments when a random number names one (a random mask pins the child
// somewhere, or is refused).
constexpr uint64_t kCpuCalls[] = {SYS_sched_setaffinity, SYS_sched_getaffinity, SYS_getcpu};
// The calls glibc programs make (kernel/proc/linux_calls.cpp, sigmask_calls.cpp,
// and bash's: the clocks, sysinfo, process groups and sessions, fadvise64,
// getpeername; busybox's cat: sendfile): reached through the random numbers, with random arguments.
// A random setpgid or setsid moves only the child itself (or a child of
// its own) into a group of its own; the guard rails keep kill off groups.
constexpr uint64_t kLinuxCalls[] = {
    SYS_rt_sigprocmask, SYS_rt_sigsuspend, SYS_uname,   SYS_getuid,  SYS_getgid,   SYS_geteuid,
    SYS_getegid,        SYS_prctl,         SYS_getrlimit, SYS_prlimit64, SYS_set_robust_list, SYS_getrandom,
    SYS_gettimeofday,   SYS_time,          SYS_sysinfo, SYS_getpgrp, SYS_getpgid,  SYS_setpgid,
    SYS_getsid,         SYS_setsid,        SYS_fadvise64, SYS_getpeername, SYS_sendfile};

bool implemented(uint64_t nr) {
  for (uint64_t n : kNr)
    if (n == nr) return true;
  for (uint64_t n : kFileCalls)
    if (n == nr) return true;
  for (uint64_t n : kThreadCalls)
    if (n == nr) return true;
  for (uint64_t n : kCpuCalls)
    if (n == nr) return true;
  for (uint64_t n : kLinuxCalls)
    if (n == nr) return true;
  // SYS_pvk_cpa and SYS_pvk_probe answer EINVAL/EFAULT to random arguments, never ENOSYS.
  return nr == SYS_pvk_shutdown || nr == SYS_pvk_cpa || nr == SYS_pvk_probe;
}

constexpr int SIGUSR2 = 12;
constexpr uint64_t kTF = kFlagTF, kDF = kFlagDF, kNT = kFlagNT, kAC = kFlagAC, kIOPL = kFlagIOPL;

int64_t raw_syscall(uint64_t nr, const uint64_t* a, uint64_t fl) {
  const uint64_t args[6] = {a[0], a[1], a[2], a[3], a[4], a[5]};
  return flagged_syscall6(fl, nr, args);
}

// ---------------------------------------------------------------------------
// The child.

Slot* g_slot;
Rng g_rng;
JmpBuf g_loop;
volatile uint64_t g_iter, g_iters;
int64_t g_pid, g_ppid;
int g_pipe[2];

void fault_handler(int sig) {
  g_slot->faults = g_slot->faults + 1;
  pvk_longjmp(&g_loop, sig);
}
void kick_handler(int) { g_slot->kicks = g_slot->kicks + 1; }
// The handler the fuzzer installs: returns (through whatever restorer the
// fuzzer gave), except for fault signals, which would fault again.
void fuzz_handler(int sig) {
  if (sig == SIGSEGV || sig == 7 || sig == 4 || sig == 8 || sig == 5) fault_handler(sig);
}

// A landing pad for forged rt_sigreturn frames: back to the loop.
extern "C" void sysfuzz_landing();
asm(R"(
    .section .text.sysfuzz_landing, "ax"
    .global sysfuzz_landing
sysfuzz_landing:
    cld
    and $-16, %rsp
    call sysfuzz_landed
    ud2
    .previous
)");
extern "C" [[noreturn]] void sysfuzz_landed() { pvk_longjmp(&g_loop, 100); }

uint64_t hostile_addr() {
  static const uint64_t kAddrs[] = {
      0xffff800000000000ull,          PVK_KERNEL_VMA + PVK_KERNEL_LOAD, PVK_PHYSMAP_BASE,
      PVK_PHYSMAP_BASE + 0x100000,    0xffffffffffffffffull,            0xfffffffffffff000ull,
      0x0000800000000000ull,          0x8000000000000000ull,            0x00007ffffffffff8ull,
      kUserTop - kPage,               0xffff7ffffffff000ull,            PVK_SCRATCH_BASE,
      0x1000,                         0x1,
  };
  return kAddrs[g_rng.below(sizeof kAddrs / sizeof kAddrs[0])];
}

// A pointer argument.
uint64_t ptr() {
  switch (g_rng.below(12)) {
    case 0:
    case 1:
    case 2: return kArena + g_rng.below(16 * kPage) / 8 * 8;  // RW
    case 3: return kArena + 16 * kPage - 1 - g_rng.below(64);  // RW running into the read-only page
    case 4: return kRoPage + g_rng.below(kPage);
    case 5: return kNonePage + g_rng.below(kPage);
    case 6: return kHolePage + g_rng.below(kPage);
    case 7: return kCanary + g_rng.below(kPage);
    case 8: return g_rng.one_in(2) ? 0 : g_rng.below(4096);
    case 9: return hostile_addr() + (g_rng.one_in(4) ? g_rng.below(kPage) : 0);
    case 10: return g_rng.next();
    default: return kArena + 19 * kPage + g_rng.below(5 * kPage);  // RW after the hole
  }
}

uint64_t length() {
  switch (g_rng.below(10)) {
    case 0: return 0;
    case 1: return 1 + g_rng.below(16);
    case 2:
    case 3: return g_rng.below(4096);
    case 4: return 4096 + g_rng.below(3 * 4096);
    case 5: return 1ull << (20 + g_rng.below(44));  // 1 MiB .. 2^63
    case 6: return ~0ull - g_rng.below(4096);
    case 7: return 0x100000000ull + g_rng.below(64);  // truncates to something small
    case 8: return 0x8000000000000000ull;
    default: return g_rng.next();
  }
}

uint64_t fd() {
  switch (g_rng.below(8)) {
    case 0:
    case 1: return static_cast<uint64_t>(g_pipe[g_rng.below(2)]);
    case 2: return g_rng.below(16);
    case 3: return ~0ull;
    case 4: return (1ull << 32) | g_rng.below(8);  // truncates to a real fd
    case 5: return 0x7fffffff;
    case 6: return 1000 + g_rng.below(100000);
    default: return g_rng.next();
  }
}

uint64_t signo() {
  switch (g_rng.below(6)) {
    case 0:
    case 1: return 1 + g_rng.below(64);
    case 2: return g_rng.one_in(2) ? 0 : 65 + g_rng.below(100);
    case 3: return (1ull << 32) | (1 + g_rng.below(64));  // truncates to a real signal
    case 4: return ~0ull - g_rng.below(4);
    default: return g_rng.next();
  }
}

uint64_t prot() {
  switch (g_rng.below(5)) {
    case 0:
    case 1: return g_rng.below(8);
    case 2: return (1ull << 32) | g_rng.below(8);
    case 3: return g_rng.below(0x100);
    default: return g_rng.next();
  }
}

uint64_t any() {
  switch (g_rng.below(6)) {
    case 0: return 0;
    case 1: return ~0ull;
    case 2: return g_rng.below(64);
    case 3: return ptr();
    case 4: return length();
    default: return g_rng.next();
  }
}

// A user address for mm calls: user-range addresses are folded into the
// arena (so the child does not unmap its own program by design); kernel,
// non-canonical and wrapping values go through unchanged.
uint64_t mm_addr() {
  if (g_rng.one_in(4)) return hostile_addr() + (g_rng.one_in(3) ? g_rng.below(kPage) : 0);
  uint64_t a = kArena + g_rng.below(kArenaPages) * kPage;
  if (g_rng.one_in(8)) a += g_rng.below(kPage);  // unaligned
  return a;
}
uint64_t mm_len(uint64_t addr) {
  uint64_t len = length();
  if (addr >= kArena && addr < kArena + kArenaPages * kPage && len < (1ull << 62)) {
    const uint64_t room = kArena + kArenaPages * kPage - addr;
    if (len > room) len = room;
  }
  return len;
}

// A pid for kill/wait4: never one of our ancestors or pid 1, whatever the
// kernel truncates it to (the parent's pid in the low 32 bits with high
// bits set would be a truncation bug worth finding, but would end the run).
uint64_t pid_arg() {
  uint64_t p;
  switch (g_rng.below(6)) {
    case 0:
    case 1: p = static_cast<uint64_t>(g_pid); break;
    case 2: p = (1ull << 32) | static_cast<uint64_t>(g_pid); break;
    case 3: p = 30000 + g_rng.below(100000); break;
    case 4: p = g_rng.next(); break;
    default: p = ~0ull - g_rng.below(2); break;  // -1, -2: every process / a group
  }
  const int32_t low = static_cast<int32_t>(p);
  if (low <= 1 || low == g_ppid || low == 1) p = (p & ~0xffffffffull) | (40000 + g_rng.below(1000));
  if (static_cast<int64_t>(p) < 0 && static_cast<int32_t>(p) > 0) {
    // Negative as 64 bits but a positive 32-bit pid: fine (a truncation test).
  }
  return p;
}

// The calls that may sleep until the watchdog's SIGUSR2 (EINTR) ends them.
bool is_blocking(uint64_t nr) {
  return nr == SYS_read || nr == SYS_write || nr == SYS_wait4 || nr == SYS_nanosleep || nr == SYS_clock_nanosleep;
}

[[noreturn]] void child_bug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void child_bug(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pvk::vformat(g_slot->bug_msg, sizeof g_slot->bug_msg, fmt, ap);
  va_end(ap);
  g_slot->bug = 1;
  exit_group(3);
}

uint64_t canary_word(uint64_t i) { return 0xC0FFEE0000000000ull ^ (i * 0x9E3779B97F4A7C15ull); }

void check_canary() {
  const auto* c = reinterpret_cast<const volatile uint64_t*>(kCanary);
  for (uint64_t i = 0; i < kPage / 8; ++i)
    if (c[i] != canary_word(i)) child_bug("the kernel wrote into a read-only page (word %lu)", i);
}

// One fuzzed call.
void one_call() {
  uint64_t nr;
  bool random_number = false;
  const uint64_t pick = g_rng.below(100);
  if (pick < 6) {
    nr = g_rng.below(520);
    random_number = !implemented(nr);
  } else if (pick < 9) {
    static const uint64_t kHigh[] = {1ull << 32, 0xffffffff00000000ull, 0x8000000000000000ull, 0xffffffffull << 16};
    nr = kHigh[g_rng.below(4)] | kNr[g_rng.below(sizeof kNr / sizeof kNr[0])];
    random_number = true;
  } else {
    unsigned total = 0;
    for (unsigned w : kWeight) total += w;
    uint64_t x = g_rng.below(total);
    unsigned i = 0;
    while (x >= kWeight[i]) x -= kWeight[i++];
    nr = kNr[i];
  }
  if (nr == SYS_pvk_shutdown || nr == SYS_clone || nr == SYS_futex) nr = SYS_getppid;
  if ((nr == SYS_exit || nr == SYS_exit_group) && !g_rng.one_in(64)) nr = SYS_sched_yield;

  uint64_t a[6];
  for (uint64_t& v : a) v = any();
  if (nr == SYS_open) a[1] &= ~O_CREAT;
  if (nr == SYS_openat) a[2] &= ~O_CREAT;
  const bool shaped = !random_number && !g_rng.one_in(5);
  if (shaped) switch (nr) {
      case SYS_read:
      case SYS_write: a[0] = fd(), a[1] = ptr(), a[2] = length(); break;
      case SYS_close: a[0] = fd(); break;
      case SYS_dup2: a[0] = fd(), a[1] = fd(); break;
      case SYS_mmap:
        a[0] = g_rng.one_in(3) ? 0 : mm_addr();
        a[1] = mm_len(a[0]);
        a[2] = prot();
        a[3] = g_rng.one_in(4) ? g_rng.next() : (g_rng.below(4) | 0x20 | (g_rng.one_in(2) ? 0x10 : 0));
        a[4] = g_rng.one_in(2) ? ~0ull : fd();
        a[5] = g_rng.one_in(2) ? 0 : g_rng.next();
        break;
      case SYS_mprotect:
      case SYS_munmap:
        a[0] = mm_addr();
        a[1] = mm_len(a[0]);
        a[2] = prot();
        break;
      case SYS_brk: a[0] = g_rng.one_in(2) ? 0 : any(); break;
      case SYS_rt_sigaction: {
        a[0] = signo();
        // A well-formed action in the arena (handler and restorer good or hostile).
        auto* act = reinterpret_cast<volatile uint64_t*>(kArena + 8 * g_rng.below(500));
        static const uint64_t kHandlers[] = {SIG_DFL, SIG_IGN, 0, 0, 0};
        uint64_t h = kHandlers[g_rng.below(5)];
        if (h == 0) h = g_rng.one_in(8) ? hostile_addr() : reinterpret_cast<uint64_t>(fuzz_handler);
        if (h == 0x1) h = SIG_IGN;
        act[0] = h;
        act[1] = g_rng.one_in(6) ? g_rng.next() : (SA_RESTORER | (g_rng.one_in(2) ? SA_NODEFER : 0));
        act[2] = g_rng.one_in(6) ? hostile_addr() : reinterpret_cast<uint64_t>(pvk_sigreturn_restorer);
        act[3] = g_rng.next();
        a[1] = g_rng.one_in(5) ? ptr() : reinterpret_cast<uint64_t>(act);
        a[2] = g_rng.one_in(2) ? 0 : ptr();
        a[3] = g_rng.one_in(8) ? any() : 8;
        // The watchdog's kick stays ours (see the file comment).
        if (static_cast<int32_t>(a[0]) == SIGUSR2) a[0] = (a[0] & ~0xffffffffull) | SIGUSR1;
        break;
      }
      case SYS_kill: a[0] = pid_arg(), a[1] = signo(); break;
      case SYS_wait4:
        a[0] = g_rng.one_in(2) ? ~0ull : pid_arg();
        a[1] = ptr();
        a[2] = g_rng.one_in(2) ? WNOHANG : any();
        a[3] = g_rng.one_in(2) ? 0 : ptr();
        break;
      case SYS_pipe:
      case SYS_clock_gettime:
      case SYS_pvk_counters:
        a[0] = nr == SYS_clock_gettime ? (g_rng.one_in(2) ? g_rng.below(8) : any()) : ptr();
        a[1] = ptr();
        break;
      case SYS_nanosleep:
      case SYS_clock_nanosleep: {
        // Often nothing (the deadline is now), else up to 2 ms; now and then
        // seconds or for ever (the watchdog's kick ends it) or unnormalised.
        auto* ts = reinterpret_cast<volatile uint64_t*>(kArena + 14 * kPage + 16 * g_rng.below(200));
        ts[0] = g_rng.one_in(8) ? (g_rng.one_in(2) ? g_rng.next() : 1 + g_rng.below(5)) : 0;
        ts[1] = g_rng.one_in(8) ? g_rng.next() : g_rng.one_in(2) ? 0 : g_rng.below(2000001);
        const uint64_t req = g_rng.one_in(5) ? ptr() : reinterpret_cast<uint64_t>(ts);
        const uint64_t rem = g_rng.one_in(2) ? 0 : ptr();
        if (nr == SYS_nanosleep) {
          a[0] = req, a[1] = rem;
        } else {
          a[0] = g_rng.one_in(4) ? any() : g_rng.below(8);                   // clock
          a[1] = g_rng.one_in(4) ? any() : g_rng.below(2) * TIMER_ABSTIME;  // flags
          a[2] = req, a[3] = rem;
        }
        break;
      }
      case SYS_execve: {
        auto* path = reinterpret_cast<volatile char*>(kArena + 15 * kPage);
        static const char* const kNames[] = {"hello", "nonexistent", "", "hello\x01"};
        const char* name = kNames[g_rng.below(4)];
        unsigned i = 0;
        for (; name[i]; ++i) path[i] = name[i];
        path[i] = 0;
        a[0] = g_rng.one_in(2) ? kArena + 15 * kPage : ptr();
        a[1] = ptr();
        a[2] = g_rng.one_in(2) ? 0 : ptr();
        break;
      }
      default: break;
    }
  else if (!random_number) {
    // Unshaped: arbitrary values, but the guard rails hold for the calls
    // that could end the run or this child's harness.
    if (nr == SYS_kill) a[0] = pid_arg();
    if (nr == SYS_wait4 && !g_rng.one_in(2)) a[2] |= WNOHANG;
    if (nr == SYS_rt_sigaction && static_cast<int32_t>(a[0]) == SIGUSR2) a[0] ^= 1;
    if (nr == SYS_mmap || nr == SYS_mprotect || nr == SYS_munmap) a[0] = mm_addr(), a[1] = mm_len(a[0]);
  }
  // A wait4 that blocks waits for children that do not exist: only WNOHANG.
  if (nr == SYS_wait4 && static_cast<int32_t>(a[2] & 0xffffffff) != static_cast<int32_t>(WNOHANG))
    a[2] = (a[2] & ~0xffffffffull) | WNOHANG;

  uint64_t fl = 0;
  if (g_rng.one_in(2)) fl = g_rng.next() & (kDF | kAC | kNT | kIOPL | 0x8d5);
  g_slot->last_nr = nr;
  for (int i = 0; i < 6; ++i) g_slot->last_args[i] = a[i];
  g_slot->last_flags = fl;

  int64_t r;
  if (nr == SYS_rt_sigreturn) {
    // A forged frame on the scratch stack: rip to the landing pad or a
    // hostile address, the rest random.
    auto* f = reinterpret_cast<volatile uint64_t*>(kScratchStack + 2 * kPage);
    // Linux's ucontext (base/signal_frame.h): uc_flags..uc_stack [0..4],
    // sigcontext r8.. [5..], rsp [20], rip [21], eflags [22], fpstate [28],
    // uc_sigmask [37].
    for (int i = 0; i < 38; ++i) f[i] = g_rng.next();
    f[21] = g_rng.one_in(8) ? hostile_addr() : reinterpret_cast<uint64_t>(sysfuzz_landing);         // rip
    f[20] = g_rng.one_in(8) ? hostile_addr() : kScratchStack + kPage + g_rng.below(512) * 8;       // rsp
    f[22] = f[22] & ~kTF;   // never single-step the harness (TF is not fuzzed here)
    f[28] = g_rng.one_in(8) ? f[28] : 0;  // fpstate: mostly none (the clean state), else forged
    f[37] = f[37] & ~((1ull << (SIGUSR2 - 1)) | (g_rng.one_in(8) ? 0 : 0x1d8ull));  // mostly keep fault signals deliverable
    g_slot->done = g_slot->done + 1;
    asm volatile("mov %0, %%rsp\n\tmov $15, %%eax\n\tsyscall\n\tud2" : : "r"(f) : "memory");
    __builtin_unreachable();
  }
  r = raw_syscall(nr, a, fl);
  g_slot->done = g_slot->done + 1;

  if (nr == SYS_fork && r == 0) exit_group(0);  // the grandchild ends at once
  if (nr == SYS_fork && r > 0) {
    int st;
    wait4(r, &st, 0);
  }
  if (random_number && r != -ENOSYS) child_bug("unimplemented call 0x%lx returned %ld, want -ENOSYS", nr, r);
  if (r < 0 && r < -4095 && nr != SYS_mmap && nr != SYS_brk)
    child_bug("call %lu returned %ld, outside the errno range", nr, r);
  if (nr == SYS_getpid && r != g_pid) child_bug("getpid returned %ld, want %ld", r, g_pid);
  if (nr == SYS_getppid && r != g_ppid) child_bug("getppid returned %ld, want %ld", r, g_ppid);
}

void map_or_die(uint64_t addr, uint64_t len, uint64_t prot) {
  const int64_t r = mmap(reinterpret_cast<void*>(addr), len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED);
  if (is_err(r)) child_bug("cannot map 0x%lx (+%lu): %ld", addr, len, r);
}

[[noreturn]] void fuzz_child(Slot* slot, uint64_t seed, uint64_t iters) {
  g_slot = slot;
  g_rng.s = seed;
  g_pid = getpid();
  g_ppid = getppid();
  g_iters = iters;
  // No console: fds 0..2 become one end of a private pipe each.
  if (pipe(g_pipe) != 0) child_bug("pipe");
  dup2(g_pipe[1], 1);
  dup2(g_pipe[1], 2);
  dup2(g_pipe[0], 0);
  map_or_die(kArena, kArenaPages * kPage, PROT_READ | PROT_WRITE);
  for (uint64_t i = 0; i < kArenaPages * kPage / 8; ++i) reinterpret_cast<uint64_t*>(kArena)[i] = g_rng.next();
  mprotect(reinterpret_cast<void*>(kRoPage), kPage, PROT_READ);
  mprotect(reinterpret_cast<void*>(kNonePage), kPage, PROT_NONE);
  munmap(reinterpret_cast<void*>(kHolePage), kPage);
  map_or_die(kCanary, kPage, PROT_READ | PROT_WRITE);
  for (uint64_t i = 0; i < kPage / 8; ++i) reinterpret_cast<uint64_t*>(kCanary)[i] = canary_word(i);
  mprotect(reinterpret_cast<void*>(kCanary), kPage, PROT_READ);
  map_or_die(kScratchStack, 4 * kPage, PROT_READ | PROT_WRITE);
  for (int s : {static_cast<int>(SIGSEGV), 7, 4, 8, 5}) sigaction(s, fault_handler, kSaNodefer);
  sigaction(SIGUSR2, kick_handler);

  pvk_setjmp(&g_loop);  // faults and forged sigreturns come back here
  while (g_iter < g_iters) {
    g_iter = g_iter + 1;
    one_call();
    if ((g_iter & 31) == 0) check_canary();
  }
  check_canary();
  int st;
  while (wait4(-1, &st, WNOHANG) > 0) {
  }
  g_slot->finished = 1;
  exit_group(0);
}

// ---------------------------------------------------------------------------
// The parent.

struct Config {
  uint64_t seed = 1, iters = 20000, children = 8, parallel = 2;
  bool regress = false;
  sysfuzz::LifetimeConfig lifetimes;  // ops 0: off
};

using sysfuzz::free_frames;

struct Totals {
  uint64_t syscalls = 0, children = 0, crashed = 0, unexpected = 0, stalled = 0, faults = 0;
};

struct Running {
  int64_t pid = 0;
  unsigned index = 0;  // the child's number in this run (its seed derives from it)
  unsigned slot = 0;   // its report slot, free again once it is reaped
  uint64_t budget = 0; // the calls it was given
  uint64_t seed = 0;
  uint64_t last_done = 0, last_progress_ns = 0, kicked_ns = 0;
  bool kicked = false, killed = false;
};

// Judges a reaped child; prints its record; returns true if it ended well.
constexpr uint64_t kChildRecords = 64;
constexpr unsigned kMaxParallel = 8;

bool judge(const Running& c, Slot& s, int status, uint64_t run_seed, Totals& t) {
  const char* how;
  bool ok;
  int sig = 0;
  if (c.killed) {
    how = "stalled";
    ok = is_blocking(s.last_nr);
    ++t.stalled;
  } else if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (s.finished && code == 0)
      how = "finished", ok = true;
    else if (s.bug)
      how = "kernel_bug", ok = false;
    else if (s.last_nr == SYS_exit || s.last_nr == SYS_exit_group || s.last_nr == SYS_execve)
      how = "exited", ok = true;
    else
      how = "exited_unexpectedly", ok = false;
  } else if (WIFSIGNALED(status)) {
    sig = WTERMSIG(status);
    how = "signal";
    // Any signal is a fair death: the fuzzed kill() calls send arbitrary
    // signals to the child itself, and a SIGPIPE may wait for a sigreturn to
    // unblock it. (Recording which signals a child sent itself does not help:
    // the report slot is shared memory within reach of the fuzzed calls, and
    // in a 10^6-call run one in 2,157 children scribbled over its own.)
    ok = sig >= 1 && sig <= 64;
    ++t.crashed;
  } else {
    how = "unknown_status", ok = false;
  }
  // The slot is shared memory the fuzzed calls of any child may scribble
  // on: a count beyond the child's budget is not believed.
  t.syscalls += s.done <= c.budget ? s.done : c.budget;
  t.faults += s.faults <= c.budget ? s.faults : 0;  // the same doubt
  ++t.children;
  if (!ok) ++t.unexpected;
  // A long run has tens of thousands of children: only the first ones and
  // the ones that matter get a record.
  if (ok && !c.killed && !s.bug && t.children > kChildRecords) return ok;
  pvk::Record r("sysfuzz_child");
  r.u64("seed", run_seed).u64("child", c.index).u64("child_seed", c.seed).u64("syscalls", s.done);
  r.str("how", how).boolean("expected", ok).i64("status", status);
  if (sig) r.i64("signal", sig);
  if (s.faults) r.u64("faults", s.faults);
  if (s.kicks) r.u64("kicks", s.kicks);
  if (!ok || c.killed) {
    r.u64("last_nr", s.last_nr).u64("a0", s.last_args[0]).u64("a1", s.last_args[1]).u64("a2", s.last_args[2]);
    r.u64("a3", s.last_args[3]).u64("rflags_or", s.last_flags);
  }
  if (s.bug) r.str("bug", s.bug_msg);
  if (!ok)
    printf("sysfuzz: UNEXPECTED: seed %lu child %u (%s, status 0x%x, last call %lu): rerun with seed=%lu\n", run_seed,
           c.index, how, status, s.last_nr, run_seed);
  return ok;
}

// One fuzzing run; returns true if every child ended well.
bool run(const Config& cfg, Slot* slots, Totals& t) {
  const uint64_t per_child = cfg.iters / cfg.children + (cfg.iters % cfg.children ? 1 : 0);
  printf("sysfuzz: seed %lu: %lu calls over %lu children (%lu at once)\n", cfg.seed, cfg.iters, cfg.children,
         cfg.parallel);
  Running run[kMaxParallel];
  bool slot_used[kMaxParallel] = {};
  unsigned next = 0, alive = 0;
  const uint64_t reaped_before = t.syscalls;  // t also carries earlier runs (regression seeds)
  constexpr unsigned kMaxForkFailures = 1000;  // in a row
  unsigned fork_failures = 0;
  bool ok = true;
  constexpr uint64_t kKickAfterNs = 30'000'000, kKillAfterNs = 3'000'000'000;
  for (;;) {
    // Children that die early (most do: the fuzzer installs hostile handlers
    // and forges frames on purpose) leave calls unmade: more children (new
    // seeds) take over until the budget is spent — up to 4x the count asked
    // for, or one per 16 calls of a long run.
    uint64_t spent = t.syscalls - reaped_before;
    spent += alive * per_child;  // what the running ones may still make
    const uint64_t max_children = cfg.children * 4 > cfg.iters / 16 ? cfg.children * 4 : cfg.iters / 16;
    while (alive < cfg.parallel && (next < cfg.children || (next < max_children && spent < cfg.iters))) {
      unsigned slot = 0;
      while (slot_used[slot]) ++slot;
      Slot& s = slots[slot];
      memset(&s, 0, sizeof s);
      Running& c = run[alive];
      c = Running{};
      c.index = next;
      c.slot = slot;
      c.seed = mix(cfg.seed * 0x100000001b3ull + next);
      const uint64_t mine = next < cfg.children ? (cfg.iters > per_child * next ? cfg.iters - per_child * next : 0)
                                                : (cfg.iters > spent ? cfg.iters - spent : 0);
      c.budget = mine < per_child ? mine : per_child;
      const int64_t pid = fork();
      if (pid == 0) fuzz_child(&s, c.seed, c.budget);
      if (pid < 0) {
        // Out of memory or processes (fail= makes forks fail on purpose):
        // wait for the running children, or try again a while.
        if ((pid == -ENOMEM || pid == -EAGAIN) && ++fork_failures < kMaxForkFailures) {
          if (!alive) sched_yield();
          break;
        }
        printf("sysfuzz: fork failed: %ld\n", pid);
        return false;
      }
      fork_failures = 0;
      c.pid = pid;
      slot_used[slot] = true;
      c.last_progress_ns = now_ns();
      ++alive;
      ++next;
      spent += per_child;
    }
    if (alive == 0 && !fork_failures) break;  // a failed fork with nothing running tries again
    bool reaped = false;
    for (unsigned i = 0; i < alive; ++i) {
      Running& c = run[i];
      Slot& s = slots[c.slot];
      int st = 0;
      const int64_t r = wait4(c.pid, &st, WNOHANG);
      if (r == c.pid) {
        ok &= judge(c, s, st, cfg.seed, t);
        slot_used[c.slot] = false;
        run[i] = run[--alive];
        reaped = true;
        break;
      }
      const uint64_t now = now_ns();
      if (s.done != c.last_done) {
        c.last_done = s.done;
        c.last_progress_ns = now;
        c.kicked = false;
      } else if (!c.kicked && now - c.last_progress_ns > kKickAfterNs) {
        kill(c.pid, SIGUSR2);  // a blocking call returns EINTR
        c.kicked = true;
        c.kicked_ns = now;
      } else if (c.kicked && !c.killed && now - c.kicked_ns > kKillAfterNs) {
        kill(c.pid, SIGKILL);
        c.killed = true;
      }
    }
    if (!reaped) sched_yield();
  }
  int st;
  while (wait4(-1, &st, WNOHANG) > 0) {
  }
  return ok;
}

bool parse_args(int argc, char** argv, Config& cfg) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    uint64_t* dst = nullptr;
    const char* v = nullptr;
    struct {
      const char* key;
      uint64_t* dst;
    } keys[] = {{"seed=", &cfg.seed},           {"iters=", &cfg.iters},         {"children=", &cfg.children},
                {"parallel=", &cfg.parallel},   {"lifetimes=", &cfg.lifetimes.ops}, {"procs=", &cfg.lifetimes.procs},
                {"threads=", &cfg.lifetimes.threads}};
    for (auto& k : keys)
      if (strncmp(a, k.key, strlen(k.key)) == 0) dst = k.dst, v = a + strlen(k.key);
    uint64_t x;
    if (strncmp(a, "regress=", 8) == 0 && parse_u64(a + 8, &x)) {
      cfg.regress = x != 0;
      continue;
    }
    if (!dst || !parse_u64(v, dst)) {
      printf("sysfuzz: bad argument '%s' (seed=N iters=N children=N parallel=N regress=0|1 lifetimes=N procs=N "
             "threads=N)\n", a);
      return false;
    }
  }
  if (cfg.children == 0 || cfg.children > 1024 || cfg.parallel == 0 || cfg.parallel > kMaxParallel) {
    printf("sysfuzz: children must be 1..1024 and parallel 1..8\n");
    return false;
  }
  const sysfuzz::LifetimeConfig& lt = cfg.lifetimes;
  if (lt.ops > sysfuzz::kMaxLifetimeOps || lt.procs < 1 || lt.procs > sysfuzz::kMaxLifetimeProcs || lt.threads < 1 ||
      lt.threads > sysfuzz::kMaxLifetimeThreads) {
    printf("sysfuzz: lifetimes must be 0..%lu, procs 1..%lu, threads 1..%lu\n", sysfuzz::kMaxLifetimeOps,
           sysfuzz::kMaxLifetimeProcs, sysfuzz::kMaxLifetimeThreads);
    return false;
  }
  cfg.lifetimes.seed = cfg.seed;
  return true;
}

__attribute__((noinline)) void pretouch_stack() {
  volatile char area[32 * 1024];
  for (size_t i = 0; i < sizeof area; i += kPage) area[i] = 0;
  area[sizeof area - 1] = 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  if (!parse_args(argc, argv, cfg)) return 2;
  // One per running child (a lifetime child's, if larger, in the same memory).
  const uint64_t slot_need = kMaxParallel * sizeof(Slot) > sysfuzz::kLifetimeSlotBytes ? kMaxParallel * sizeof(Slot)
                                                                                       : sysfuzz::kLifetimeSlotBytes;
  const uint64_t slot_bytes = (slot_need + kPage - 1) / kPage * kPage;
  auto* slots = static_cast<Slot*>(map_anon(slot_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  if (!slots) {
    printf("sysfuzz: cannot map the child slots\n");
    return 2;
  }
  memset(slots, 0, slot_bytes);
  pretouch_stack();
  warm_root_cache(cfg.parallel * 2 + 4);
  const uint64_t start = free_frames();
  printf("sysfuzz: seed=%lu iters=%lu children=%lu parallel=%lu%s\n", cfg.seed, cfg.iters, cfg.children, cfg.parallel,
         cfg.regress ? " regress=1" : "");
  const uint64_t t0 = now_ns();
  Totals t;
  bool ok = cfg.iters ? run(cfg, slots, t) : true;
  unsigned regress_failed = 0;
  if (cfg.regress)
    for (const RegressionSeed& r : kRegressionSeeds) {
      Config rc = cfg;
      rc.seed = r.seed;
      rc.iters = kRegressIters;
      rc.children = kRegressChildren;
      printf("sysfuzz: regression seed %lu (%s)\n", r.seed, r.found);
      if (!run(rc, slots, t)) ++regress_failed, ok = false;
    }
  const bool lifetimes_ok = !cfg.lifetimes.ops || sysfuzz::run_lifetimes(cfg.lifetimes, slots);
  ok &= lifetimes_ok;
  const uint64_t ns = now_ns() - t0;
  // Frames: every child is reaped; let the kernel finish tearing down.
  const uint64_t end = sysfuzz::settled_free_frames(start);
  const bool frames_ok = end == start;
  const bool pass = ok && frames_ok;
  pvk::Record("sysfuzz")
      .u64("seed", cfg.seed)
      .u64("iters", cfg.iters)
      .u64("syscalls", t.syscalls)
      .u64("children", t.children)
      .u64("crashed_children", t.crashed)
      .u64("stalled_children", t.stalled)
      .u64("unexpected", t.unexpected)
      .u64("user_faults", t.faults)
      .u64("regression_seeds", cfg.regress ? sizeof kRegressionSeeds / sizeof kRegressionSeeds[0] : 0)
      .u64("regression_failed", regress_failed)
      .u64("lifetimes", cfg.lifetimes.ops)
      .boolean("lifetimes_pass", lifetimes_ok)
      .u64("ns", ns)
      .u64("syscalls_per_s", ns ? t.syscalls * 1000000000ull / ns : 0)
      .u64("free_frames_start", start)
      .u64("free_frames_end", end)
      .boolean("pass", pass);
  printf("sysfuzz: %lu calls in %lu children (%lu crashed, %lu stalled, %lu unexpected), %lu ms; frames %lu -> %lu: %s\n",
         t.syscalls, t.children, t.crashed, t.stalled, t.unexpected, ns / 1000000, start, end, pass ? "pass" : "FAIL");
  if (!pass) printf("sysfuzz: failing seed %lu (rerun: sysfuzz seed=%lu iters=%lu children=%lu)\n", cfg.seed, cfg.seed,
                    cfg.iters, cfg.children);
  return pass ? 0 : 1;
}
