// pipe_race_threads: reads and writes of pipes run without the kernel lock
// (docs/locking.md), looking their descriptor up under the group's table
// lock; another thread of the process, pinned to another CPU, closes or
// dup2s that very descriptor while the call sleeps in it (or is about to
// look it up). Whichever comes first, the call sees a consistent pipe:
//  - close of a sleeping reader's descriptor: the read goes on against its
//    pipe and returns the byte written next (or EBADF if the close came
//    before its lookup);
//  - dup2 over a sleeping reader's descriptor, then the writer closed: EOF;
//  - close of a sleeping writer's descriptor (a full pipe): its write of
//    PIPE_BUF bytes goes in whole once room appears, never interleaved;
//  - the last reader gone under a sleeping writer: EPIPE (SIGPIPE ignored);
//  - a signal with a handler under a sleeping reader: EINTR;
//  - churn: one thread reads and writes two fixed descriptor numbers while
//    the other replaces them (pipe, dup2, close) as fast as it can: every
//    call returns a count, EBADF or EPIPE, and nothing hangs or leaks (the
//    boot test checks the frames).
// With one CPU the orders are few; with several each case meets the other
// thread in the kernel at once. Run when named (pvk's pipes hold one page:
// a full pipe here is not full on Linux).
#include "bench/libc/thread.h"
#include "cpu_pinning.h"
#include "harness.h"

namespace proctest {
namespace {

constexpr unsigned kRounds = 24;
constexpr unsigned kChurnOps = 400;
constexpr uint64_t kWaitNs = 20ull * 1000 * 1000 * 1000;  // bound of a wait for the other CPU (virtual time)
constexpr uint64_t kSignalWaitNs = 20ull * 1000 * 1000;   // how long an EINTR may take to show (virtual time)
constexpr size_t kPipeBuf = 4096;
constexpr int kChurnRead = 12, kChurnWrite = 13;  // the numbers churn swaps under the worker

using usertest::cpus_mask;
using usertest::nth_cpu;
using usertest::pin;

enum Case : uint32_t { kReadClose, kReadDup2, kWriteClose, kWriteNoReader, kReadSignal, kChurn };

struct Shared {
  volatile uint32_t which;
  volatile int fd;
  volatile uint32_t entered;  // the worker is about to make its call
  volatile uint32_t done;
  volatile int64_t result;
  volatile int32_t tid;
  volatile uint64_t churn_bad;  // churn results that were none of count, EBADF, EPIPE
  volatile uint64_t churn_moved;
  uint8_t buf[kPipeBuf];
};
Shared g;
uint8_t g_main_buf[kPipeBuf];

void on_usr1(int) {}

void worker(void*) {
  g.tid = static_cast<int32_t>(gettid());
  __atomic_store_n(&g.entered, 1, __ATOMIC_SEQ_CST);
  switch (g.which) {
    case kReadClose:
    case kReadDup2:
    case kReadSignal: g.result = read(g.fd, g.buf, 8); break;
    case kWriteClose:
      memset(g.buf, 'b', kPipeBuf);
      g.result = write(g.fd, g.buf, kPipeBuf);
      break;
    case kWriteNoReader:
      memset(g.buf, 'c', 100);
      g.result = write(g.fd, g.buf, 100);
      break;
    case kChurn:
      for (unsigned i = 0; i < kChurnOps; ++i) {
        const int64_t r = (i & 1) ? write(kChurnWrite, g.buf, 16) : read(kChurnRead, g.buf, 16);
        if (r > 0) g.churn_moved = g.churn_moved + static_cast<uint64_t>(r);
        else if (r != 0 && r != -EBADF && r != -EPIPE) g.churn_bad = g.churn_bad + 1;
      }
      break;
  }
  __atomic_store_n(&g.done, 1, __ATOMIC_SEQ_CST);
}

// Starts the worker on the other CPU for case c on fd, and waits until it
// is about to make its call, then a little longer (it enters the kernel
// and sleeps meanwhile, unless the other CPU is slow to run it).
void start(Thread* t, uint64_t mask, Case c, int fd) {
  g.which = c;
  g.fd = fd;
  g.entered = 0;
  g.done = 0;
  g.result = 0;
  pin(nth_cpu(mask, 1));
  CHECK(thread_create(t, worker, nullptr) > 0);
  pin(nth_cpu(mask, 0));
  CHECK(wait_until([] { return __atomic_load_n(&g.entered, __ATOMIC_SEQ_CST) != 0; }, kWaitNs));
  for (unsigned i = 0; i < 20000; ++i) {
    asm volatile("" ::: "memory");
  }
}

void fill(int fd) {
  memset(g_main_buf, 'a', kPipeBuf);
  CHECK_EQ(write(fd, g_main_buf, kPipeBuf), int64_t(kPipeBuf));
}

bool all(const uint8_t* p, size_t n, uint8_t c) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != c) return false;
  return true;
}

}  // namespace

void test_pipe_race_threads() {
  const uint64_t mask = cpus_mask();
  pin(nth_cpu(mask, 0));
  CHECK_EQ(sigaction(SIGPIPE, SIG_IGN), 0);
  CHECK_EQ(sigaction(SIGUSR1, on_usr1), 0);
  // Per case: the call slept through the other thread's change (blocked)
  // or the change came before its lookup (early); bad: neither.
  uint64_t blocked[5] = {}, early[5] = {}, bad = 0;
  for (unsigned round = 0; round < kRounds; ++round) {
    Thread t;
    int p[2], q[2];
    // A sleeping reader's descriptor closed, then a byte written.
    CHECK_EQ(pipe(p), 0);
    start(&t, mask, kReadClose, p[0]);
    CHECK_EQ(close(p[0]), 0);
    const int64_t w = write(p[1], "x", 1);
    CHECK_EQ(thread_join(&t), 0);
    if (g.result == 1 && g.buf[0] == 'x' && w == 1) ++blocked[0];
    else if (g.result == -EBADF && w == -EPIPE) ++early[0];
    else ++bad, detail("read_close_result", g.result);
    close(p[1]);

    // dup2 over a sleeping reader's descriptor, then every writer closed.
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(pipe(q), 0);
    start(&t, mask, kReadDup2, p[0]);
    CHECK_EQ(dup2(q[0], p[0]), p[0]);
    close(p[1]), close(q[1]);
    CHECK_EQ(thread_join(&t), 0);
    if (g.result == 0) ++blocked[1];
    else ++bad, detail("read_dup2_result", g.result);
    close(p[0]), close(q[0]);

    // A sleeping writer's descriptor closed; room made: its PIPE_BUF bytes
    // go in whole, after the filler's.
    CHECK_EQ(pipe(p), 0);
    fill(p[1]);
    start(&t, mask, kWriteClose, p[1]);
    CHECK_EQ(close(p[1]), 0);
    CHECK_EQ(read(p[0], g_main_buf, kPipeBuf), int64_t(kPipeBuf));
    CHECK(all(g_main_buf, kPipeBuf, 'a'));
    CHECK_EQ(thread_join(&t), 0);
    const int64_t rest = read(p[0], g_main_buf, kPipeBuf);
    if (g.result == int64_t(kPipeBuf) && rest == int64_t(kPipeBuf) && all(g_main_buf, kPipeBuf, 'b')) ++blocked[2];
    else if (g.result == -EBADF && rest == 0) ++early[2];
    else ++bad, detail("write_close_result", g.result), detail("write_close_rest", rest);
    CHECK_EQ(read(p[0], g_main_buf, 1), 0);  // every writer gone: EOF
    close(p[0]);

    // The last reader gone under a sleeping writer: EPIPE.
    CHECK_EQ(pipe(p), 0);
    fill(p[1]);
    start(&t, mask, kWriteNoReader, p[1]);
    CHECK_EQ(close(p[0]), 0);
    CHECK_EQ(thread_join(&t), 0);
    if (g.result == -EPIPE) ++blocked[3];
    else ++bad, detail("write_no_reader_result", g.result);
    close(p[1]);

    // A signal with a handler under a sleeping reader: EINTR. If it came
    // before the read began, a byte ends the read instead.
    CHECK_EQ(pipe(p), 0);
    start(&t, mask, kReadSignal, p[0]);
    CHECK_EQ(tgkill(getpid(), g.tid, SIGUSR1), 0);
    if (!wait_until([] { return __atomic_load_n(&g.done, __ATOMIC_SEQ_CST) != 0; }, kSignalWaitNs))
      CHECK_EQ(write(p[1], "y", 1), 1);
    CHECK_EQ(thread_join(&t), 0);
    if (g.result == -EINTR) ++blocked[4];
    else if (g.result == 1) ++early[4];
    else ++bad, detail("read_signal_result", g.result);
    close(p[0]), close(p[1]);
  }

  // Churn: the worker reads and writes two numbers the main thread keeps
  // replacing with new pipes' ends, closing the old ones under it.
  int p[2];
  CHECK_EQ(pipe(p), 0);
  CHECK_EQ(dup2(p[0], kChurnRead), kChurnRead);
  CHECK_EQ(dup2(p[1], kChurnWrite), kChurnWrite);
  close(p[0]), close(p[1]);
  Thread t;
  g.churn_bad = 0;
  g.churn_moved = 0;
  start(&t, mask, kChurn, -1);
  unsigned swaps = 0;
  while (!__atomic_load_n(&g.done, __ATOMIC_SEQ_CST)) {
    if (pipe(p) != 0) break;
    CHECK_EQ(write(p[1], "z", 1), 1);
    if (swaps % 5 == 4) close(kChurnRead);  // a gap: EBADF for a moment
    else dup2(p[0], kChurnRead);
    dup2(p[1], kChurnWrite);  // the old write end goes: a sleeping reader sees EOF
    close(p[0]), close(p[1]);
    ++swaps;
  }
  CHECK_EQ(thread_join(&t), 0);
  close(kChurnRead), close(kChurnWrite);
  CHECK_EQ(g.churn_bad, 0);
  CHECK(swaps > 0);

  CHECK_EQ(bad, 0);
  detail("rounds", kRounds);
  detail("read_close_blocked", static_cast<int64_t>(blocked[0]));
  detail("read_close_early", static_cast<int64_t>(early[0]));
  detail("read_dup2_eof", static_cast<int64_t>(blocked[1]));
  detail("write_close_blocked", static_cast<int64_t>(blocked[2]));
  detail("write_close_early", static_cast<int64_t>(early[2]));
  detail("write_no_reader_epipe", static_cast<int64_t>(blocked[3]));
  detail("read_signal_eintr", static_cast<int64_t>(blocked[4]));
  detail("read_signal_early", static_cast<int64_t>(early[4]));
  detail("churn_swaps", swaps);
  detail("churn_moved", static_cast<int64_t>(g.churn_moved));
  detail("bad", static_cast<int64_t>(bad));
}

}  // namespace proctest
