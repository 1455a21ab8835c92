// FP/SIMD state across context switches, signals, fork and exec, and
// forged FP images in rt_sigreturn frames. Every test holds distinct
// values in the vector registers (ymm0..15 where AVX is enabled, else
// xmm0..15) across a system call or a spin the timer preempts
// (fpu_regs.S), so only the kernel can have changed them.
#include "bench/libc/thread.h"
#include "harness.h"

extern "C" int64_t fpu_regs_syscall_avx(const void* in, void* out, uint64_t spin, int64_t nr, uint64_t a1,
                                        uint64_t a2);
extern "C" int64_t fpu_regs_syscall_sse(const void* in, void* out, uint64_t spin, int64_t nr, uint64_t a1,
                                        uint64_t a2);

namespace proctest {
namespace {

constexpr uint64_t kSaSiginfo = 4;
constexpr uint32_t kMxcsrDefault = 0x1f80;
constexpr uint32_t kFpXstateMagic1 = 0x46505853, kFpXstateMagic2 = 0x46505845;
constexpr unsigned kRegBytes = 16 * 32;

bool avx_enabled() {
  uint32_t a, b, c, d;
  asm volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
  if (!(c & (1u << 27)) || !(c & (1u << 28))) return false;  // OSXSAVE, AVX
  uint32_t lo, hi;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 6) == 6;
}

struct alignas(32) Regs {
  uint8_t b[kRegBytes];
};

// The registers' bytes this call covers.
unsigned reg_bytes(bool avx) { return avx ? 16 * 32 : 16 * 16; }

int64_t regs_call(bool avx, const Regs& in, Regs& out, uint64_t spin, int64_t nr, uint64_t a1 = 0, uint64_t a2 = 0) {
  return avx ? fpu_regs_syscall_avx(in.b, out.b, spin, nr, a1, a2) : fpu_regs_syscall_sse(in.b, out.b, spin, nr, a1, a2);
}

void fill(Regs& r, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (unsigned i = 0; i < kRegBytes; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    r.b[i] = static_cast<uint8_t>(x);
  }
}

bool same(const Regs& a, const Regs& b, bool avx) { return memcmp(a.b, b.b, reg_bytes(avx)) == 0; }

uint32_t get_mxcsr() {
  uint32_t v;
  asm volatile("stmxcsr %0" : "=m"(v));
  return v;
}
void set_mxcsr(uint32_t v) { asm volatile("ldmxcsr %0" : : "m"(v)); }

// A handler that uses FP itself: other values in every vector register,
// another MXCSR, and a check that it started from the clean state.
volatile int g_handler_runs = 0;
volatile int g_handler_bad_mxcsr = 0;
void clobbering_handler(int) {
  if (get_mxcsr() != kMxcsrDefault) g_handler_bad_mxcsr = g_handler_bad_mxcsr + 1;
  Regs junk, out;
  fill(junk, 0xdead0000u + static_cast<unsigned>(g_handler_runs));
  set_mxcsr(0x7f80);  // round toward zero
  regs_call(avx_enabled(), junk, out, 0, -1);
  volatile double x = 1.0;
  for (int i = 0; i < 8; ++i) x = x * 1.5 + 0.25;
  g_handler_runs = g_handler_runs + 1;
}

// One context's work: its own registers and MXCSR held across yields,
// short sleeps and getpid calls (where signals are delivered), with
// spins between that the tick preempts. Returns how many checks failed.
int hold_registers(uint64_t seed, unsigned rounds) {
  const bool avx = avx_enabled();
  const uint32_t mxcsr = 0x1f80 | ((seed & 3) << 13) | ((seed & 4) ? 0x8000 : 0);  // rounding mode, FZ
  set_mxcsr(mxcsr);
  Regs in, out;
  int bad = 0;
  for (unsigned i = 0; i < rounds; ++i) {
    fill(in, seed * 1000 + i);
    pvk::abi::Timespec ts{0, 200000};
    const unsigned op = i % 3;
    if (op == 0) regs_call(avx, in, out, 20000, SYS_sched_yield);
    else if (op == 1) regs_call(avx, in, out, 2000, SYS_nanosleep, reinterpret_cast<uint64_t>(&ts), 0);
    else regs_call(avx, in, out, 20000, SYS_getpid);
    if (!same(in, out, avx)) ++bad;
    if (get_mxcsr() != mxcsr) ++bad;
  }
  return bad;
}

struct WorkerThread {
  uint64_t seed;
  volatile int bad;
};

void worker_thread(void* arg) {
  auto* w = static_cast<WorkerThread*>(arg);
  w->bad = hold_registers(w->seed, 150);
}

}  // namespace

// Several processes, each of two threads, each with its own vector
// registers and MXCSR, switched among each other (one CPU or two) and
// interrupted by signals whose handler uses FP.
void test_fpu_switch() {
  constexpr int kWorkers = 3;
  detail("avx", avx_enabled() ? 1 : 0);
  int64_t pids[kWorkers];
  CHECK_EQ(sigaction(SIGUSR1, clobbering_handler), 0);  // before the workers exist: inherited
  for (int w = 0; w < kWorkers; ++w) {
    pids[w] = fork_helper();
    CHECK(pids[w] >= 0);
    if (pids[w] == 0) {
      WorkerThread other{static_cast<uint64_t>(w) * 2 + 101, 0};
      Thread t;
      CHECK(thread_create(&t, worker_thread, &other) > 0);
      const int bad = hold_registers(static_cast<uint64_t>(w) * 2 + 100, 150);
      CHECK_EQ(thread_join(&t), 0);
      CHECK_EQ(bad, 0);
      CHECK_EQ(other.bad, 0);
      CHECK_EQ(g_handler_bad_mxcsr, 0);
      helper_exit();
    }
  }
  // Signals while they run; each worker ends on its own.
  int alive = kWorkers, signals = 0;
  int status[kWorkers];
  bool done[kWorkers] = {};
  const uint64_t t0 = now_ns();
  while (alive > 0 && now_ns() - t0 < 120ull * 1000000000ull) {
    for (int w = 0; w < kWorkers; ++w) {
      if (done[w]) continue;
      if (wait4(pids[w], &status[w], WNOHANG) == pids[w]) {
        done[w] = true, --alive;
        continue;
      }
      if (kill(pids[w], SIGUSR1) == 0) ++signals;
    }
    pvk::abi::Timespec ts{0, 1000000};
    nanosleep(&ts, nullptr);
  }
  for (int w = 0; w < kWorkers; ++w) {
    if (!done[w]) {
      kill(pids[w], SIGKILL);
      status[w] = wait_for(pids[w]);
    }
    CHECK_EQ(status[w], wait_exited(0));
  }
  detail("signals", signals);
}

namespace {

Regs g_sig_in, g_sig_new;
volatile int g_frame_checks_failed = 0;
volatile uint64_t g_frame_flags = 0;
bool g_avx;

// Reads the interrupted registers out of the signal frame's FP image (the
// Linux layout), and rewrites xmm1 there: rt_sigreturn must restore it.
void frame_handler(int sig, void* info, void* ucv) {
  auto* uc = static_cast<uint8_t*>(ucv);
  uint64_t flags, fpstate;
  memcpy(&flags, uc, 8);
  memcpy(&fpstate, uc + 40 + 23 * 8, 8);  // uc_mcontext.fpstate
  g_frame_flags = flags;
  int bad = 0;  // bits: what was wrong
  if (get_mxcsr() != kMxcsrDefault) bad |= 1;
  if (!fpstate || (fpstate & 63)) bad |= 2;
  if (fpstate && !(fpstate & 63)) {
    auto* fp = reinterpret_cast<uint8_t*>(fpstate);
    // xmm0..15 at 160 (the FXSAVE layout), 16 bytes each.
    for (unsigned r = 0; r < 16; ++r)
      if (memcmp(fp + 160 + 16 * r, g_sig_in.b + (g_avx ? 32 : 16) * r, 16) != 0) bad |= 4;
    if (flags & 1) {  // UC_FP_XSTATE: magic1 in the software bytes, magic2 after xstate_size
      uint32_t magic1, xstate_size, magic2;
      memcpy(&magic1, fp + 464, 4);
      memcpy(&xstate_size, fp + 464 + 16, 4);
      memcpy(&magic2, fp + xstate_size, 4);
      if (magic1 != kFpXstateMagic1 || magic2 != kFpXstateMagic2) bad |= 8;
    }
    memcpy(fp + 160 + 16, g_sig_new.b, 16);  // xmm1 changed for the return
  }
  Regs junk, out;
  fill(junk, 0x5151);
  regs_call(g_avx, junk, out, 0, -1);
  g_frame_checks_failed = bad;
  (void)sig, (void)info;
}

}  // namespace

// A handler running FP code returns to FP code whose registers are intact,
// except what it changed in the frame's FP image.
void test_fpu_signal() {
  g_avx = avx_enabled();
  CHECK_EQ(sigaction(SIGUSR1, reinterpret_cast<uint64_t>(&frame_handler), kSaSiginfo), 0);
  set_mxcsr(0x3f80);  // round down: the handler must not see it
  for (int round = 0; round < 20; ++round) {
    fill(g_sig_in, 77 + round);
    fill(g_sig_new, 99 + round);
    Regs out;
    g_frame_checks_failed = -1;
    regs_call(g_avx, g_sig_in, out, 1000, SYS_kill, static_cast<uint64_t>(getpid()), SIGUSR1);
    CHECK_EQ(g_frame_checks_failed, 0);
    Regs want = g_sig_in;
    memcpy(want.b + (g_avx ? 32 : 16), g_sig_new.b, 16);  // xmm1 as the handler left it (ymm1's upper half kept)
    CHECK(same(want, out, g_avx));
    CHECK_EQ(get_mxcsr(), 0x3f80u);
  }
  detail("uc_flags", static_cast<int64_t>(g_frame_flags));
  set_mxcsr(kMxcsrDefault);
}

// fork: the child starts with the parent's registers at the fork.
void test_fpu_fork() {
  const bool avx = avx_enabled();
  set_mxcsr(0x5f80);
  Regs in, out;
  fill(in, 4242);
  const int64_t pid = regs_call(avx, in, out, 0, SYS_fork);
  CHECK(pid >= 0);
  CHECK(same(in, out, avx));
  CHECK_EQ(get_mxcsr(), 0x5f80u);
  if (pid == 0) {
    // The child's state is its own from here on.
    Regs in2, out2;
    fill(in2, 1);
    regs_call(avx, in2, out2, 50000, SYS_sched_yield);
    CHECK(same(in2, out2, avx));
    exit_group(failures() ? 1 : 0);
  }
  // Meanwhile, the parent's registers are the parent's.
  Regs in3, out3;
  fill(in3, 2);
  regs_call(avx, in3, out3, 50000, SYS_sched_yield);
  CHECK(same(in3, out3, avx));
  if (pid > 0) CHECK_EQ(wait_for(pid), wait_exited(0));
  set_mxcsr(kMxcsrDefault);
}

// exec: the new program starts from the clean state (fpuchild checks it).
void test_fpu_exec() {
  const int64_t pid = fork_helper();
  CHECK(pid >= 0);
  if (pid == 0) {
    set_mxcsr(0x7f80);
    uint16_t fcw = 0x27f;
    asm volatile("fldcw %0" : : "m"(fcw));
    Regs in, out;
    fill(in, 31337);
    regs_call(avx_enabled(), in, out, 0, -1);  // leaves them non-zero
    const char* argv[] = {"fpuchild", nullptr};
    const char* envp[] = {nullptr};
    execve("fpuchild", argv, envp);
    CHECK(false);  // execve failed
    helper_exit();
  }
  if (pid > 0) CHECK_EQ(wait_for(pid), wait_exited(0));
}

namespace {

alignas(64) uint8_t g_real_image[4096 + 64];
volatile uint64_t g_real_size = 0;
volatile uint64_t g_real_flags = 0;
alignas(64) uint8_t g_forged_image[4096 + 128];
alignas(16) uint8_t g_forge_stack[16384];
uint64_t g_forge_uc[64];

void capture_handler(int, void*, void* ucv) {
  auto* uc = static_cast<uint8_t*>(ucv);
  uint64_t flags, fpstate;
  memcpy(&flags, uc, 8);
  memcpy(&fpstate, uc + 40 + 23 * 8, 8);
  g_real_flags = flags;
  uint64_t size = 512;
  if (flags & 1) {
    uint32_t ext;
    memcpy(&ext, reinterpret_cast<uint8_t*>(fpstate) + 464 + 4, 4);
    size = ext;
  }
  if (size > 4096) size = 4096;
  memcpy(g_real_image, reinterpret_cast<void*>(fpstate), size);
  g_real_size = size;
}

[[noreturn]] void forge_landing() { exit_group(42); }

enum Forge { kNoImage, kRealImage, kMxcsrReserved, kXstateBvBad, kXcompBv, kMisaligned, kKernelPointer, kNonCanonical, kUnmapped };

[[noreturn]] void sigreturn_forged(uint64_t which) {
  uint16_t cs, ss;
  asm volatile("mov %%cs, %0\n\tmov %%ss, %1" : "=r"(cs), "=r"(ss));
  memset(g_forge_uc, 0, sizeof g_forge_uc);
  uint8_t* img = g_forged_image;
  memcpy(img, g_real_image, g_real_size);
  uint64_t fpstate = reinterpret_cast<uint64_t>(img);
  switch (which) {
    case kNoImage: fpstate = 0; break;
    case kRealImage: break;
    case kMxcsrReserved: img[24 + 3] |= 0x80; break;  // MXCSR bit 31: reserved on every CPU
    case kXstateBvBad: img[512 + 7] |= 0x80; break;   // XSTATE_BV bit 63
    case kXcompBv: img[520] |= 1; break;              // XCOMP_BV in a standard-format image
    case kMisaligned:
      memmove(img + 16, img, g_real_size);
      fpstate += 16;
      break;
    case kKernelPointer: fpstate = 0xffff800000000000ull; break;
    case kNonCanonical: fpstate = 0x0000800000000000ull; break;
    case kUnmapped: fpstate = 0x1000; break;
  }
  g_forge_uc[0] = g_real_flags;                                                    // uc_flags
  g_forge_uc[5 + 15] = reinterpret_cast<uint64_t>(g_forge_stack + sizeof g_forge_stack - 8);  // rsp
  g_forge_uc[5 + 16] = reinterpret_cast<uint64_t>(&forge_landing);               // rip
  g_forge_uc[5 + 17] = 0x202;                                                     // eflags
  g_forge_uc[5 + 18] = uint64_t{cs} | (uint64_t{ss} << 48);                       // cs, gs, fs, ss
  g_forge_uc[5 + 23] = fpstate;
  asm volatile("mov %0, %%rsp\n\tmov $15, %%eax\n\tsyscall\n\tud2" : : "r"(g_forge_uc) : "memory");
  __builtin_unreachable();
}

}  // namespace

// rt_sigreturn with forged FP images: the real one and none land; reserved
// MXCSR bits, a bad XSTATE_BV or XCOMP_BV, a misaligned pointer and one
// outside user space each end in SIGSEGV, never in a kernel fault.
void test_fpu_sigreturn_forged() {
  CHECK_EQ(sigaction(SIGUSR1, reinterpret_cast<uint64_t>(&capture_handler), kSaSiginfo), 0);
  kill(getpid(), SIGUSR1);
  CHECK(g_real_size >= 512);
  const bool xsave = (g_real_flags & 1) != 0;
  detail("image_bytes", static_cast<int64_t>(g_real_size));
  struct Case {
    Forge forge;
    bool lands;
    bool needs_xsave;
  };
  const Case cases[] = {
      {kNoImage, true, false},      {kRealImage, true, false},     {kMxcsrReserved, false, false},
      {kXstateBvBad, false, true},  {kXcompBv, false, true},       {kMisaligned, false, false},
      {kKernelPointer, false, false}, {kNonCanonical, false, false}, {kUnmapped, false, false},
  };
  for (const Case& c : cases) {
    if (c.needs_xsave && !xsave) continue;
    const int64_t pid = fork();
    if (pid == 0) sigreturn_forged(c.forge);
    CHECK(pid > 0);
    const int st = wait_for(pid);
    if (c.lands) {
      CHECK_EQ(st, wait_exited(42));
    } else {
      CHECK_KILLED_BY(st, SIGSEGV);
    }
  }
}

}  // namespace proctest
