// mprotect_segv, sigfpe, unhandled_signals, kill_handler.
#include "harness.h"

namespace proctest {
namespace {

// Opaque to the compiler, so the division below is a real one.
volatile uint64_t g_zero = 0;

uint64_t divide(uint64_t a, uint64_t b) {
  uint64_t q;
  asm volatile("xor %%edx, %%edx\n\tdivq %2" : "=a"(q) : "a"(a), "r"(b) : "rdx", "cc");
  return q;
}

// --- mprotect_segv ---------------------------------------------------------

volatile uint64_t* g_prot_page;
volatile int g_segv_count;
volatile int g_segv_sig;

void unprotect_handler(int sig) {
  g_segv_count = g_segv_count + 1;
  g_segv_sig = sig;
  mprotect(const_cast<uint64_t*>(g_prot_page), kPage, PROT_READ | PROT_WRITE);
}

JmpBuf g_segv_jmp;
void escape_handler(int sig) {
  g_segv_count = g_segv_count + 1;
  g_segv_sig = sig;
  pvk_longjmp(&g_segv_jmp, 1);
}

void write_read_only(void* arg) { poke(reinterpret_cast<uint64_t>(arg)); }

}  // namespace

// lmbench's protection fault: a write to a page mprotect'ed read-only raises
// SIGSEGV; the handler makes the page writable and returns; the write then
// completes. Ten times, each exactly one handler run. Then mprotect splits a
// region (the neighbours stay writable), PROT_NONE faults reads too, a
// handler can escape the fault with longjmp, and without a handler the
// process dies of SIGSEGV.
void test_mprotect_segv() {
  constexpr unsigned kWords = kPage / 8;
  auto* region = static_cast<uint64_t*>(map_anon(3 * kPage));
  CHECK(region != nullptr);
  if (!region) return;
  for (unsigned i = 0; i < 3 * kWords; ++i) region[i] = i;
  volatile uint64_t* mid = region + kWords;
  g_prot_page = mid;
  CHECK_EQ(mprotect(region + kWords, kPage, PROT_READ), 0);
  CHECK_EQ(mid[7], kWords + 7);  // still readable
  // The neighbours of the read-only page are still writable.
  region[5] = 500;
  region[2 * kWords + 5] = 501;
  CHECK_EQ(region[5], 500);
  CHECK_EQ(region[2 * kWords + 5], 501);

  CHECK_EQ(sigaction(SIGSEGV, unprotect_handler), 0);
  constexpr int kRounds = 10;
  for (int i = 0; i < kRounds; ++i) {
    if (i > 0) CHECK_EQ(mprotect(region + kWords, kPage, PROT_READ), 0);
    const int before = g_segv_count;
    mid[5] = 1000 + i;  // faults, the handler unprotects, the store is retried
    CHECK_EQ(g_segv_count, before + 1);
    CHECK_EQ(mid[5], 1000 + i);
  }
  CHECK_EQ(g_segv_sig, SIGSEGV);
  mid[6] = 6;  // writable now: no fault
  CHECK_EQ(g_segv_count, kRounds);

  // PROT_NONE: even a read faults; the handler restores access.
  CHECK_EQ(mprotect(region + kWords, kPage, PROT_NONE), 0);
  const uint64_t v = mid[5];
  CHECK_EQ(v, 1000 + kRounds - 1);
  CHECK_EQ(g_segv_count, kRounds + 1);

  // Escaping the fault: the handler longjmps out, three times (SA_NODEFER:
  // see test_sigfpe).
  CHECK_EQ(sigaction(SIGSEGV, escape_handler, kSaNodefer), 0);
  CHECK_EQ(mprotect(region + kWords, kPage, PROT_READ), 0);
  volatile int escaped = 0;
  for (int i = 0; i < 3; ++i) {
    if (pvk_setjmp(&g_segv_jmp) == 0) {
      mid[9] = 9;
      CHECK(!"the write to a read-only page completed");
    } else {
      escaped = escaped + 1;
    }
  }
  CHECK_EQ(escaped, 3);
  CHECK_EQ(g_segv_count, kRounds + 4);
  CHECK_EQ(mid[9], kWords + 9);  // the write never happened

  // No handler: death by SIGSEGV (checked in a helper).
  CHECK_EQ(sigaction(SIGSEGV, SIG_DFL), 0);
  const int st = wait_status_of(write_read_only, const_cast<uint64_t*>(mid));
  CHECK_KILLED_BY(st, SIGSEGV);

  detail("handled_faults", g_segv_count);
  CHECK_EQ(munmap(region, 3 * kPage), 0);
}

// --- sigfpe -----------------------------------------------------------------

namespace {
JmpBuf g_fpe_jmp;
volatile int g_fpe_count;
volatile int g_fpe_sig;
void fpe_handler(int sig) {
  g_fpe_count = g_fpe_count + 1;
  g_fpe_sig = sig;
  pvk_longjmp(&g_fpe_jmp, 1);
}
}  // namespace

// A SIGFPE handler longjmps out of a division by zero; five times in a row,
// and the process carries on. The handler is installed with SA_NODEFER (as
// on Linux): a handler that longjmps never reaches rt_sigreturn, so without
// it SIGFPE would stay blocked and the next division would kill.
void test_sigfpe() {
  CHECK_EQ(sigaction(SIGFPE, fpe_handler, kSaNodefer), 0);
  constexpr int kRounds = 5;
  volatile int escaped = 0;
  for (int i = 0; i < kRounds; ++i) {
    if (pvk_setjmp(&g_fpe_jmp) == 0) {
      volatile uint64_t q = divide(10, g_zero);
      (void)q;
      CHECK(!"division by zero returned");
    } else {
      escaped = escaped + 1;
      CHECK_EQ(g_fpe_count, i + 1);
    }
  }
  CHECK_EQ(escaped, kRounds);
  CHECK_EQ(g_fpe_count, kRounds);
  CHECK_EQ(g_fpe_sig, SIGFPE);
  // Division works, with no handler run.
  CHECK_EQ(divide(100, 7), 14);
  CHECK_EQ(g_fpe_count, kRounds);
  // And system calls still work after escaping handlers.
  CHECK(getpid() > 0);
  CHECK_EQ(sigaction(SIGFPE, SIG_DFL), 0);
  detail("handled", g_fpe_count);
}

// --- unhandled_signals --------------------------------------------------------

namespace {
void null_write(void*) { poke(0); }
void null_read(void*) { peek(0); }
void divide_by_zero(void*) {
  volatile uint64_t q = divide(1, g_zero);
  (void)q;
}
void exit_42(void*) { exit(42); }
void exit_group_7(void*) { exit_group(7); }
}  // namespace

// Default actions, seen by the parent's wait4: a write or read of NULL kills
// with SIGSEGV, division by zero with SIGFPE; SIGKILL kills a child blocked
// in read on an empty pipe, SIGTERM a child that is running (yielding);
// exit(42) and exit_group(7) are WIFEXITED with that code.
void test_unhandled_signals() {
  int st = wait_status_of(null_write, nullptr);
  CHECK(WIFSIGNALED(st));
  CHECK_KILLED_BY(st, SIGSEGV);
  detail("null_write_status", st);
  st = wait_status_of(null_read, nullptr);
  CHECK_KILLED_BY(st, SIGSEGV);
  st = wait_status_of(divide_by_zero, nullptr);
  CHECK(WIFSIGNALED(st));
  CHECK_KILLED_BY(st, SIGFPE);
  detail("divide_status", st);

  st = wait_status_of(exit_42, nullptr);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 42);
  CHECK_EQ(st, wait_exited(42));
  st = wait_status_of(exit_group_7, nullptr);
  CHECK_EQ(st, wait_exited(7));

  // SIGKILL of a child blocked in read.
  int data[2], ready[2];
  CHECK_EQ(pipe(data), 0);
  CHECK_EQ(pipe(ready), 0);
  int64_t pid = fork_helper();
  if (pid == 0) {
    close(ready[0]);
    send_byte(ready[1], 'r');
    char c;
    read(data[0], &c, 1);  // nobody ever writes
    exit_group(3);
  }
  CHECK(pid > 0);
  CHECK_EQ(recv_byte(ready[0]), 'r');
  for (int i = 0; i < 20; ++i) sched_yield();  // let it reach read()
  CHECK_EQ(kill(pid, SIGKILL), 0);
  st = wait_for(pid);
  CHECK(WIFSIGNALED(st));
  CHECK_EQ(WTERMSIG(st), SIGKILL);
  CHECK_EQ(st, wait_signaled(SIGKILL));
  detail("sigkill_status", st);

  // SIGTERM of a running child.
  pid = fork_helper();
  if (pid == 0) {
    send_byte(ready[1], 'r');
    for (;;) sched_yield();
  }
  CHECK(pid > 0);
  CHECK_EQ(recv_byte(ready[0]), 'r');
  CHECK_EQ(kill(pid, SIGTERM), 0);
  st = WAIT_OR_KILL(pid, 5);
  CHECK_EQ(st, wait_signaled(SIGTERM));

  // A child spinning without system calls still dies (the signal is taken
  // at the next return to user mode, e.g. after a timer interrupt).
  pid = fork_helper();
  if (pid == 0) {
    send_byte(ready[1], 'r');
    for (;;) asm volatile("pause" ::: "memory");
  }
  CHECK(pid > 0);
  CHECK_EQ(recv_byte(ready[0]), 'r');
  CHECK_EQ(kill(pid, SIGKILL), 0);
  st = wait_for(pid);
  CHECK_EQ(st, wait_signaled(SIGKILL));

  const int fds[] = {data[0], data[1], ready[0], ready[1]};
  for (int fd : fds) CHECK_EQ(close(fd), 0);
}

// --- kill_handler -------------------------------------------------------------

namespace {
volatile int g_usr1_count;
volatile int g_usr1_sig;
void usr1_handler(int sig) {
  g_usr1_count = g_usr1_count + 1;
  g_usr1_sig = sig;
}

// Waits (yielding) until cond() or about five seconds passed.
template <typename F>
bool wait_until(F cond) {
  const uint64_t t0 = now_ns();
  while (!cond()) {
    if (now_ns() - t0 > 5000000000ull) return false;
    sched_yield();
  }
  return true;
}
}  // namespace

// Signals with handlers: kill() to self runs the handler before kill
// returns; kill() from another process reaches a running child's handler;
// a blocking read is interrupted with -EINTR after the handler ran; SIG_IGN
// discards the signal; with SIG_DFL, SIGUSR1 kills.
void test_kill_handler() {
  CHECK_EQ(sigaction(SIGUSR1, usr1_handler), 0);
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);
  CHECK_EQ(g_usr1_count, 1);  // delivered on the way out of kill()
  CHECK_EQ(g_usr1_sig, SIGUSR1);
  KernelSigaction old{};
  CHECK_EQ(rt_sigaction(SIGUSR1, nullptr, &old), 0);  // query
  CHECK_EQ(old.handler, reinterpret_cast<uint64_t>(&usr1_handler));
  CHECK(old.flags & SA_RESTORER);
  g_usr1_count = 0;

  int ready[2], data[2];
  CHECK_EQ(pipe(ready), 0);
  CHECK_EQ(pipe(data), 0);
  int st = 0;

  // A running child's handler (inherited across fork).
  int64_t pid = fork_helper();
  if (pid == 0) {
    send_byte(ready[1], 'r');
    CHECK(wait_until([] { return g_usr1_count > 0; }));
    CHECK_EQ(g_usr1_count, 1);
    CHECK_EQ(g_usr1_sig, SIGUSR1);
    helper_exit();
  }
  CHECK(pid > 0);
  if (pid <= 0) return;  // (a failed fork) nobody would answer: the waits below would hang
  CHECK_EQ(recv_byte(ready[0]), 'r');
  CHECK_EQ(kill(pid, SIGUSR1), 0);
  st = WAIT_OR_KILL(pid, 10);
  CHECK_EQ(st, wait_exited(0));

  // A child blocked in read: the handler runs, read returns -EINTR. If the
  // signal lands before the child blocks, the handler runs but read still
  // blocks, so send it again (every 100 ms, for up to ~30 s: a hang guard,
  // never a speed bound, as a loaded host stretches the guest's clock)
  // until the child is out.
  pid = fork_helper();
  if (pid == 0) {
    close(data[1]);  // EOF instead of a hang if the test process dies
    send_byte(ready[1], 'r');
    char c;
    const int64_t r = read(data[0], &c, 1);
    CHECK_EQ(r, -EINTR);
    CHECK(g_usr1_count >= 1);
    helper_exit();
  }
  CHECK(pid > 0);
  if (pid <= 0) return;  // (a failed fork) nobody would answer: the waits below would hang
  CHECK_EQ(recv_byte(ready[0]), 'r');
  int sent = 0;
  int64_t r = 0;
  for (int round = 0; round < 300 && r != pid; ++round) {
    for (int i = 0; i < 10; ++i) sched_yield();
    CHECK_EQ(kill(pid, SIGUSR1), 0);
    ++sent;
    const uint64_t t0 = now_ns();
    while ((r = wait4(pid, &st, WNOHANG)) == 0 && now_ns() - t0 < 100000000ull) sched_yield();
  }
  CHECK_EQ(r, pid);  // read was interrupted and the child exited
  if (r == 0) {      // still blocked: clean up, so the rest can run
    kill(pid, SIGKILL);
    st = wait_for(pid);
  }
  CHECK_EQ(st, wait_exited(0));
  detail("eintr_signals_sent", sent);

  // SIG_IGN: the signal is discarded, the child goes on.
  pid = fork_helper();
  if (pid == 0) {
    close(data[1]);
    CHECK_EQ(sigaction(SIGUSR1, SIG_IGN), 0);
    send_byte(ready[1], 'r');
    CHECK_EQ(recv_byte(data[0]), 'g');
    CHECK_EQ(g_usr1_count, 0);
    helper_exit();
  }
  CHECK(pid > 0);
  if (pid <= 0) return;  // (a failed fork) nobody would answer: the waits below would hang
  CHECK_EQ(recv_byte(ready[0]), 'r');
  CHECK_EQ(kill(pid, SIGUSR1), 0);
  for (int i = 0; i < 10; ++i) sched_yield();
  send_byte(data[1], 'g');
  st = WAIT_OR_KILL(pid, 5);
  CHECK_EQ(st, wait_exited(0));

  // SIG_DFL: SIGUSR1 terminates.
  CHECK_EQ(sigaction(SIGUSR1, SIG_DFL), 0);
  pid = fork_helper();
  if (pid == 0) {
    close(data[1]);
    send_byte(ready[1], 'r');
    CHECK_EQ(recv_byte(data[0]), 'g');  // blocks: nobody sends
    helper_exit();
  }
  CHECK(pid > 0);
  if (pid <= 0) return;  // (a failed fork) nobody would answer: the waits below would hang
  CHECK_EQ(recv_byte(ready[0]), 'r');
  CHECK_EQ(kill(pid, SIGUSR1), 0);
  st = WAIT_OR_KILL(pid, 5);  // the signal must wake it from read
  CHECK_EQ(st, wait_signaled(SIGUSR1));

  const int fds[] = {data[0], data[1], ready[0], ready[1]};
  for (int fd : fds) CHECK_EQ(close(fd), 0);
}

}  // namespace proctest
