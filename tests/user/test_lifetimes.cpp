// lifetime_*, futex_*, exec_race: what another thread of the same process
// can do to a call that sleeps — close or dup2 the descriptor it sleeps
// on, make new pipes that land in the freed slots — and timed sleeps that
// must leave the other CPUs alone, expire on time and never early.
#include "bench/libc/thread.h"
#include "harness.h"

namespace proctest {
namespace {

constexpr uint64_t kMs = 1000000;

void sleep_ms(uint64_t ms) {
  const Timespec t{static_cast<int64_t>(ms / 1000), static_cast<int64_t>((ms % 1000) * kMs)};
  nanosleep(&t, nullptr);
}

// --- lifetime_pipe_close / lifetime_pipe_dup2 ------------------------------

struct Sleeper {
  int fd;
  char* buf;
  size_t len;
  volatile uint32_t started;
  volatile int64_t result;
  volatile uint32_t done;
};
Sleeper g_sleeper;

void blocking_read(void*) {
  g_sleeper.started = 1;
  g_sleeper.result = read(g_sleeper.fd, g_sleeper.buf, g_sleeper.len);
  __atomic_store_n(&g_sleeper.done, 1u, __ATOMIC_SEQ_CST);
}

void blocking_write(void*) {
  g_sleeper.started = 1;
  g_sleeper.result = write(g_sleeper.fd, g_sleeper.buf, g_sleeper.len);
  __atomic_store_n(&g_sleeper.done, 1u, __ATOMIC_SEQ_CST);
}

// Starts fn in a thread and gives it time to block in its call.
bool start_sleeper(Thread* t, void (*fn)(void*), int fd, char* buf, size_t len) {
  g_sleeper = Sleeper{fd, buf, len, 0, 0, 0};
  if (thread_create(t, fn, nullptr) <= 0) return false;
  while (!g_sleeper.started) sched_yield();
  sleep_ms(5);
  return true;
}

// A pipe made in this process carries exactly what is written into it.
bool fresh_pipe_is_ours(int round) {
  int q[2];
  if (pipe(q) != 0) return false;
  char msg[16], got[16] = {};
  pvk::format(msg, sizeof msg, "mine-%d", round);
  const size_t n = strlen(msg);
  const bool ok = write(q[1], msg, n) == int64_t(n) && read(q[0], got, sizeof got) == int64_t(n) &&
                  memcmp(got, msg, n) == 0;
  close(q[0]);
  close(q[1]);
  return ok;
}

constexpr int kRounds = 6;

}  // namespace

// A thread sleeps in read() on a pipe; its sibling closes both ends and at
// once makes new pipes (which reuse the numbers, and once reused the freed
// slots) and writes into them. The sleeper's read is against its own
// pipe: EOF (its writer is gone), never the new pipes' data, which stays
// where it was written. A helper process does the same meanwhile, so a
// sleeper that went stray would also read another process's bytes.
void test_lifetime_pipe_close() {
  auto* stop = static_cast<volatile uint32_t*>(map_anon(kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  CHECK(stop != nullptr);
  if (!stop) return;
  const int64_t other = fork_helper();
  if (other == 0) {
    // Another process with pipes of its own, until the test is done.
    for (int round = 0; !*stop && round < 1000000; ++round) {
      CHECK(fresh_pipe_is_ours(round));
      if (round % 8 == 0) sched_yield();
    }
    helper_exit();
  }
  CHECK(other > 0);
  unsigned stray = 0, lost = 0;
  for (int round = 0; round < kRounds; ++round) {
    int p[2];
    CHECK_EQ(pipe(p), 0);
    char buf[32] = {};
    Thread t;
    CHECK(start_sleeper(&t, blocking_read, p[0], buf, sizeof buf));
    close(p[0]);
    close(p[1]);
    // The freed numbers (and, with a stale sleeper, the freed pipe) again.
    int q[2];
    CHECK_EQ(pipe(q), 0);
    char msg[16];
    pvk::format(msg, sizeof msg, "new-%d", round);
    const size_t n = strlen(msg);
    CHECK_EQ(write(q[1], msg, n), int64_t(n));
    close(q[1]);  // a stray sleeper that took the bytes leaves EOF, not a hang
    CHECK_EQ(thread_join(&t), 0);
    CHECK_EQ(g_sleeper.result, 0);  // EOF on its own pipe
    if (g_sleeper.result > 0) ++stray;
    char got[16] = {};
    const int64_t r = read(q[0], got, sizeof got);
    if (r != int64_t(n) || memcmp(got, msg, n) != 0) ++lost;
    close(q[0]);
  }
  CHECK_EQ(stray, 0);
  CHECK_EQ(lost, 0);
  *stop = 1;
  if (other > 0) CHECK_HELPER_OK(other);
  munmap(const_cast<uint32_t*>(stop), kPage);
  detail("rounds", kRounds);
  detail("stray_reads", stray);
}

// A thread sleeps in read() on pipe A; its sibling dup2s pipe B's read end
// over that descriptor and writes into B: the sleeper's read stays on A
// (B's bytes are B's), and a write into A, whose read end the sleeper
// still holds, reaches it (no EPIPE: the end is not closed while in use).
void test_lifetime_pipe_dup2() {
  sigaction(SIGPIPE, SIG_IGN);
  unsigned wrong = 0;
  for (int round = 0; round < kRounds; ++round) {
    int a[2], b[2];
    CHECK_EQ(pipe(a), 0);
    CHECK_EQ(pipe(b), 0);
    char buf[32] = {};
    Thread t;
    CHECK(start_sleeper(&t, blocking_read, a[0], buf, sizeof buf));
    CHECK_EQ(dup2(b[0], a[0]), a[0]);
    CHECK_EQ(write(b[1], "bbbb", 4), 4);
    sleep_ms(2);
    CHECK_EQ(write(a[1], "aaaa", 4), 4);  // no reader left would be EPIPE
    close(a[1]), close(b[1]);             // EOF for whoever waits still: no hang
    CHECK_EQ(thread_join(&t), 0);
    CHECK_EQ(g_sleeper.result, 4);
    if (g_sleeper.result != 4 || memcmp(buf, "aaaa", 4) != 0) ++wrong;
    char got[8] = {};
    CHECK_EQ(read(a[0], got, sizeof got), 4);  // now B's read end
    CHECK(memcmp(got, "bbbb", 4) == 0);
    close(a[0]), close(b[0]);
  }
  CHECK_EQ(wrong, 0);
  sigaction(SIGPIPE, SIG_DFL);
}

// A thread sleeps in write() on a full pipe; its sibling closes both ends
// and makes a new pipe in the freed slots. The sleeper's write ends on its
// own pipe (EPIPE or a short count: its reader is gone), and the new pipe
// holds only what its own writer put there.
void test_lifetime_pipe_write() {
  sigaction(SIGPIPE, SIG_IGN);
  // More than any pipe holds (pvk: 4 KiB; Linux: 64 KiB): the writer sleeps.
  constexpr size_t kBig = 256 * 1024;
  char* big = static_cast<char*>(map_anon(kBig));
  CHECK(big != nullptr);
  if (!big) return;
  memset(big, 'T', kBig);
  unsigned foreign = 0;
  for (int round = 0; round < 3; ++round) {
    int p[2];
    CHECK_EQ(pipe(p), 0);
    Thread t;
    CHECK(start_sleeper(&t, blocking_write, p[1], big, kBig));
    close(p[0]);
    close(p[1]);
    int q[2];
    CHECK_EQ(pipe(q), 0);
    CHECK_EQ(write(q[1], "qq", 2), 2);
    close(q[1]);
    // One read: what the new pipe holds first. Then its read end goes, so
    // a sleeper gone stray into it would end too (EPIPE) instead of hanging.
    char got[64];
    const int64_t n = read(q[0], got, sizeof got);
    close(q[0]);
    CHECK_EQ(thread_join(&t), 0);
    CHECK(g_sleeper.result == -EPIPE || (g_sleeper.result > 0 && g_sleeper.result < int64_t(kBig)));
    CHECK_EQ(n, 2);
    for (int64_t i = 0; i < n; ++i) foreign += got[i] == 'T';
  }
  CHECK_EQ(foreign, 0);
  munmap(big, kBig);
  sigaction(SIGPIPE, SIG_DFL);
}

// --- futex_timed_progress --------------------------------------------------

namespace {

struct Progress {
  volatile uint32_t word;
  volatile uint32_t waiting;
  volatile uint64_t calls;
  volatile uint64_t stamp;  // moves while the progress thread spins in user mode
};
Progress g_progress;
constexpr uint64_t kProgressCalls = 200;

// Spins (no system call) until the waiter waits, then enters the kernel
// kProgressCalls times and wakes it: possible only if the waiter's wait
// leaves the kernel to others.
void progress_thread(void*) {
  while (!g_progress.waiting) g_progress.stamp = g_progress.stamp + 1;
  for (uint64_t i = 0; i < kProgressCalls; ++i) {
    getppid();
    g_progress.calls = i + 1;
  }
  g_progress.word = 1;
  futex(&g_progress.word, FUTEX_WAKE, 1);
}

// Whether the progress thread runs on another CPU right now: its stamp
// moves while this thread spins without entering the kernel.
bool progress_thread_runs_beside() {
  const uint64_t before = g_progress.stamp;
  for (unsigned i = 0; i < 200000; ++i)
    if (g_progress.stamp != before) return true;
  return false;
}

}  // namespace

// A long timed FUTEX_WAIT while another thread — on the other CPU, once
// it is seen running there — makes system calls and then wakes it: the
// waiter is woken (0) having let all of them through, not timed out
// holding the kernel (which stopped every other CPU until the timeout).
void test_futex_timed_progress() {
  g_progress = Progress{0, 0, 0, 0};
  Thread t;
  CHECK(thread_create(&t, progress_thread, nullptr) > 0);
  bool beside = false;
  for (unsigned tries = 0; tries < 10 && !beside; ++tries)
    if (!(beside = progress_thread_runs_beside())) sched_yield();
  const Timespec ten_s{10, 0};
  g_progress.waiting = 1;
  int64_t r = 0;
  while (g_progress.word == 0 && (r = futex(&g_progress.word, FUTEX_WAIT, 0, &ten_s)) != -ETIMEDOUT) {
  }
  CHECK(r == 0 || r == -EAGAIN);
  CHECK_EQ(g_progress.word, 1);
  CHECK_EQ(g_progress.calls, kProgressCalls);
  CHECK_EQ(thread_join(&t), 0);
  detail("calls", static_cast<int64_t>(g_progress.calls));
  detail("crossed", beside);  // the two ran on two CPUs at the wait
}

// --- futex_timeouts ---------------------------------------------------------

namespace {

struct LongWait {
  volatile uint32_t word;
  Timespec timeout;
  volatile int64_t result;
  volatile uint32_t returned;
};
// Past ~79 days (at 2.7 GHz; ~100 at 2.1) the old ns-to-TSC conversion
// wrapped; the last is the longest timespec accepted (capped inside).
constexpr int64_t kLongTimeouts[] = {80ll * 86400, 200ll * 86400, 10000ll * 86400, 1000000000ll * 30, INT64_MAX};
constexpr unsigned kLongWaiters = sizeof kLongTimeouts / sizeof kLongTimeouts[0];
LongWait g_long[kLongWaiters];

void long_waiter(void* arg) {
  LongWait& w = *static_cast<LongWait*>(arg);
  w.result = futex(&w.word, FUTEX_WAIT, 0, &w.timeout);
  __atomic_store_n(&w.returned, 1u, __ATOMIC_SEQ_CST);
}

volatile uint32_t g_usr1;
void on_usr1(int) { g_usr1 = g_usr1 + 1; }

struct NapArg {
  volatile int64_t result;
  Timespec rem;
  volatile int64_t tid;
};
NapArg g_nap;
void napper(void*) {
  g_nap.tid = gettid();
  const Timespec ten_s{10, 0};
  g_nap.result = nanosleep(&ten_s, &g_nap.rem);
}

// Timed waits whose timeouts are long enough that the old conversion
// wrapped, or saturates: all still waiting after a while, then woken by
// FUTEX_WAKE (0), never ETIMEDOUT.
void long_timeouts_wait() {
  Thread t[kLongWaiters];
  for (unsigned i = 0; i < kLongWaiters; ++i) {
    g_long[i] = LongWait{0, {kLongTimeouts[i], 0}, 1, 0};
    CHECK(thread_create(&t[i], long_waiter, &g_long[i]) > 0);
  }
  sleep_ms(300);
  for (unsigned i = 0; i < kLongWaiters; ++i) {
    CHECK_EQ(g_long[i].returned, 0);  // not expired early
    g_long[i].word = 1;
    futex(&g_long[i].word, FUTEX_WAKE, 1);
  }
  for (unsigned i = 0; i < kLongWaiters; ++i) {
    CHECK_EQ(thread_join(&t[i]), 0);
    CHECK(g_long[i].result == 0 || g_long[i].result == -EAGAIN);
  }
}

}  // namespace

// Timeouts at the edges: none left (ETIMEDOUT at once), a short one (not
// before its time), the long ones that once expired at once, bad
// timespecs; nanosleep the same way, and cut short by a signal.
void test_futex_timeouts() {
  volatile uint32_t word = 0;
  const Timespec zero{0, 0};
  CHECK_EQ(futex(&word, FUTEX_WAIT, 0, &zero), -ETIMEDOUT);
  const Timespec bad_ns{0, 1000000000}, negative{-1, 0}, negative_ns{0, -1};
  CHECK_EQ(futex(&word, FUTEX_WAIT, 0, &bad_ns), -EINVAL);
  CHECK_EQ(futex(&word, FUTEX_WAIT, 0, &negative), -EINVAL);
  CHECK_EQ(futex(&word, FUTEX_WAIT, 0, &negative_ns), -EINVAL);
  const Timespec twenty_ms{0, 20 * int64_t(kMs)};
  uint64_t t0 = now_ns();
  CHECK_EQ(futex(&word, FUTEX_WAIT, 0, &twenty_ms), -ETIMEDOUT);
  const uint64_t waited = now_ns() - t0;
  CHECK(waited >= 20 * kMs);  // never before the deadline
  detail("twenty_ms_waited_us", static_cast<int64_t>(waited / 1000));
  long_timeouts_wait();
  // nanosleep: on time, refusals, and EINTR with what was left.
  t0 = now_ns();
  CHECK_EQ(nanosleep(&twenty_ms, nullptr), 0);
  CHECK(now_ns() - t0 >= 20 * kMs);
  CHECK_EQ(nanosleep(&zero, nullptr), 0);
  CHECK_EQ(nanosleep(&bad_ns, nullptr), -EINVAL);
  CHECK_EQ(nanosleep(&negative, nullptr), -EINVAL);
  CHECK_EQ(nanosleep(reinterpret_cast<const Timespec*>(0xffff800000000000ull), nullptr), -EFAULT);
  CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, 0, &twenty_ms, nullptr), 0);
  CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, 2, &twenty_ms, nullptr), 0);  // other flag bits: ignored, as Linux
  CHECK_EQ(clock_nanosleep(99, 0, &twenty_ms, nullptr), -EINVAL);
  Timespec now{};
  CHECK_EQ(clock_gettime(CLOCK_MONOTONIC, &now), 0);
  t0 = now_ns();
  CHECK_EQ(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &now, nullptr), 0);  // already past: at once
  CHECK(sigaction(SIGUSR1, on_usr1) == 0);
  g_usr1 = 0;
  g_nap = NapArg{1, {-1, -1}, 0};
  Thread t;
  CHECK(thread_create(&t, napper, nullptr) > 0);
  while (!g_nap.tid) sched_yield();
  sleep_ms(50);
  CHECK_EQ(tgkill(getpid(), g_nap.tid, SIGUSR1), 0);
  CHECK_EQ(thread_join(&t), 0);
  CHECK_EQ(g_nap.result, -EINTR);
  CHECK_EQ(g_usr1, 1);
  CHECK(g_nap.rem.tv_sec >= 0 && g_nap.rem.tv_sec < 10 && g_nap.rem.tv_nsec >= 0 && g_nap.rem.tv_nsec < 1000000000);
  sigaction(SIGUSR1, SIG_DFL);
}

// --- exec_race ---------------------------------------------------------------

namespace {

int g_race_pipe[2];
volatile uint32_t g_go;
bool g_thread_starts;  // which of the two lets both go (and so is a step behind)

void exec_cowchild(int code) {
  while (!g_go) {
  }
  char fd_arg[16], code_arg[8];
  pvk::format(fd_arg, sizeof fd_arg, "%d", g_race_pipe[1]);
  pvk::format(code_arg, sizeof code_arg, "%d", code);
  const char* argv[] = {"cowchild", "alpha", "beta gamma", "0", fd_arg, code_arg, nullptr};
  const char* envp[] = {"PVK_TEST=cowchild", "SECOND=2", nullptr};
  execve("cowchild", argv, envp);
}

void second_execer(void*) {
  if (g_thread_starts) g_go = 1;
  exec_cowchild(72);
  exit_group(3);  // execve failed without ending this thread
}

}  // namespace

// Two threads of one process call execve at the same moment: one exec
// wins, the other thread (the loser included) is ended, and the process
// goes on in the new image, exiting with the winner's code; never killed.
void test_exec_race() {
  constexpr int kTries = 4;
  int first = 0, second = 0;
  for (int i = 0; i < kTries; ++i) {
    CHECK_EQ(pipe(g_race_pipe), 0);
    const int64_t pid = fork();
    if (pid == 0) {
      close(g_race_pipe[0]);
      sigaction(SIGPIPE, SIG_IGN);  // cowchild checks an ignored signal stays ignored
      Thread t;
      g_thread_starts = i % 2;  // each side a step ahead in half of the tries
      if (thread_create(&t, second_execer, nullptr) <= 0) exit_group(98);
      if (!g_thread_starts) g_go = 1;
      exec_cowchild(71);
      exit_group(4);
    }
    CHECK(pid > 0);
    close(g_race_pipe[1]);
    char msg[128];
    const int64_t n = pid > 0 ? read_full(g_race_pipe[0], msg, sizeof msg - 1) : 0;
    msg[n > 0 ? n : 0] = '\0';
    if (n > 0 && msg[n - 1] == '\n') msg[n - 1] = '\0';
    char want[64];
    pvk::format(want, sizeof want, "pid=%ld ok", pid);
    CHECK(strcmp(msg, want) == 0);  // exactly one image ran, as the process
    const int status = pid > 0 ? WAIT_OR_KILL(pid, 10) : 0;
    CHECK(status == wait_exited(71) || status == wait_exited(72));
    first += status == wait_exited(71);
    second += status == wait_exited(72);
    close(g_race_pipe[0]);
  }
  detail("leader_won", first);
  detail("thread_won", second);
}

}  // namespace proctest
