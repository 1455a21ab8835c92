/* FP state across signal handlers that use FP themselves. The interrupted
 * code holds a pattern in every vector register and its own rounding mode
 * across the system call that lets the signal in; the handler must start
 * from the clean FP state (as Linux gives it), finds the interrupted
 * registers in its frame's FP image, computes with doubles under another
 * rounding mode, holds registers of its own across a nested signal whose
 * handler clobbers every register, and edits one register in the frame.
 * After sigreturn the interrupted code must see its own registers (with
 * the edit) and its own rounding mode. Twice: a signal sent to itself, and
 * one sent by a child while the parent waits in rt_sigsuspend. */
#define _GNU_SOURCE
#include <fenv.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "fp_work.h"
#include "vregs.h"

static int width;

/* What the interrupted code holds, so the handler can look for it in the
 * frame; and the value the handler writes over xmm15's image. */
static struct vregs interrupted;
static const uint8_t edited_xmm15[16] = {0xfe, 0xed, 0xfa, 0xce, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

/* What the handlers saw, printed by main. */
static struct {
  unsigned entry_mxcsr;
  unsigned short entry_fpu_cw;
  unsigned frame_mxcsr;
  int frame_has_registers;
  int kept_across_nested; /* the first change, or -1 */
  double result;
} seen;
static int nested_runs;

static unsigned get_mxcsr(void) {
  unsigned v;
  __asm__ volatile("stmxcsr %0" : "=m"(v));
  return v;
}

static unsigned short get_fpu_cw(void) {
  unsigned short v;
  __asm__ volatile("fnstcw %0" : "=m"(v));
  return v;
}

/* The nested handler: other values in every register, another mode. */
static void on_usr2(int sig) {
  (void)sig;
  struct vregs junk, out;
  vregs_fill(&junk, 0xbad0000u + (unsigned)nested_runs);
  fesetround(FE_TOWARDZERO);
  vregs_across_syscall(width, &junk, &out, SYS_sched_yield, 0, 0, 0);
  volatile struct fp_acc scratch = fp_reference(10);
  (void)scratch;
  ++nested_runs;
}

static void on_usr1(int sig, siginfo_t *info, void *context) {
  (void)sig, (void)info;
  seen.entry_mxcsr = get_mxcsr();
  seen.entry_fpu_cw = get_fpu_cw();
  ucontext_t *uc = context;
  fpregset_t fp = uc->uc_mcontext.fpregs;
  seen.frame_mxcsr = fp->mxcsr;
  /* The legacy area holds the low 16 bytes of each register. */
  seen.frame_has_registers = 1;
  for (int r = 0; r < VREGS_COUNT; ++r)
    if (memcmp(&fp->_xmm[r], interrupted.reg[r], 16)) seen.frame_has_registers = 0;
  memcpy(&fp->_xmm[15], edited_xmm15, 16);

  fesetround(FE_UPWARD);
  struct vregs mine, out;
  vregs_fill(&mine, 0x5160001u);
  long r = vregs_across_syscall(width, &mine, &out, SYS_kill, getpid(), SIGUSR2, 0);
  seen.kept_across_nested = r ? VREGS_CALL_FAILED : vregs_first_difference(width, &mine, &out);
  if (seen.kept_across_nested < 0 && fegetround() != FE_UPWARD) seen.kept_across_nested = VREGS_MODE_CHANGED;
  seen.result = fp_reference(25).d;
}

/* The interrupted side's check: every register as loaded, but xmm15's low
 * half as the handler edited it; the rounding mode as it was. */
static int check_after(const struct vregs *out, int mode) {
  struct vregs want = interrupted;
  memcpy(want.reg[15], edited_xmm15, 16);
  int bad = vregs_first_difference(width, &want, out);
  if (bad < 0 && fegetround() != mode) bad = VREGS_MODE_CHANGED;
  return bad;
}

static int report(const char *how, long ret, long want_ret, const struct vregs *out, int mode, struct fp_acc *acc) {
  const int bad = ret == want_ret ? check_after(out, mode) : VREGS_CALL_FAILED;
  fp_step(acc, 1);
  fesetround(FE_TONEAREST);
  printf("%s:\n", how);
  printf("  handler started with MXCSR %#x, x87 control word %#x\n", seen.entry_mxcsr, seen.entry_fpu_cw);
  /* MXCSR's control bits: its exception flags are sticky records of
   * earlier arithmetic, not part of what is checked here. */
  printf("  frame: MXCSR controls %#x, registers %s\n", seen.frame_mxcsr & ~0x3fu, seen.frame_has_registers ? "found" : "NOT FOUND");
  printf("  handler's registers across a nested signal: %s\n",
         seen.kept_across_nested < 0 ? "kept" : vregs_what_changed(seen.kept_across_nested));
  printf("  handler's result %a (%.17g)\n", seen.result, seen.result);
  printf("  interrupted code: %s\n", bad < 0 ? "registers and rounding mode kept, xmm15 as edited" : vregs_what_changed(bad));
  fesetround(mode);
  struct fp_acc ref;
  fp_start(&ref);
  fp_step(&ref, 0);
  fp_step(&ref, 1);
  fesetround(FE_TONEAREST);
  const int same = fp_same(acc, &ref);
  printf("  interrupted computation %a: %s\n", acc->d, same ? "as without the signal" : "DIFFERS");
  /* glibc's FE_* values are the x87 control word's rounding bits; MXCSR
   * holds the same two bits three places higher. */
  const int frame_mode_ok = (seen.frame_mxcsr & 0x6000u) == (unsigned)mode << 3;
  return bad >= 0 || !same || !frame_mode_ok || seen.entry_mxcsr != 0x1f80 || seen.entry_fpu_cw != 0x37f ||
         !seen.frame_has_registers || seen.kept_across_nested >= 0;
}

int main(void) {
  width = vregs_width();
  printf("fpu_signal: %s registers\n", width == 32 ? "ymm" : "xmm");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_usr1;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGUSR1, &sa, NULL);
  sa.sa_flags = 0;
  sa.sa_handler = on_usr2;
  sigaction(SIGUSR2, &sa, NULL);
  int failures = 0;

  /* A signal to itself, delivered as the kill call returns. */
  fesetround(FE_DOWNWARD);
  struct fp_acc acc;
  fp_start(&acc);
  fp_step(&acc, 0);
  vregs_fill(&interrupted, 0x1001u);
  struct vregs out;
  long r = vregs_across_syscall(width, &interrupted, &out, SYS_kill, getpid(), SIGUSR1, 0);
  failures += report("a signal sent to itself", r, 0, &out, FE_DOWNWARD, &acc);

  /* A signal from a child, while this process sleeps in rt_sigsuspend
   * (SIGUSR1 blocked until then, so it can only arrive there). */
  sigset_t block, none;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigemptyset(&none);
  sigprocmask(SIG_BLOCK, &block, NULL);
  fflush(stdout);
  const pid_t child = fork();
  if (child < 0) return perror("fork"), 1;
  if (child == 0) {
    struct vregs own, own_out;
    vregs_fill(&own, 0xc41du);
    vregs_across_syscall(width, &own, &own_out, SYS_sched_yield, 0, 0, 0);
    kill(getppid(), SIGUSR1);
    _exit(vregs_first_difference(width, &own, &own_out) >= 0);
  }
  fesetround(FE_UPWARD);
  fp_start(&acc);
  fp_step(&acc, 0);
  memset(&seen, 0, sizeof seen);
  vregs_fill(&interrupted, 0x2002u);
  r = vregs_across_syscall(width, &interrupted, &out, SYS_rt_sigsuspend, (long)&none, 8, 0);
  failures += report("a signal from a child during rt_sigsuspend", r, -4 /* EINTR */, &out, FE_UPWARD, &acc);
  int status;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
    printf("the child's own registers changed\n");
    ++failures;
  }
  printf("nested handler ran %d times\n", nested_runs);
  printf("fpu_signal: %s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
