// hostile's attacks on where the kernel returns to or is entered from:
// forged rt_sigreturn frames, signal handlers at bad addresses, and
// `syscall` at the top of user space.
#include "base/layout.h"
#include "hostile_attacks.h"
#include "hostile_helpers.h"

extern "C" char hostile_landing_pad[];

namespace hostile {
namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace hostile

// Called by hostile_landing_pad (hostile_asm.S) after a forged rt_sigreturn.
extern "C" [[noreturn]] void hostile_landed(uint64_t rflags, uint64_t cs, uint64_t ss) {
  if ((cs & 0xffff) != hostile::g_orig_cs || (ss & 0xffff) != hostile::g_orig_ss) pvk::user::exit_group(3);  // privilege or mode forged
  if (rflags & (hostile::kIOPL | hostile::kVM)) pvk::user::exit_group(4);
  // Port I/O must still be refused: this must die of SIGSEGV.
  asm volatile("mov $0, %%al\n\toutb %%al, $0x80" : : : "rax");
  pvk::user::exit_group(5);
}

