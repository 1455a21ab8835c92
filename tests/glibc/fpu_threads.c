/* fpu_procs' check with glibc's threads instead of processes: four
 * pthreads of one process pass a token round a ring of pipes, each holding
 * its own vector registers across the blocking read and a yield, each
 * under its own rounding mode (the FP environment is per thread); the main
 * thread is the ring's fifth member, with registers of its own. It joins
 * the workers as soon as its last token comes, while the last of them is
 * still on its way out, so the join waits. pthread_create
 * is glibc's clone path (clone3, then clone with CLONE_VM | CLONE_SETTLS |
 * CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID ...), pthread_join waits on a
 * futex that the kernel clears and wakes at the thread's exit. */
#include <fenv.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fp_work.h"
#include "vregs.h"

#define THREADS 4
#define ROUNDS 40

struct worker {
  int me;
  int bad_round; /* the first round whose registers or mode changed, or -1 */
  int bad_reg;
  struct fp_acc acc;
};

static int width;
/* ring[i] is member i's way in; member THREADS is the main thread. */
static int ring[THREADS + 1][2];
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static int rounds_counted;

static uint32_t seed_of(int thread, int round, int phase) { return (uint32_t)(0x51000 + thread * 1000003 + round * 7 + phase); }

static void *work(void *arg) {
  struct worker *w = arg;
  fesetround(fp_modes[w->me]);
  fp_start(&w->acc);
  for (int round = 0; round < ROUNDS; ++round) {
    struct vregs in, out;
    char token;
    vregs_fill(&in, seed_of(w->me, round, 0));
    long n = vregs_across_syscall(width, &in, &out, SYS_read, ring[w->me][0], (long)&token, 1);
    int bad = n == 1 ? vregs_first_difference(width, &in, &out) : VREGS_CALL_FAILED;
    if (bad < 0) {
      vregs_fill(&in, seed_of(w->me, round, 1));
      vregs_across_syscall(width, &in, &out, SYS_sched_yield, 0, 0, 0);
      bad = vregs_first_difference(width, &in, &out);
    }
    if (bad < 0 && fegetround() != fp_modes[w->me]) bad = VREGS_MODE_CHANGED;
    if (bad >= 0 && w->bad_round < 0) w->bad_round = round, w->bad_reg = bad;
    fp_step(&w->acc, round);
    pthread_mutex_lock(&count_lock);
    ++rounds_counted;
    pthread_mutex_unlock(&count_lock);
    if (write(ring[w->me + 1][1], &token, 1) != 1) abort();
  }
  /* A pause before exiting, so that the main thread (woken by the last
   * token) reaches pthread_join while this thread is alive and has to
   * wait for it on the futex. The output is the same if it does not. */
  nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
  return w;
}

int main(void) {
  width = vregs_width();
  printf("fpu_threads: %d threads, %d rounds, %s registers\n", THREADS, ROUNDS, width == 32 ? "ymm" : "xmm");
  for (int i = 0; i <= THREADS; ++i)
    if (pipe(ring[i])) return perror("pipe"), 1;
  static struct worker workers[THREADS];
  pthread_t threads[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    workers[i] = (struct worker){i, -1, -1, {0, 0}};
    int e = pthread_create(&threads[i], NULL, work, &workers[i]);
    if (e) return printf("pthread_create: error %d\n", e), 1;
  }
  /* The main thread's turns in the ring, its own registers held while
   * the workers take theirs. */
  int main_bad = -1;
  for (int round = 0; round < ROUNDS; ++round) {
    char token = 't';
    if (write(ring[0][1], &token, 1) != 1) return perror("write"), 1;
    struct vregs in, out;
    vregs_fill(&in, seed_of(THREADS, round, 0));
    long n = vregs_across_syscall(width, &in, &out, SYS_read, ring[THREADS][0], (long)&token, 1);
    int bad = n == 1 ? vregs_first_difference(width, &in, &out) : VREGS_CALL_FAILED;
    if (bad >= 0 && main_bad < 0) main_bad = bad;
  }
  int failures = 0;
  for (int i = 0; i < THREADS; ++i) {
    void *ret;
    int e = pthread_join(threads[i], &ret);
    if (e || ret != &workers[i]) {
      printf("thread %d: join failed (%d)\n", i, e);
      ++failures;
      continue;
    }
    const struct worker *w = &workers[i];
    fesetround(fp_modes[i]);
    const struct fp_acc ref = fp_reference(ROUNDS);
    fesetround(FE_TONEAREST);
    const int same = fp_same(&w->acc, &ref);
    printf("thread %d (%s): registers %s, result %a (%.17g), long double %La: %s\n", i, fp_mode_name(fp_modes[i]),
           w->bad_round < 0 ? "kept" : "CHANGED", w->acc.d, w->acc.d, w->acc.ld,
           same ? "as computed without switches" : "DIFFERS from the uninterrupted computation");
    if (w->bad_round >= 0) printf("  first change: round %d, %s\n", w->bad_round, vregs_what_changed(w->bad_reg));
    failures += w->bad_round >= 0 || !same;
  }
  printf("main thread: registers %s while waiting\n", main_bad < 0 ? "kept" : vregs_what_changed(main_bad));
  printf("rounds counted under the mutex: %d of %d\n", rounds_counted, THREADS * ROUNDS);
  failures += main_bad >= 0 || rounds_counted != THREADS * ROUNDS;
  printf("fpu_threads: %s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
