// hostile's attacks with a hostile %gs: a selector loaded into %gs (and
// wrgsbase) before every kind of kernel entry.
#include "base/layout.h"
#include "hostile_attacks.h"
#include "hostile_helpers.h"

namespace hostile {

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

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace hostile
