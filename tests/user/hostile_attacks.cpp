// hostile's attacks (the suite's classes), one function each; the table at
// the end gives the order. Each runs in its own attack process (hostile.cpp)
// and forks victims through run_victim() (a hang guard, never a speed bound).
#include "base/layout.h"
#include "flagged_syscall.h"
#include "hostile.h"

extern "C" char hostile_compat_entry[], hostile_int_stubs[], hostile_landing_pad[];
extern "C" const char hostile_ring0_payload[], hostile_ring0_payload_end[];

namespace hostile {
namespace {

// RFLAGS bits.
// The flags the attacks set (flagged_syscall.h has the ones it clears again).
constexpr uint64_t kCF = 1, kTF = kFlagTF, kIF = 1u << 9, kDF = kFlagDF, kIOPL = kFlagIOPL, kNT = kFlagNT,
                   kVM = 1u << 17, kAC = kFlagAC;
constexpr uint64_t kClearAfter = kFlagsClearedAfter;

inline uint64_t read_flags() {
  uint64_t f;
  asm volatile("pushfq\n\tpop %0" : "=r"(f));
  return f;
}

inline uint16_t read_cs() {
  uint16_t v;
  asm volatile("mov %%cs, %0" : "=r"(v));
  return v;
}
inline uint16_t read_ss() {
  uint16_t v;
  asm volatile("mov %%ss, %0" : "=r"(v));
  return v;
}

// A store entered with `fl` set (a page fault when the page is fresh).
inline void flagged_store(uint64_t fl, volatile uint64_t* p, uint64_t v) {
  asm volatile(
      "pushfq\n\t"
      "orq %[fl], (%%rsp)\n\t"
      "popfq\n\t"
      "movq %[v], (%[p])\n\t"
      "pushfq\n\t"
      "andq %[clr], (%%rsp)\n\t"
      "popfq\n\t"
      "cld"
      :
      : [p] "r"(p), [v] "r"(v), [fl] "r"(fl), [clr] "r"(~kClearAfter)
      : "memory", "cc");
}
inline uint64_t flagged_load(uint64_t fl, const volatile uint64_t* p) {
  uint64_t v;
  asm volatile(
      "pushfq\n\t"
      "orq %[fl], (%%rsp)\n\t"
      "popfq\n\t"
      "movq (%[p]), %[v]\n\t"
      "pushfq\n\t"
      "andq %[clr], (%%rsp)\n\t"
      "popfq\n\t"
      "cld"
      : [v] "=&r"(v)
      : [p] "r"(p), [fl] "r"(fl), [clr] "r"(~kClearAfter)
      : "memory", "cc");
  return v;
}
inline void clear_flags() {
  asm volatile("pushfq\n\tandq %0, (%%rsp)\n\tpopfq\n\tcld" : : "r"(~kClearAfter) : "memory", "cc");
}

uint64_t guard(uint64_t tag, uint64_t i) { return (tag << 56) ^ ((i + 1) * 0x9E3779B97F4A7C15ull); }

void fill(volatile uint64_t* p, uint64_t words, uint64_t tag) {
  for (uint64_t i = 0; i < words; ++i) p[i] = guard(tag, i);
}
// Index of the first word that differs from fill(tag), or words.
uint64_t first_bad(const volatile uint64_t* p, uint64_t words, uint64_t tag) {
  for (uint64_t i = 0; i < words; ++i)
    if (p[i] != guard(tag, i)) return i;
  return words;
}

constexpr uint64_t kW = kPage / 8;  // words per page

// ===========================================================================
// Executing non-executable memory.

using Fn = void (*)();
void call_at(uint64_t a) { reinterpret_cast<Fn>(a)(); }

void exec_heap(uint64_t) {
  auto* p = static_cast<uint8_t*>(map_anon(kPage));
  if (!p) exit_group(3);
  p[0] = 0xc3;  // ret
  call_at(reinterpret_cast<uint64_t>(p));
}
void exec_stack(uint64_t) {
  volatile uint8_t code[64];
  code[0] = 0xc3;
  call_at(reinterpret_cast<uint64_t>(code));
}
void exec_readonly(uint64_t) {
  auto* p = static_cast<uint8_t*>(map_anon(kPage));
  if (!p) exit_group(3);
  p[0] = 0xc3;
  mprotect(p, kPage, PROT_READ);
  call_at(reinterpret_cast<uint64_t>(p));
}
void exec_rwx(uint64_t) {  // the control: PROT_EXEC pages run
  auto* p = static_cast<uint8_t*>(map_anon(kPage, PROT_READ | PROT_WRITE | PROT_EXEC));
  if (!p) exit_group(3);
  p[0] = 0xc3;
  call_at(reinterpret_cast<uint64_t>(p));
}
void exec_after_mprotect(uint64_t) {  // runs once, then loses PROT_EXEC
  auto* p = static_cast<uint8_t*>(map_anon(kPage, PROT_READ | PROT_WRITE | PROT_EXEC));
  if (!p) exit_group(3);
  p[0] = 0xc3;
  call_at(reinterpret_cast<uint64_t>(p));
  if (mprotect(p, kPage, PROT_READ | PROT_WRITE) != 0) exit_group(4);
  call_at(reinterpret_cast<uint64_t>(p));
}

void attack_nx_exec() {
  EXPECT_SIGNAL("call into an RW anonymous page", run_victim(exec_heap, 0), SIGSEGV);
  EXPECT_SIGNAL("call into the stack", run_victim(exec_stack, 0), SIGSEGV);
  EXPECT_SIGNAL("call into a read-only page", run_victim(exec_readonly, 0), SIGSEGV);
  EXPECT_SIGNAL("call into a page after mprotect dropped PROT_EXEC", run_victim(exec_after_mprotect, 0),
                SIGSEGV);
  EXPECT_EXIT("call into an RWX page (control)", run_victim(exec_rwx, 0), kVictimSurvived);
}

// ===========================================================================
// ud2, int3, int $N, sysenter and int $0x80 from 64-bit mode.

void do_ud2(uint64_t) { asm volatile("ud2"); }
void do_int3(uint64_t) { asm volatile("int3"); }

JmpBuf g_jmp;
volatile int g_sig_seen;
volatile uint64_t g_handler_flags;
void escape_handler(int sig) {
  g_handler_flags = read_flags();
  g_sig_seen = sig;
  pvk_longjmp(&g_jmp, 1);
}

void handled_ud2(uint64_t) {
  sigaction(SIGILL, escape_handler, kSaNodefer);
  if (pvk_setjmp(&g_jmp) == 0) asm volatile("ud2");
  exit_group(g_sig_seen);
}
void handled_int3(uint64_t) {
  sigaction(SIGTRAP, escape_handler, kSaNodefer);
  if (pvk_setjmp(&g_jmp) == 0) asm volatile("int3");
  exit_group(g_sig_seen);
}

void attack_ud2_sigill() {
  EXPECT_SIGNAL("ud2", run_victim(do_ud2, 0), SIGILL);
  EXPECT_EXIT("ud2 with a SIGILL handler (exit = the handler's signal)", run_victim(handled_ud2, 0), SIGILL);
}
void attack_int3_sigtrap() {
  EXPECT_SIGNAL("int3", run_victim(do_int3, 0), SIGTRAP);
  EXPECT_EXIT("int3 with a SIGTRAP handler (exit = the handler's signal)", run_victim(handled_int3, 0),
              SIGTRAP);
}

void int_n(uint64_t n) { call_at(reinterpret_cast<uint64_t>(hostile_int_stubs) + 16 * n); }

void attack_int_n() {
  int by_sig[65] = {};
  for (uint64_t n = 0; n < 256; ++n) {
    const Outcome o = run_victim(int_n, n);
    char what[40];
    pvk::format(what, sizeof what, "int $%lu from 64-bit mode", n);
    // No vector may be usable as a system call or a fake exception (an
    // error-code vector entered without an error code): the process dies.
    EXPECT_SIGNAL(what, o, SIGSEGV, SIGTRAP, SIGILL, SIGBUS);
    if (!o.timed_out && WIFSIGNALED(o.status) && WTERMSIG(o.status) <= 64) ++by_sig[WTERMSIG(o.status)];
  }
  detail("sigsegv", by_sig[SIGSEGV]);
  detail("sigtrap", by_sig[SIGTRAP]);
  detail("sigill", by_sig[SIGILL]);
}

void do_sysenter(uint64_t) { asm volatile("mov $39, %%eax\n\tsysenter" : : : "rax", "rcx", "rdx", "memory"); }
void do_int80(uint64_t) { asm volatile("mov $39, %%eax\n\tint $0x80" : : : "rax", "memory"); }
void do_syscall_getpid(uint64_t) {
  if (syscall0(SYS_getpid) != getpid()) exit_group(3);
}

void attack_sysenter_int80_64() {
  EXPECT_SIGNAL("sysenter from 64-bit mode", run_victim(do_sysenter, 0), SIGSEGV, SIGILL);
  EXPECT_SIGNAL("int $0x80 from 64-bit mode", run_victim(do_int80, 0), SIGSEGV, SIGILL);
  EXPECT_EXIT("syscall from 64-bit mode (control)", run_victim(do_syscall_getpid, 0), kVictimSurvived);
}

// ===========================================================================
// RFLAGS bits set before every kind of kernel entry.

// Each step of flag_entries returns 0 or exits with its step number, so a
// failing victim says which entry went wrong.
[[noreturn]] void step_failed(int step, const char* what, uint64_t fl) {
  fail(__LINE__, "flags 0x%lx: step %d: %s", fl, step, what);
  exit_group(10 + step);
}

volatile uint64_t g_zero;

void flag_entries(uint64_t fl) {
  // 1. A plain system call.
  if (flagged_syscall(fl, SYS_getpid) != getpid()) step_failed(1, "getpid returned something else", fl);

  // 2. write() from and read() into the middle of guarded regions.
  int p[2];
  if (pipe(p) != 0) step_failed(2, "pipe", fl);
  auto* src = static_cast<volatile uint64_t*>(map_anon(3 * kPage));
  auto* dst = static_cast<volatile uint64_t*>(map_anon(3 * kPage));
  if (!src || !dst) step_failed(2, "mmap", fl);
  fill(src, 3 * kW, 0x51);
  fill(dst, 3 * kW, 0xd5);
  constexpr uint64_t kLen = 2000, kOff = 104;  // bytes; the read lands mid-page
  const int64_t w = flagged_syscall(fl, SYS_write, static_cast<uint64_t>(p[1]), reinterpret_cast<uint64_t>(src + kW), kLen);
  if (w != static_cast<int64_t>(kLen)) step_failed(2, "write to the pipe returned a wrong count", fl);
  const int64_t r = flagged_syscall(fl, SYS_read, static_cast<uint64_t>(p[0]),
                                    reinterpret_cast<uint64_t>(dst) + kPage + kOff, kLen);
  if (r != static_cast<int64_t>(kLen)) step_failed(2, "read from the pipe returned a wrong count", fl);
  if (first_bad(src, 3 * kW, 0x51) != 3 * kW) step_failed(2, "write() changed its source buffer", fl);
  {
    const auto* d = reinterpret_cast<const volatile uint8_t*>(dst);
    const auto* s = reinterpret_cast<const volatile uint8_t*>(src + kW);
    for (uint64_t i = 0; i < kLen; ++i)
      if (d[kPage + kOff + i] != s[i]) step_failed(2, "read() delivered wrong bytes", fl);
    // Every byte outside [kPage + kOff, +kLen) still holds the guard.
    for (uint64_t i = 0; i < 3 * kW; ++i) {
      const uint64_t lo = i * 8, hi = lo + 8;
      if (hi <= kPage + kOff || lo >= kPage + kOff + kLen)
        if (dst[i] != guard(0xd5, i)) step_failed(2, "read() wrote outside its buffer", fl);
    }
  }
  close(p[0]);
  close(p[1]);

  // 3. Page faults: a write to a fresh page, a read of another (the zero
  // page) then a write to it (copy of the zero page); the neighbours must
  // keep their contents and the fresh pages read as zero elsewhere.
  auto* f = static_cast<volatile uint64_t*>(map_anon(6 * kPage));
  if (!f) step_failed(3, "mmap", fl);
  fill(f, 2 * kW, 0xa1);
  fill(f + 4 * kW, 2 * kW, 0xa4);
  flagged_store(fl, f + 2 * kW + 1, 0x1234);
  if (flagged_load(fl, f + 3 * kW + 5) != 0) step_failed(3, "a fresh page does not read as zero", fl);
  flagged_store(fl, f + 3 * kW + 6, 0x5678);
  for (uint64_t i = 0; i < 2 * kW; ++i) {
    const uint64_t want = i == 1 ? 0x1234 : i == kW + 6 ? 0x5678 : 0;
    if (f[2 * kW + i] != want) step_failed(3, "a faulted-in page holds wrong data", fl);
  }
  if (first_bad(f, 2 * kW, 0xa1) != 2 * kW) step_failed(3, "the pages below the faulted ones changed", fl);
  if (first_bad(f + 4 * kW, 2 * kW, 0xa4) != 2 * kW) step_failed(3, "the pages above the faulted ones changed", fl);

  // 4. Copy-on-write after fork: the child's write copies the page.
  auto* c = static_cast<volatile uint64_t*>(map_anon(3 * kPage));
  if (!c) step_failed(4, "mmap", fl);
  fill(c, 3 * kW, 0xc0);
  const int64_t kid = fork();
  if (kid == 0) {
    flagged_store(fl, c + kW + 3, 0xabcdef);
    for (uint64_t i = 0; i < 3 * kW; ++i)
      if (c[i] != (i == kW + 3 ? 0xabcdef : guard(0xc0, i))) exit_group(1);
    exit_group(0);
  }
  int st = 0;
  if (kid < 0 || wait4(kid, &st, 0) != kid || st != 0) step_failed(4, "the child saw a wrong copy-on-write page", fl);
  if (first_bad(c, 3 * kW, 0xc0) != 3 * kW) step_failed(4, "the child's write reached the parent's page", fl);

  // 5-8. Exceptions with a handler: #DE, #UD, int3, a write to a read-only
  // page. The handler must be entered with DF and TF clear (the ABI).
  struct Trap {
    int step;
    const char* what;
    int sigs[2];
  };
  static const Trap kTraps[] = {
      {5, "#DE", {SIGFPE, 0}},
      {6, "#UD", {SIGILL, SIGSEGV}},
      {7, "int3", {SIGTRAP, SIGSEGV}},
      {8, "write to a read-only page", {SIGSEGV, 0}},
  };
  auto* ro = static_cast<volatile uint64_t*>(map_anon(kPage));
  if (!ro) step_failed(8, "mmap", fl);
  ro[0] = 1;
  mprotect(const_cast<uint64_t*>(ro), kPage, PROT_READ);
  for (const Trap& t : kTraps) {
    for (int s : t.sigs)
      if (s) sigaction(s, escape_handler, kSaNodefer);
    g_sig_seen = 0;
    g_handler_flags = 0;
    if (pvk_setjmp(&g_jmp) == 0) {
      switch (t.step) {
        case 5:
          asm volatile(
              "pushfq\n\torq %0, (%%rsp)\n\tpopfq\n\t"
              "xor %%edx, %%edx\n\tmov $1, %%eax\n\tdivq %1"
              :
              : "r"(fl), "r"(g_zero)
              : "rax", "rdx", "memory", "cc");
          break;
        case 6: asm volatile("pushfq\n\torq %0, (%%rsp)\n\tpopfq\n\tud2" : : "r"(fl) : "memory", "cc"); break;
        case 7: asm volatile("pushfq\n\torq %0, (%%rsp)\n\tpopfq\n\tint3" : : "r"(fl) : "memory", "cc"); break;
        case 8: flagged_store(fl, ro, 2); break;
      }
      clear_flags();
      step_failed(t.step, "the trapping instruction completed", fl);
    }
    clear_flags();
    if (g_sig_seen != t.sigs[0] && g_sig_seen != t.sigs[1]) step_failed(t.step, "wrong or no signal", fl);
    if (g_handler_flags & (kDF | kTF)) step_failed(t.step, "the handler was entered with DF or TF set", fl);
    for (int s : t.sigs)
      if (s) sigaction(s, SIG_DFL);
  }
}

// The neighbours test: the attack process holds pattern pages across the
// victim's run; a kernel clearing or copying backwards may hit frames
// allocated just before the victim's.
void attack_flags_entries() {
  struct Set {
    const char* name;
    uint64_t fl;
  };
  const Set sets[] = {
      {"DF", kDF},  {"AC", kAC}, {"NT", kNT}, {"IOPL3 (ignored at CPL3)", kIOPL},
      {"DF|AC|NT|IOPL", kDF | kAC | kNT | kIOPL | kCF},
  };
  constexpr uint64_t kHeld = 64;
  for (const Set& s : sets) {
    auto* held = static_cast<volatile uint64_t*>(map_anon(kHeld * kPage));
    HCHECK(held != nullptr, "mmap");
    if (!held) return;
    fill(held, kHeld * kW, 0x77);
    char what[64];
    pvk::format(what, sizeof what, "flags %s before every entry", s.name);
    EXPECT_EXIT(what, run_victim(flag_entries, s.fl), kVictimSurvived);
    const uint64_t bad = first_bad(held, kHeld * kW, 0x77);
    HCHECK(bad == kHeld * kW, "flags %s: another process's page changed at word %lu", s.name, bad);
    munmap(const_cast<uint64_t*>(held), kHeld * kPage);
  }
  // IOPL cannot be raised by popf at CPL3.
  asm volatile("pushfq\n\torq %0, (%%rsp)\n\tpopfq" : : "r"(kIOPL) : "memory", "cc");
  const uint64_t after = read_flags();
  HCHECK((after & kIOPL) == 0, "popf raised IOPL to %lu", (after & kIOPL) >> 12);
  clear_flags();
}

// TF: the program gets SIGTRAP (no handler: it dies of it) and the kernel
// never single-steps itself.
void tf_nop(uint64_t) { asm volatile("pushfq\n\torq %0, (%%rsp)\n\tpopfq\n\tnop\n\tnop" : : "r"(kTF) : "memory", "cc"); }
void tf_syscall(uint64_t) { flagged_syscall(kTF, SYS_getpid); }
void tf_fault(uint64_t) {
  auto* p = static_cast<volatile uint64_t*>(map_anon(kPage));
  flagged_store(kTF, p, 1);
}
void tf_pipe(uint64_t) {
  int p[2];
  pipe(p);
  char buf[64] = {1};
  flagged_syscall(kTF, SYS_write, static_cast<uint64_t>(p[1]), reinterpret_cast<uint64_t>(buf), sizeof buf);
}

void attack_flags_tf() {
  EXPECT_SIGNAL("TF then nop", run_victim(tf_nop, 0), SIGTRAP);
  EXPECT_SIGNAL("TF then syscall", run_victim(tf_syscall, 0), SIGTRAP);
  EXPECT_SIGNAL("TF then a page fault", run_victim(tf_fault, 0), SIGTRAP);
  EXPECT_SIGNAL("TF then write() to a pipe", run_victim(tf_pipe, 0), SIGTRAP);
}

// Timer ticks: a process spins with DF|AC|NT set (no system calls) while
// another does copies and faults; both must see exactly their data.
uint64_t tsc_per_ms() {
  PvkCounters c;
  if (read_counters(&c) != 0 || !c.tsc_khz) return 1000000;
  return c.tsc_khz;
}
inline uint64_t rdtsc() {
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

void spin_with_flags(uint64_t ms) {
  const uint64_t until = rdtsc() + ms * tsc_per_ms();
  auto* mine = static_cast<volatile uint64_t*>(map_anon(8 * kPage));
  if (!mine) exit_group(3);
  fill(mine, 8 * kW, 0x5a);
  asm volatile(
      "pushfq\n\torq %[fl], (%%rsp)\n\tpopfq\n\t"
      "1: rdtsc\n\t"
      "shl $32, %%rdx\n\t"
      "or %%rdx, %%rax\n\t"
      "cmp %[until], %%rax\n\t"
      "jb 1b\n\t"
      "pushfq\n\tandq %[clr], (%%rsp)\n\tpopfq\n\tcld"
      :
      : [fl] "r"(kDF | kAC | kNT), [until] "r"(until), [clr] "r"(~kClearAfter)
      : "rax", "rdx", "memory", "cc");
  if (first_bad(mine, 8 * kW, 0x5a) != 8 * kW) exit_group(4);
}

void copy_worker(uint64_t ms) {
  const uint64_t until = rdtsc() + ms * tsc_per_ms();
  int p[2];
  if (pipe(p) != 0) exit_group(3);
  static char out[1024], in[1024];
  unsigned round = 0;
  while (rdtsc() < until) {
    for (unsigned i = 0; i < sizeof out; ++i) out[i] = static_cast<char>(i + round);
    memset(in, 0, sizeof in);
    if (write(p[1], out, sizeof out) != sizeof out || read(p[0], in, sizeof in) != sizeof in) exit_group(4);
    if (memcmp(in, out, sizeof in) != 0) exit_group(5);
    auto* f = static_cast<volatile uint64_t*>(map_anon(2 * kPage));
    if (!f) exit_group(6);
    f[0] = round;
    if (f[1] != 0 || f[kW] != 0 || f[0] != round) exit_group(7);
    munmap(const_cast<uint64_t*>(f), 2 * kPage);
    ++round;
    sched_yield();
  }
  exit_group(0);
}

void attack_flags_timer() {
  constexpr uint64_t kMs = 300;
  const int64_t worker = fork();
  if (worker == 0) copy_worker(kMs);
  const Outcome spinner = run_victim(spin_with_flags, kMs);
  EXPECT_EXIT("spinning through timer ticks with DF|AC|NT set", spinner, kVictimSurvived);
  EXPECT_EXIT("a process copying and faulting meanwhile", wait_victim(worker), 0);
}

// ===========================================================================
// Forged rt_sigreturn frames (Linux's layout, base/signal_frame.h: the
// ucontext read at %rsp; no FP image, fpstate 0).

struct ForgedFrame {
  uint64_t uc_flags, uc_link, ss_sp, ss_flags, ss_size;
  uint64_t r8, r9, r10, r11, r12, r13, r14, r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, rflags;
  uint16_t cs, gs, fs, ss;
  uint64_t err, trapno, oldmask, cr2, fpstate, reserved[8];
  uint64_t blocked;
};

uint16_t g_orig_cs, g_orig_ss;
alignas(16) uint8_t g_landing_stack[16384];
ForgedFrame g_frame;

[[noreturn]] void sigreturn_with(uint64_t frame_at) {
  asm volatile("mov %0, %%rsp\n\tmov $15, %%eax\n\tsyscall\n\tud2" : : "r"(frame_at) : "memory");
  __builtin_unreachable();
}

struct Forge {
  const char* what;
  uint64_t rip, cs, ss, rflags, rsp;
  uint64_t frame_at;  // 0: g_frame
  bool may_land;      // reaching the landing pad is acceptable (then it must die of SIGSEGV there)
};

void forged(uint64_t i);
const Forge* g_forges;

void forged(uint64_t i) {
  const Forge& f = g_forges[i];
  memset(&g_frame, 0, sizeof g_frame);
  g_frame.rax = 0x1111;
  g_frame.rip = f.rip;
  g_frame.cs = static_cast<uint16_t>(f.cs);
  g_frame.ss = static_cast<uint16_t>(f.ss);
  g_frame.rflags = f.rflags;
  g_frame.rsp = f.rsp;
  sigreturn_with(f.frame_at ? f.frame_at : reinterpret_cast<uint64_t>(&g_frame));
}

void attack_sigreturn_forged() {
  g_orig_cs = read_cs();
  g_orig_ss = read_ss();
  const uint64_t pad = reinterpret_cast<uint64_t>(hostile_landing_pad);
  const uint64_t stk = reinterpret_cast<uint64_t>(g_landing_stack + sizeof g_landing_stack - 64);
  const uint64_t cs = g_orig_cs, ss = g_orig_ss, kimage = PVK_KERNEL_VMA + PVK_KERNEL_LOAD;
  static const Forge forges[] = {
      {"a sane frame (control)", pad, cs, ss, 0x202, stk, 0, true},
      {"native kernel CS/SS (0x08/0x10)", pad, 0x08, 0x10, 0x202, stk, 0, true},
      {"Xen hypervisor CS/SS (0xe008/0xe010)", pad, 0xe008, 0xe010, 0x202, stk, 0, true},
      {"ring-0 RPL on the user selectors", pad, cs & ~3ull, ss & ~3ull, 0x202, stk, 0, true},
      {"32-bit user CS (native 0x1b)", pad, 0x1b, ss, 0x202, stk, 0, true},
      {"32-bit user CS (Xen 0xe023)", pad, 0xe023, 0xe02b, 0x202, stk, 0, true},
      {"null CS and SS", pad, 0, 0, 0x202, stk, 0, true},
      {"IOPL=3 in RFLAGS", pad, cs, ss, 0x3202, stk, 0, true},
      {"VM in RFLAGS", pad, cs, ss, 0x20202, stk, 0, true},
      {"NT in RFLAGS", pad, cs, ss, 0x4202, stk, 0, true},
      {"AC in RFLAGS", pad, cs, ss, 0x40202, stk, 0, true},
      {"IF clear in RFLAGS", pad, cs, ss, 0x002, stk, 0, true},
      {"every RFLAGS bit", pad, cs, ss, ~0ull, stk, 0, true},
      {"non-canonical RIP", 0x0000800000000000ull, cs, ss, 0x202, stk, 0, false},
      {"RIP at the top of the non-canonical hole", 0xffff7fffffffffffull, cs, ss, 0x202, stk, 0, false},
      {"kernel RIP (Xen's range)", 0xffff800000000000ull, cs, ss, 0x202, stk, 0, false},
      {"kernel RIP (the kernel image)", kimage, cs, ss, 0x202, stk, 0, false},
      {"RIP -1", ~0ull, cs, ss, 0x202, stk, 0, false},
      {"non-canonical RSP", pad, cs, ss, 0x202, 0x0000800000000000ull, 0, false},
      {"kernel RSP", pad, cs, ss, 0x202, PVK_PHYSMAP_BASE + 0x100000, 0, false},
      {"frame at an unmapped address", pad, cs, ss, 0x202, stk, 0x1000, false},
      {"frame at a non-canonical address", pad, cs, ss, 0x202, stk, 0x0000800000001000ull, false},
      {"frame at a kernel address", pad, cs, ss, 0x202, stk, kimage, false},
  };
  g_forges = forges;
  unsigned landed_sane = 0;
  for (uint64_t i = 0; i < sizeof forges / sizeof forges[0]; ++i) {
    const Outcome o = run_victim(forged, i);
    char what[96];
    pvk::format(what, sizeof what, "rt_sigreturn with %s", forges[i].what);
    // Exit 3/4/5 (the landing pad saw forged privilege, IOPL/VM, or port
    // I/O worked) and any survival are failures; dying is the only way out.
    if (forges[i].may_land)
      EXPECT_SIGNAL(what, o, SIGSEGV, SIGTRAP, SIGILL, SIGBUS, SIGKILL);
    else
      EXPECT_SIGNAL(what, o, SIGSEGV, SIGILL, SIGBUS, SIGKILL);
    if (i == 0 && !died_of_one_of(o, {SIGSEGV})) fail(__LINE__, "the control frame did not reach the landing pad's outb");
    if (forges[i].may_land && died_of_one_of(o, {SIGSEGV})) ++landed_sane;
  }
  detail("landed_sane", landed_sane);
}

// Non-canonical and kernel signal handler (and restorer) addresses.
struct BadHandler {
  uint64_t handler, restorer;
};
const BadHandler* g_bad_handlers;
void user_handler(int) {}

void bad_handler_victim(uint64_t i) {
  const BadHandler& b = g_bad_handlers[i];
  KernelSigaction act{b.handler ? b.handler : reinterpret_cast<uint64_t>(user_handler), SA_RESTORER,
                      b.restorer ? b.restorer : reinterpret_cast<uint64_t>(pvk_sigreturn_restorer), 0};
  const int64_t r = syscall4(SYS_rt_sigaction, SIGUSR1, reinterpret_cast<uint64_t>(&act), 0, 8);
  if (r == -EINVAL || r == -EFAULT) exit_group(0);  // refused up front
  if (r != 0) exit_group(3);
  kill(getpid(), SIGUSR1);  // delivered on the way out of kill: must die
  exit_group(4);
}

void attack_sigaction_bad_handler() {
  const uint64_t kimage = PVK_KERNEL_VMA + PVK_KERNEL_LOAD;
  static const BadHandler bad[] = {
      {0x0000800000000000ull, 0}, {0xffff7ffffffff000ull, 0}, {0xffff800000000000ull, 0}, {kimage, 0},
      {~0ull, 0}, {kUserTop - 16, 0},  // canonical, user, unmapped
      {0, 0x0000800000000000ull}, {0, kimage}, {0, ~0ull},
  };
  g_bad_handlers = bad;
  for (uint64_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    const Outcome o = run_victim(bad_handler_victim, i);
    char what[96];
    pvk::format(what, sizeof what, "handler 0x%lx restorer 0x%lx", bad[i].handler, bad[i].restorer);
    count_check(__LINE__);
    const bool refused = !o.timed_out && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0;
    if (!refused && !died_of_one_of(o, {SIGSEGV, SIGKILL})) {
      char how[64];
      fail(__LINE__, "%s: %s (want EINVAL/EFAULT from rt_sigaction, or death by SIGSEGV at delivery)", what,
           describe(how, sizeof how, o));
    }
  }
}

// ===========================================================================
// `syscall` in the last bytes of the highest user page.

void top_page(uint64_t variant) {
  const uint64_t page = kUserTop - kPage;
  if (variant == 1) {  // a mapping that crosses kUserTop must be refused
    const int64_t r = mmap(reinterpret_cast<void*>(page), 2 * kPage, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED);
    exit_group(is_err(r) ? 0 : 3);
  }
  const int64_t r = mmap(reinterpret_cast<void*>(page), kPage, PROT_READ | PROT_WRITE | PROT_EXEC,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED);
  detail("top_page_mmap", r);
  if (is_err(r)) exit_group(0);  // not mappable: nothing to attack
  if (static_cast<uint64_t>(r) != page) exit_group(5);
  auto* code = reinterpret_cast<volatile uint8_t*>(page);
  code[kPage - 2] = 0x0f;  // syscall
  code[kPage - 1] = 0x05;
  asm volatile("mov $39, %%eax\n\tjmp *%0" : : "r"(page + kPage - 2) : "rax", "memory");
}

void attack_top_page_syscall() {
  const Outcome o = run_victim(top_page, 0);
  count_check(__LINE__);
  const bool refused = !o.timed_out && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0;
  if (!refused && !died_of_one_of(o, {SIGSEGV})) {
    char how[64];
    fail(__LINE__, "syscall at kUserTop-2: %s (want the page refused, or death by SIGSEGV)",
         describe(how, sizeof how, o));
  }
  EXPECT_EXIT("a MAP_FIXED mapping across kUserTop is refused", run_victim(top_page, 1), 0);
}

// ===========================================================================
// Long writes and reads must honour SIGKILL: a killed writer stops where it
// is, a blocked one wakes up to die. Judged by what was done (bytes on the
// console, the write never returning), never by how long it took: the
// host's speed sets that.

volatile uint64_t* g_flag;  // MAP_SHARED: [0] set by a victim about to block

constexpr uint64_t kConsoleFlood = 4ull << 20;

void flood_console(uint64_t bytes) {
  auto* buf = static_cast<char*>(map_anon(bytes));
  if (!buf) exit_group(3);
  static const char kLine[] = "hostile: console flood, a long write that SIGKILL must cut short ....\n";
  constexpr uint64_t kLen = sizeof kLine - 1;
  for (uint64_t i = 0; i < bytes; ++i) buf[i] = kLine[i % kLen];
  g_flag[0] = 1;
  write(1, buf, bytes);
  g_flag[0] = 2;
  print("\n");
}

// A 32 MiB transfer on a pipe nobody serves: it blocks until killed.
template <int64_t (*Transfer)(int, void*, size_t)>
void pipe_blocker(uint64_t fd) {
  constexpr uint64_t kBytes = 32ull << 20;
  auto* buf = static_cast<char*>(map_anon(kBytes));
  if (!buf) exit_group(3);
  g_flag[0] = 1;
  Transfer(static_cast<int>(fd), buf, kBytes);
  g_flag[0] = 2;
}
int64_t write_buf(int fd, void* buf, size_t n) { return write(fd, buf, n); }
constexpr auto pipe_writer = pipe_blocker<&write_buf>;
constexpr auto pipe_reader = pipe_blocker<&read>;

// kill_during's `since` for a wait counted from the victim's flag.
constexpr uint64_t kSinceTheFlag = ~0ull;

uint64_t console_bytes() {
  PvkCounters c;
  read_counters(&c);
  return c.console_bytes;
}

// Forks fn(arg) and waits until it set g_flag (it is about to make its long
// call), then until started(since) says the call is under way; SIGKILLs it
// and reaps it. The victim must die of the SIGKILL with its call never
// having returned (g_flag still 1).
void kill_during(const char* what, void (*fn)(uint64_t), uint64_t arg, bool (*started)(uint64_t), uint64_t since) {
  g_flag[0] = 0;
  const int64_t pid = fork();
  if (pid == 0) {
    fn(arg);
    exit_group(kVictimSurvived);
  }
  HCHECK(pid > 0, "%s: fork failed", what);
  if (pid < 0) return;
  const uint64_t t0 = now_ns();
  while (g_flag[0] == 0 && now_ns() - t0 < kHangMs * 1'000'000) sched_yield();
  if (since == kSinceTheFlag) since = now_ns();
  while (!started(since) && now_ns() - t0 < kHangMs * 1'000'000) sched_yield();
  kill(pid, SIGKILL);
  const Outcome o = wait_victim(pid);
  EXPECT_SIGNAL(what, o, SIGKILL);
  HCHECK(g_flag[0] == 1, "%s: the call returned to user mode (flag %lu) before the SIGKILL took it", what,
         static_cast<uint64_t>(g_flag[0]));
}

// The console write is under way once a page of it reached the console.
bool console_started(uint64_t before) { return console_bytes() - before >= kPage; }
// A pipe call blocks as soon as it starts (nobody serves the pipe): give it
// 50 ms of the guest's clock after the flag to get there.
bool blocked_by_now(uint64_t since) { return now_ns() - since >= 50'000'000; }

void attack_huge_write_console() {
  g_flag = static_cast<volatile uint64_t*>(map_anon(kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  const uint64_t before = console_bytes();
  kill_during("a 4 MiB write to the console, SIGKILL once it is under way", flood_console, kConsoleFlood,
              console_started, before);
  const uint64_t written = console_bytes() - before;
  print("\n");  // the victim was cut mid-line
  detail("console_bytes_before_kill", static_cast<int64_t>(written));
  HCHECK(written >= kPage && written < kConsoleFlood,
         "the killed console write put %lu of its %lu bytes on the console (want it cut short)", written, kConsoleFlood);
}

void attack_huge_pipe_kill() {
  g_flag = static_cast<volatile uint64_t*>(map_anon(kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  int p[2];
  HCHECK(pipe(p) == 0, "pipe");
  kill_during("a 32 MiB write to a pipe nobody reads", pipe_writer, static_cast<uint64_t>(p[1]), blocked_by_now,
              kSinceTheFlag);
  int q[2];
  HCHECK(pipe(q) == 0, "pipe");
  kill_during("a 32 MiB read from a pipe nobody writes", pipe_reader, static_cast<uint64_t>(q[0]), blocked_by_now,
              kSinceTheFlag);
  close(p[0]);
  close(p[1]);
  close(q[0]);
  close(q[1]);
}

// ===========================================================================
// The small items: high bits, default-ignored signals, kill of init.

void high_bits(uint64_t) {
  const int64_t me = getpid();
  int64_t r = syscall2(SYS_kill, static_cast<uint64_t>(me), 0x10000000bull);  // SIGSEGV if truncated
  HCHECK(r == -EINVAL, "kill(self, 0x1_0000_000b) returned %ld, want -EINVAL", r);
  r = syscall2(SYS_kill, static_cast<uint64_t>(me), 65);
  HCHECK(r == -EINVAL, "kill(self, 65) returned %ld, want -EINVAL", r);
  r = syscall2(SYS_kill, static_cast<uint64_t>(me), ~0ull);
  HCHECK(r == -EINVAL, "kill(self, -1) returned %ld, want -EINVAL", r);
  KernelSigaction act{SIG_IGN, SA_RESTORER, reinterpret_cast<uint64_t>(pvk_sigreturn_restorer), 0};
  r = syscall4(SYS_rt_sigaction, 0x10000000aull, reinterpret_cast<uint64_t>(&act), 0, 8);
  HCHECK(r == -EINVAL, "rt_sigaction(0x1_0000_000a) returned %ld, want -EINVAL", r);
  r = syscall4(SYS_rt_sigaction, 0, reinterpret_cast<uint64_t>(&act), 0, 8);
  HCHECK(r == -EINVAL, "rt_sigaction(0) returned %ld, want -EINVAL", r);
  r = syscall4(SYS_rt_sigaction, 65, reinterpret_cast<uint64_t>(&act), 0, 8);
  HCHECK(r == -EINVAL, "rt_sigaction(65) returned %ld, want -EINVAL", r);
  void* page = map_anon(kPage);
  HCHECK(page != nullptr, "mmap");
  r = syscall3(SYS_mprotect, reinterpret_cast<uint64_t>(page), kPage, 0x100000003ull);
  HCHECK(r == -EINVAL, "mprotect(prot 0x1_0000_0003) returned %ld, want -EINVAL", r);
  r = syscall3(SYS_mprotect, reinterpret_cast<uint64_t>(page), kPage, 0x80000001ull);
  HCHECK(r == -EINVAL, "mprotect(prot 0x8000_0001) returned %ld, want -EINVAL", r);
  r = syscall6(SYS_mmap, 0, kPage, 0x100000003ull, MAP_PRIVATE | MAP_ANONYMOUS, ~0ull, 0);
  HCHECK(r == -EINVAL, "mmap(prot 0x1_0000_0003) returned %ld, want -EINVAL", r);
  // The process must still be alive to get here (kill did not deliver 11).
}

void attack_signal_high_bits() {
  EXPECT_EXIT("signal numbers and prot with high bits", run_victim(high_bits, 0), kVictimSurvived);
}

void send_ignored_to_self(uint64_t) {
  for (int s : {SIGCONT, SIGURG, SIGWINCH, static_cast<int>(SIGCHLD)}) HCHECK(kill(getpid(), s) == 0, "kill(self, %d)", s);
  sched_yield();
}
void spin_a_while(uint64_t ms) {
  const uint64_t t0 = now_ns();
  while (now_ns() - t0 < ms * 1000000ull) sched_yield();
}

void attack_default_ignored() {
  EXPECT_EXIT("SIGCONT, SIGURG, SIGWINCH, SIGCHLD sent to self (default action: ignore)",
              run_victim(send_ignored_to_self, 0), kVictimSurvived);
  const int64_t pid = fork();
  if (pid == 0) {
    spin_a_while(300);
    exit_group(kVictimSurvived);
  }
  for (int s : {SIGCONT, SIGURG, SIGWINCH}) HCHECK(kill(pid, s) == 0, "kill(child, %d)", s);
  EXPECT_EXIT("a process sent SIGCONT, SIGURG, SIGWINCH keeps running", wait_victim(pid), kVictimSurvived);
}

void attack_kill_pid_high_bits() {
  int p[2];
  HCHECK(pipe(p) == 0, "pipe");
  const int64_t sleeper = fork();
  if (sleeper == 0) {
    close(p[1]);
    char c;
    read(p[0], &c, 1);  // until the pipe closes
    exit_group(0);
  }
  close(p[0]);
  const int64_t r = syscall2(SYS_kill, (1ull << 32) | static_cast<uint64_t>(sleeper), SIGKILL);
  HCHECK(r == -ESRCH || r == -EINVAL, "kill(0x1_0000_0000 | pid, SIGKILL) returned %ld, want -ESRCH/-EINVAL", r);
  const int64_t r2 = syscall3(SYS_wait4, (1ull << 32) | static_cast<uint64_t>(sleeper), 0, WNOHANG);
  HCHECK(r2 == -ECHILD || r2 == -EINVAL || r2 == 0, "wait4(0x1_0000_0000 | pid, WNOHANG) returned %ld", r2);
  close(p[1]);
  EXPECT_EXIT("the process whose pid was named with high bits is untouched", wait_victim(sleeper), 0);
}

void fake_records(uint64_t) {
  static const char kFake[] = "@pvk {\"event\":\"done\",\"status\":\"pass\"}\n";
  HCHECK(write(1, kFake, sizeof kFake - 1) == sizeof kFake - 1, "write of the fake record");
  // The same record in two writes: a tagger must know where lines start.
  HCHECK(write(1, "@pv", 3) == 3, "write");
  HCHECK(write(1, kFake + 3, sizeof kFake - 4) == sizeof kFake - 4, "write");
  // And one after a partial line of the program's own.
  static const char kAfter[] = "hostile: partial line, then\n@pvk {\"event\":\"done\",\"status\":\"pass\"}\n";
  HCHECK(write(1, kAfter, sizeof kAfter - 1) == sizeof kAfter - 1, "write");
}

void attack_fake_done_record() {
  EXPECT_EXIT("a user program prints a fake done record (the boot test checks the console)",
              run_victim(fake_records, 0), kVictimSurvived);
}

void kill_init_victim(uint64_t) {
  int64_t r = kill(1, SIGKILL);
  HCHECK(r == -EPERM, "kill(1, SIGKILL) returned %ld, want -EPERM", r);
  r = kill(1, SIGSEGV);
  HCHECK(r == -EPERM, "kill(1, SIGSEGV) returned %ld, want -EPERM", r);
  r = syscall2(SYS_kill, (1ull << 32) | 1, SIGKILL);
  HCHECK(r == -ESRCH || r == -EPERM || r == -EINVAL, "kill(0x1_0000_0001, SIGKILL) returned %ld, want -ESRCH/-EPERM/-EINVAL", r);
}

void attack_kill_init() {
  // From a grandchild of init's child: no relation to pid 1 but ancestry.
  EXPECT_EXIT("kill(1, ...) from a non-parent process", run_victim(kill_init_victim, 0), kVictimSurvived);
}

// ===========================================================================
// Compatibility mode: far transfers to every selector, then syscall,
// int $0x80 and sysenter from 32-bit code.

constexpr uint64_t kMarkers = 0x30000000;  // MAP_SHARED, below 4 GiB
volatile uint32_t* g_markers;

struct [[gnu::packed]] FarPtr32 {
  uint32_t off;
  uint16_t sel;
};
FarPtr32 g_far;

struct FarCase {
  int method;  // 0 ljmp, 1 lcall, 2 lret
  uint16_t sel;
  uint32_t mode;  // hostile_compat_entry's %ebx
};
FarCase g_case;

const char* const kMethods[] = {"ljmp", "lcall", "lretq"};
const char* const kModes[] = {"ud2", "syscall", "int $0x80", "sysenter"};

void far_victim(uint64_t) {
  const uint64_t stack = kMarkers + 2 * kPage - 64;
  const uint64_t target = reinterpret_cast<uint64_t>(hostile_compat_entry);
  g_far = {static_cast<uint32_t>(target), g_case.sel};
  const uint64_t sel = g_case.sel;
  switch (g_case.method) {
    case 0:
      asm volatile("mov %0, %%rsp\n\tljmpl *%1" : : "r"(stack), "m"(g_far), "b"(g_case.mode), "D"(kMarkers), "S"(stack)
                   : "memory");
      break;
    case 1:
      asm volatile("mov %0, %%rsp\n\tlcalll *%1" : : "r"(stack), "m"(g_far), "b"(g_case.mode), "D"(kMarkers), "S"(stack)
                   : "memory");
      break;
    default:
      asm volatile("mov %0, %%rsp\n\tpushq %1\n\tpushq %2\n\tlretq"
                   :
                   : "r"(stack), "r"(sel), "r"(target), "b"(g_case.mode), "D"(kMarkers), "S"(stack)
                   : "memory");
      break;
  }
  exit_group(kVictimSurvived);
}

bool g_page0_mapped;

void setup_compat() {
  g_markers = static_cast<volatile uint32_t*>(map_fixed_shared(kMarkers, 2 * kPage, PROT_READ | PROT_WRITE));
  HCHECK(g_markers != nullptr, "cannot map the marker block at 0x%lx", kMarkers);
  // Populate both pages here: the victims' stack pushes then hit present
  // pages (see shared_stack_push for what happens otherwise).
  if (g_markers) {
    g_markers[1024] = 0;
    g_markers[2047] = 0;
  }
  // If page 0 can be mapped, it holds a payload that would only run if the
  // kernel jumped to user address 0 in ring 0 (syscall from compatibility
  // mode with MSR_CSTAR never set).
  const int64_t r = mmap(nullptr, kPage, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED);
  g_page0_mapped = r == 0;
  if (g_page0_mapped) {
    auto* p = reinterpret_cast<volatile uint8_t*>(0);
    const uint64_t n = static_cast<uint64_t>(hostile_ring0_payload_end - hostile_ring0_payload);
    for (uint64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(hostile_ring0_payload[i]);
  } else if (r >= 0 && !is_err(r)) {
    munmap(reinterpret_cast<void*>(r), kPage);
  }
  detail("page0_mappable", g_page0_mapped ? 1 : 0);
}

// One far transfer in a victim. Returns true if the victim entered the payload.
bool far_case(const FarCase& c, bool verbose) {
  for (int i = 0; i < 8; ++i) g_markers[i] = 0;
  g_case = c;
  if (verbose) printf("hostile: %s to 0x%x, then %s\n", kMethods[c.method], c.sel, kModes[c.mode]);
  PvkCounters c0, c1;
  read_counters(&c0);
  const Outcome o = run_victim(far_victim, 0);
  read_counters(&c1);
  // A victim that hangs: page faults taken meanwhile tell a fault loop from a spin.
  if (o.timed_out) detail("hung_victim_page_faults", static_cast<int64_t>(c1.page_faults - c0.page_faults));
  char what[80];
  pvk::format(what, sizeof what, "%s to selector 0x%x, then %s", kMethods[c.method], c.sel, kModes[c.mode]);
  EXPECT_SIGNAL(what, o, SIGSEGV, SIGILL, SIGKILL, SIGBUS, SIGTRAP);
  HCHECK(g_markers[4] != 0x52494e47, "%s: the kernel ran a user page in ring 0", what);
  const bool entered = g_markers[0] == 0x434f4d50;
  if (entered && c.mode != 0 && g_markers[2] == 0x52455455)
    detail_str("returned_from", what);  // the instruction came back to 32-bit code (then ud2)
  return entered;
}

void attack_compat_far() {
  setup_compat();
  if (!g_markers) return;
  uint16_t sels[64];
  unsigned n = 0;
  for (uint16_t s = 0; s <= 0x40; s += 8) sels[n++] = s, sels[n++] = s | 3;
  for (uint16_t s = 0xe000; s <= 0xe060; s += 8) sels[n++] = s, sels[n++] = s | 3;
  sels[n++] = 0x04 | 3;  // LDT selectors: there is no LDT
  sels[n++] = 0x0c | 3;
  unsigned entered = 0;
  for (unsigned i = 0; i < n; ++i)
    for (int m = 0; m < 2; ++m)
      if (far_case({m, sels[i], 0}, false)) {
        ++entered;
        detail("entered_cs", g_markers[1]);
      }
  detail("entered", entered);
}

// lretq separately, over fewer selectors: natively a lretq to a selector
// that is not user code was seen to leave the victim spinning until killed.
void attack_compat_far_lret() {
  setup_compat();
  if (!g_markers) return;
  const uint16_t sels[] = {0x00, 0x08, 0x13, 0x1b, 0x23, 0x2b, 0x30, 0xe008, 0xe023, 0xe033};
  unsigned entered = 0;
  for (uint16_t s : sels) entered += far_case({2, s, 0}, true) ? 1 : 0;
  detail("entered", entered);
}

void attack_compat_syscall() {
  setup_compat();
  if (!g_markers) return;
  const uint16_t sels[] = {0x1b, 0xe023, 0x2b, 0xe033};  // native and Xen 32-bit user code, then 64-bit
  unsigned entered = 0;
  for (uint16_t s : sels)
    for (int m = 0; m < 2; ++m)
      for (uint32_t mode = 1; mode <= 3; ++mode) entered += far_case({m, s, mode}, true) ? 1 : 0;
  // lretq into 32-bit code, then each instruction.
  for (uint32_t mode = 1; mode <= 3; ++mode) entered += far_case({2, sels[0], mode}, true) ? 1 : 0;
  for (uint32_t mode = 1; mode <= 3; ++mode) entered += far_case({2, sels[1], mode}, true) ? 1 : 0;
  detail("entered", entered);
}

// A stack on a MAP_SHARED page the parent never touched: the first push
// faults the page in. (Found by compat_far: lcall/lretq victims whose stack
// was such a page spun until killed, natively.)
constexpr uint64_t kSharedStack = 0x31000000;
void push_on_shared(uint64_t variant) {
  const uint64_t top = kSharedStack + 2 * kPage - 64;
  if (variant == 0) {  // a plain store first, then pushes
    *reinterpret_cast<volatile uint64_t*>(top - 8) = 1;
  }
  asm volatile(
      "mov %%rsp, %%r12\n\t"
      "mov %0, %%rsp\n\t"
      "pushq $1\n\t"
      "pushq $2\n\t"
      "popq %%rax\n\t"
      "popq %%rax\n\t"
      "mov %%r12, %%rsp"
      :
      : "r"(top)
      : "r12", "rax", "memory");
}

void attack_shared_stack_push() {
  HCHECK(map_fixed_shared(kSharedStack, 2 * kPage, PROT_READ | PROT_WRITE) != nullptr, "mmap shared");
  EXPECT_EXIT("pushes onto an untouched MAP_SHARED page after a store", run_victim(push_on_shared, 0),
              kVictimSurvived);
  EXPECT_EXIT("pushes onto an untouched MAP_SHARED page", run_victim(push_on_shared, 1), kVictimSurvived);
}


// ===========================================================================
// Hostile %gs (SMP): the kernel finds its per-CPU data through the GS
// base, which user code changes by loading a selector into %gs (and, where
// the CPU lets it, with wrgsbase). Each victim loads one, then enters the
// kernel one way: a system call, demand-paging faults, a fatal #PF, #DE,
// int3 (handled, back through rt_sigreturn), ud2, int $0x80 (a #GP), timer
// ticks while it spins, and an unhandled #DE. The kernel checks on every
// entry that its GS base is this CPU's PerCpu and stops otherwise
// (check_this_cpu, arch/smp/percpu.h): a miss fails the whole boot. On
// the user side each victim checks, after every way back (the return from
// the call, signal delivery, sigreturn, preemption), that %gs still holds
// its selector and that its GS base is still the user's: a gs-relative
// read of a user variable must see it (base 0), never fault on a kernel
// address left behind by a missed swapgs.

volatile uint16_t g_gs_sel;
volatile uint64_t g_gs_marker = 0x4b52414d5f5347ull;  // "GS_MARK"
volatile int g_gs_trapped;

inline uint16_t read_gs() {
  uint16_t s;
  asm volatile("mov %%gs, %0" : "=r"(s));
  return s;
}
inline void load_gs(uint16_t s) { asm volatile("mov %0, %%gs" : : "r"(static_cast<uint32_t>(s)) : "memory"); }

// The selector is still the one loaded (a null one may come back as
// another null: 0..3), and the GS base is the user's own 0.
bool gs_intact() {
  const uint16_t s = read_gs(), want = g_gs_sel;
  const bool sel_ok = s == want || ((want & ~3) == 0 && (s & ~3) == 0);
  uint64_t v;
  asm volatile("mov %%gs:(%1), %0" : "=r"(v) : "r"(&g_gs_marker) : "memory");
  return sel_ok && v == g_gs_marker;
}

void gs_exit_handler(int sig) { exit_group(gs_intact() ? sig : 3); }
void gs_return_handler(int) { g_gs_trapped = 1; }

enum GsEntry : uint64_t {
  kGsSyscall, kGsDemandFault, kGsFatalFault, kGsDivide, kGsInt3Return, kGsUd2, kGsInt80, kGsTimer, kGsDivideKill,
  kGsEntries
};
const char* const kGsEntryNames[] = {"syscall",      "demand-paging faults", "#PF (SIGSEGV handler)",
                                     "#DE (SIGFPE handler)", "int3 and rt_sigreturn", "ud2 (SIGILL handler)",
                                     "int $0x80 (#GP)", "timer ticks",         "#DE unhandled"};
static_assert(sizeof kGsEntryNames / sizeof kGsEntryNames[0] == kGsEntries);

void divide_by_zero() {
  asm volatile("xor %%edx, %%edx\n\txor %%ecx, %%ecx\n\tmov $1, %%eax\n\tdiv %%ecx" : : : "rax", "rcx", "rdx", "cc");
}

// arg: selector << 8 | entry. Exits 99 (survived) or with the signal
// whose handler saw %gs intact; 3 if %gs was not; 97 if the selector load
// itself was refused.
void gs_victim(uint64_t arg) {
  const uint16_t sel = static_cast<uint16_t>(arg >> 8);
  const auto entry = static_cast<GsEntry>(arg & 0xff);
  const int64_t pid = getpid();
  g_gs_sel = sel;
  load_gs(sel);
  if (!gs_intact()) exit_group(2);
  switch (entry) {
    case kGsSyscall:
      for (int i = 0; i < 100; ++i)
        if (getpid() != pid || !gs_intact()) exit_group(3);
      break;
    case kGsDemandFault: {
      auto* p = static_cast<volatile uint64_t*>(map_anon(4 * kPage));
      if (!p) exit_group(4);
      for (unsigned i = 0; i < 4; ++i) {
        p[i * kW] = i + 1;
        if (!gs_intact()) exit_group(3);
      }
      break;
    }
    case kGsFatalFault:
      sigaction(SIGSEGV, gs_exit_handler, kSaNodefer);
      asm volatile("movq $1, 0x10" : : : "memory");  // an unmapped user address
      exit_group(5);
    case kGsDivide:
      sigaction(SIGFPE, gs_exit_handler, kSaNodefer);
      divide_by_zero();
      exit_group(5);
    case kGsInt3Return:
      sigaction(SIGTRAP, gs_return_handler);
      asm volatile("int3" : : : "memory");
      if (!g_gs_trapped) exit_group(6);
      break;
    case kGsUd2:
      sigaction(SIGILL, gs_exit_handler, kSaNodefer);
      asm volatile("ud2");
      exit_group(5);
    case kGsInt80:
      sigaction(SIGSEGV, gs_exit_handler, kSaNodefer);
      asm volatile("mov $39, %%eax\n\tint $0x80" : : : "rax", "memory");
      exit_group(5);
    case kGsTimer: {
      const uint64_t until = rdtsc() + 60 * tsc_per_ms();
      while (rdtsc() < until)
        if (read_gs() != sel && ((sel & ~3) != 0 || (read_gs() & ~3) != 0)) exit_group(3);
      break;
    }
    case kGsDivideKill: divide_by_zero(); exit_group(5);
    default: exit_group(7);
  }
  if (!gs_intact()) exit_group(3);
}

void gs_refused_handler(int) { exit_group(97); }

// Loads the selector with a SIGSEGV handler that exits 97: whether the CPU
// takes it at all (a readable code segment is a valid %gs on x86-64).
void gs_probe_load(uint64_t sel) {
  sigaction(SIGSEGV, gs_refused_handler);
  g_gs_sel = static_cast<uint16_t>(sel);
  load_gs(static_cast<uint16_t>(sel));
  exit_group(gs_intact() ? 0 : 3);
}

void attack_gs_selectors() {
  uint16_t cs, ss;
  asm volatile("mov %%cs, %0\n\tmov %%ss, %1" : "=r"(cs), "=r"(ss));
  // The user's data selector, its code selector, and the null selector
  // with RPL 0 and 3.
  const struct {
    const char* what;
    uint16_t sel;
  } kSels[] = {{"null", 0}, {"null RPL 3", 3}, {"user data", ss}, {"user code", cs}};
  detail("user_cs", cs);
  detail("user_ss", ss);
  int tried = 0;
  for (const auto& s : kSels) {
    const Outcome probe = run_victim(gs_probe_load, s.sel);
    if (!probe.timed_out && WIFEXITED(probe.status) && WEXITSTATUS(probe.status) == 97) {  // refused by the CPU: nothing to attack with
      HCHECK(s.sel == cs, "%%gs = %s (0x%x): the load was refused", s.what, s.sel);
      continue;
    }
    EXPECT_EXIT(s.what, probe, 0);
    for (uint64_t e = 0; e < kGsEntries; ++e) {
      char what[96];
      pvk::format(what, sizeof what, "%%gs = %s (0x%x), then %s", s.what, s.sel, kGsEntryNames[e]);
      const Outcome o = run_victim(gs_victim, uint64_t{s.sel} << 8 | e);
      ++tried;
      switch (e) {
        case kGsFatalFault:
        case kGsInt80: EXPECT_EXIT(what, o, SIGSEGV); break;
        case kGsDivide: EXPECT_EXIT(what, o, SIGFPE); break;
        case kGsUd2: EXPECT_EXIT(what, o, SIGILL); break;
        case kGsDivideKill: EXPECT_SIGNAL(what, o, SIGFPE); break;
        default: EXPECT_EXIT(what, o, kVictimSurvived); break;
      }
    }
  }
  detail("victims", tried);
}

// wrgsbase with a kernel-half and a user-half address, then system calls,
// a fault and a handled int3. pvk leaves CR4.FSGSBASE off (natively; a PV
// guest's user mode gets it only if the guest kernel enables it), so the
// instruction should be #UD (SIGILL: exit 98); if a CPU ran it, the base
// is the user's own and the kernel must survive every entry all the same.
void gs_wrgsbase_handler(int) { exit_group(98); }

void gs_wrgsbase_victim(uint64_t base) {
  sigaction(SIGILL, gs_wrgsbase_handler);
  asm volatile("wrgsbase %0" : : "r"(base) : "memory");
  for (int i = 0; i < 10; ++i) getpid();
  auto* p = static_cast<volatile uint64_t*>(map_anon(kPage));
  if (!p) exit_group(4);
  p[0] = 1;
  sigaction(SIGTRAP, gs_return_handler);
  asm volatile("int3" : : : "memory");
  if (!g_gs_trapped) exit_group(6);
  uint64_t now;
  asm volatile("rdgsbase %0" : "=r"(now));
  exit_group(now == base ? kVictimSurvived : 3);
}

void attack_gs_wrgsbase() {
  static uint64_t user_word;
  const uint64_t bases[] = {PVK_KERNEL_VMA, PVK_PHYSMAP_BASE, reinterpret_cast<uint64_t>(&user_word)};
  const char* const names[] = {"wrgsbase: the kernel image", "wrgsbase: the physmap", "wrgsbase: a user address"};
  for (unsigned i = 0; i < 3; ++i) {
    const Outcome o = run_victim(gs_wrgsbase_victim, bases[i]);
    HCHECK(!o.timed_out && WIFEXITED(o.status) && (WEXITSTATUS(o.status) == 98 || WEXITSTATUS(o.status) == kVictimSurvived), "%s: %s", names[i],
           [&] {
             static char buf[96];
             return describe(buf, sizeof buf, o);
           }());
    detail(i == 0 ? "kernel_image_status" : i == 1 ? "physmap_status" : "user_status", o.status);
  }
}

}  // namespace

const Attack kAttacks[] = {
    {"nx_exec", attack_nx_exec},
    {"ud2_sigill", attack_ud2_sigill},
    {"int3_sigtrap", attack_int3_sigtrap},
    {"int_n", attack_int_n},
    {"sysenter_int80_64", attack_sysenter_int80_64},
    {"flags_entries", attack_flags_entries},
    {"flags_tf", attack_flags_tf},
    {"flags_timer", attack_flags_timer},
    {"sigreturn_forged", attack_sigreturn_forged},
    {"sigaction_bad_handler", attack_sigaction_bad_handler},
    {"top_page_syscall", attack_top_page_syscall},
    {"huge_write_console", attack_huge_write_console},
    {"huge_pipe_kill", attack_huge_pipe_kill},
    {"signal_high_bits", attack_signal_high_bits},
    {"default_ignored", attack_default_ignored},
    {"kill_pid_high_bits", attack_kill_pid_high_bits},
    {"fake_done_record", attack_fake_done_record},
    {"shared_stack_push", attack_shared_stack_push},
    {"gs_selectors", attack_gs_selectors},
    {"gs_wrgsbase", attack_gs_wrgsbase},
    // Last: on a kernel with these holes they take the whole kernel down.
    {"kill_init", attack_kill_init},
    {"compat_far", attack_compat_far},
    {"compat_far_lret", attack_compat_far_lret},
    {"compat_syscall", attack_compat_syscall},
};
const unsigned kAttackCount = sizeof kAttacks / sizeof kAttacks[0];

}  // namespace hostile

// Called by hostile_landing_pad (hostile_asm.S) after a forged rt_sigreturn.
extern "C" [[noreturn]] void hostile_landed(uint64_t rflags, uint64_t cs, uint64_t ss) {
  if ((cs & 0xffff) != hostile::g_orig_cs || (ss & 0xffff) != hostile::g_orig_ss) pvk::user::exit_group(3);  // privilege or mode forged
  if (rflags & (hostile::kIOPL | hostile::kVM)) pvk::user::exit_group(4);
  // Port I/O must still be refused: this must die of SIGSEGV.
  asm volatile("mov $0, %%al\n\toutb %%al, $0x80" : : : "rax");
  pvk::user::exit_group(5);
}

