/* FP and vector state of several processes kept apart. Four children pass
 * a token round a ring of pipes; each holds its own pattern in every
 * vector register (ymm where AVX is on) while it blocks reading the token
 * and while it yields, so the others run on the CPU meanwhile, and each
 * runs under its own rounding mode a computation it advances one step per
 * round. The parent prints what each child found and checks its result
 * against the same computation done without interruption. */
#include <fenv.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fp_work.h"
#include "vregs.h"

#define CHILDREN 4
#define ROUNDS 40

/* What a child sends back through its result pipe. */
struct report {
  int child;
  int bad_round;   /* the first round whose registers or mode changed, or -1 */
  int bad_reg;
  struct fp_acc acc;
};

static int ring[CHILDREN][2];
/* One pipe for every report: a write this small is atomic, and pvk gives
 * a process 16 descriptors. */
static int results[2];

/* A pattern of its own for every child and round. */
static uint32_t seed_of(int child, int round, int phase) { return (uint32_t)(child * 1000003 + round * 7 + phase); }

static void child(int me, int width) {
  struct report rep = {me, -1, -1, {0, 0}};
  fesetround(fp_modes[me]);
  fp_start(&rep.acc);
  for (int round = 0; round < ROUNDS; ++round) {
    struct vregs in, out;
    char token;
    /* Blocked in read until the child before passes the token: the
     * others run meanwhile. */
    vregs_fill(&in, seed_of(me, round, 0));
    long n = vregs_across_syscall(width, &in, &out, SYS_read, ring[me][0], (long)&token, 1);
    int bad = n == 1 ? vregs_first_difference(width, &in, &out) : VREGS_CALL_FAILED;
    if (bad < 0) {
      vregs_fill(&in, seed_of(me, round, 1));
      vregs_across_syscall(width, &in, &out, SYS_sched_yield, 0, 0, 0);
      bad = vregs_first_difference(width, &in, &out);
    }
    if (bad < 0 && fegetround() != fp_modes[me]) bad = VREGS_MODE_CHANGED;
    if (bad >= 0 && rep.bad_round < 0) rep.bad_round = round, rep.bad_reg = bad;
    fp_step(&rep.acc, round);
    if (write(ring[(me + 1) % CHILDREN][1], &token, 1) != 1) exit(2);
  }
  if (write(results[1], &rep, sizeof rep) != sizeof rep) exit(2);
  exit(0);
}

int main(void) {
  const int width = vregs_width();
  printf("fpu_procs: %d processes, %d rounds, %s registers\n", CHILDREN, ROUNDS, width == 32 ? "ymm" : "xmm");
  fflush(stdout); /* before fork: the children must not print it again */
  for (int i = 0; i < CHILDREN; ++i)
    if (pipe(ring[i])) return perror("pipe"), 1;
  if (pipe(results)) return perror("pipe"), 1;
  pid_t pids[CHILDREN];
  for (int i = 0; i < CHILDREN; ++i) {
    pids[i] = fork();
    if (pids[i] < 0) return perror("fork"), 1;
    if (pids[i] == 0) child(i, width);
  }
  if (write(ring[0][1], "t", 1) != 1) return perror("write"), 1;
  /* Reports come in the order the children finish: printed in theirs. */
  struct report reports[CHILDREN];
  int reported[CHILDREN] = {0};
  for (int i = 0; i < CHILDREN; ++i) {
    struct report rep;
    if (read(results[0], &rep, sizeof rep) != sizeof rep || rep.child < 0 || rep.child >= CHILDREN) break;
    reports[rep.child] = rep;
    reported[rep.child] = 1;
  }
  /* A child that died leaves the others blocked in the ring: end them. */
  for (int i = 0; i < CHILDREN; ++i)
    if (!reported[i])
      for (int j = 0; j < CHILDREN; ++j) kill(pids[j], SIGKILL);
  int failures = 0;
  for (int i = 0; i < CHILDREN; ++i) {
    const struct report rep = reports[i];
    int status;
    if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status) || !reported[i]) {
      printf("process %d: no report\n", i);
      ++failures;
      continue;
    }
    fesetround(fp_modes[i]);
    const struct fp_acc ref = fp_reference(ROUNDS);
    fesetround(FE_TONEAREST);
    const int same = fp_same(&rep.acc, &ref);
    printf("process %d (%s): registers %s, result %a (%.17g), long double %La: %s\n", i, fp_mode_name(fp_modes[i]),
           rep.bad_round < 0 ? "kept" : "CHANGED", rep.acc.d, rep.acc.d, rep.acc.ld,
           same ? "as computed without switches" : "DIFFERS from the uninterrupted computation");
    if (rep.bad_round >= 0) printf("  first change: round %d, %s\n", rep.bad_round, vregs_what_changed(rep.bad_reg));
    failures += rep.bad_round >= 0 || !same;
  }
  printf("fpu_procs: %s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
