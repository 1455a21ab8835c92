// hostile's attacks with RFLAGS bits (DF, AC, NT, IOPL, TF) set before
// every kind of kernel entry, and held through timer ticks.
#include "hostile_attacks.h"
#include "hostile_helpers.h"

namespace hostile {
namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

void attack_flags_tf() {
  EXPECT_SIGNAL("TF then nop", run_victim(tf_nop, 0), SIGTRAP);
  EXPECT_SIGNAL("TF then syscall", run_victim(tf_syscall, 0), SIGTRAP);
  EXPECT_SIGNAL("TF then a page fault", run_victim(tf_fault, 0), SIGTRAP);
  EXPECT_SIGNAL("TF then write() to a pipe", run_victim(tf_pipe, 0), SIGTRAP);
}

namespace {

// Timer ticks: a process spins with DF|AC|NT set (no system calls) while
// another does copies and faults; both must see exactly their data.
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

}  // namespace

void attack_flags_timer() {
  constexpr uint64_t kMs = 300;
  const int64_t worker = fork();
  if (worker == 0) copy_worker(kMs);
  const Outcome spinner = run_victim(spin_with_flags, kMs);
  EXPECT_EXIT("spinning through timer ticks with DF|AC|NT set", spinner, kVictimSurvived);
  EXPECT_EXIT("a process copying and faulting meanwhile", wait_victim(worker), 0);
}

}  // namespace hostile
