// Seed 000 (lmbench style): getpid, getppid, segv, divzero, forkwait,
// lat_pipe, ctx.
#include "bench/bench.h"

namespace bench {

// ---------------------------------------------------------------------------
// Null system calls.

void run_getpid(Run& r) {
  const uint64_t n = r.p("iters");
  r.ops = n;
  const int64_t me = getpid();
  for (unsigned rep = 0; rep < r.reps; ++rep) {
    int64_t last = 0;
    r.start();
    for (uint64_t i = 0; i < n; ++i) last = getpid();
    r.stop();
    if (last != me) r.fail("getpid returned %ld, then %ld", me, last);
  }
}

void run_getppid(Run& r) {
  const uint64_t n = r.p("iters");
  r.ops = n;
  const int64_t parent = getppid();
  for (unsigned rep = 0; rep < r.reps; ++rep) {
    int64_t last = 0;
    r.start();
    for (uint64_t i = 0; i < n; ++i) last = getppid();
    r.stop();
    if (last != parent) r.fail("getppid returned %ld, then %ld", parent, last);
  }
}

// ---------------------------------------------------------------------------
// segv: store to a read-only page; the handler makes it writable and
// returns, so the store is retried and completes; the loop protects the page
// again.

namespace {

volatile uint64_t* g_segv_page;
volatile uint64_t g_segv_count;

void on_segv(int) {
  g_segv_count = g_segv_count + 1;
  mprotect(const_cast<uint64_t*>(g_segv_page), kPage, PROT_READ | PROT_WRITE);
}

}  // namespace

void run_segv(Run& r) {
  const uint64_t n = r.p("iters");
  r.ops = n;
  uint64_t* page = map_pages_or_fail(r, 1);
  if (!page) return;
  poke(page, 1);  // present before the first protection
  g_segv_page = page;
  g_segv_count = 0;
  if (int64_t e = sigaction(SIGSEGV, on_segv); e != 0) {
    r.fail("sigaction(SIGSEGV) returned %ld", e);
    munmap(page, kPage);
    return;
  }
  uint64_t want = 0;
  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    if (int64_t e = mprotect(page, kPage, PROT_READ); e != 0) {
      r.fail("mprotect(PROT_READ) returned %ld", e);
      break;
    }
    r.start();
    for (uint64_t i = 0; i < n; ++i) {
      poke(page, i);
      mprotect(page, kPage, PROT_READ);
    }
    r.stop();
    want += n;
    if (g_segv_count != want) r.fail("%lu SIGSEGVs handled, want %lu", static_cast<uint64_t>(g_segv_count), want);
    if (peek(page) != n - 1) r.fail("page holds %lu after the loop, want %lu", peek(page), n - 1);
  }
  sigaction(SIGSEGV, SIG_DFL);
  munmap(page, kPage);
}

// ---------------------------------------------------------------------------
// divzero: idiv by zero; the SIGFPE handler longjmps back (SA_NODEFER, since
// it never returns through rt_sigreturn).

namespace {

JmpBuf g_fpe_jmp;

void on_fpe(int) { pvk_longjmp(&g_fpe_jmp, 1); }

__attribute__((noinline)) void divide_by_zero() {
  asm volatile(
      "xor %%ecx, %%ecx\n\t"
      "mov $1, %%eax\n\t"
      "cltd\n\t"
      "idivl %%ecx"
      :
      :
      : "eax", "ecx", "edx", "memory");
}

}  // namespace

void run_divzero(Run& r) {
  const uint64_t n = r.p("iters");
  r.ops = n;
  if (int64_t e = sigaction(SIGFPE, on_fpe, kSaNodefer); e != 0) {
    r.fail("sigaction(SIGFPE) returned %ld", e);
    return;
  }
  for (unsigned rep = 0; rep < r.reps; ++rep) {
    volatile uint64_t caught = 0;
    volatile uint64_t i = 0;
    r.start();
    while (i < n) {
      if (pvk_setjmp(&g_fpe_jmp) == 0)
        divide_by_zero();
      else
        caught = static_cast<uint64_t>(caught) + 1;
      i = static_cast<uint64_t>(i) + 1;
    }
    r.stop();
    if (caught != n) {
      r.fail("%lu SIGFPEs caught, want %lu", static_cast<uint64_t>(caught), n);
      break;
    }
  }
  sigaction(SIGFPE, SIG_DFL);
}

// ---------------------------------------------------------------------------
// forkwait: fork, the child exits at once, the parent waits.

void run_forkwait(Run& r) {
  const uint64_t n = r.p("iters");
  r.ops = n;
  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    r.start();
    for (uint64_t i = 0; i < n; ++i) {
      const int64_t pid = fork();
      if (pid == 0) exit_group(7);
      if (pid < 0) {
        r.fail("fork returned %ld", pid);
        break;
      }
      int st = 0;
      const int64_t got = wait4(pid, &st, 0);
      if (got != pid || st != wait_exited(7)) {
        r.fail("wait4(%ld) returned %ld, status 0x%x", pid, got, st);
        break;
      }
    }
    r.stop();
  }
}

// ---------------------------------------------------------------------------
// lat_pipe: one byte there and back between two processes.

namespace {

// The echo side: read a byte from in, write it to out, until EOF.
[[noreturn]] void echo_loop(int in, int out) {
  char c;
  while (read(in, &c, 1) == 1)
    if (write(out, &c, 1) != 1) exit_group(2);
  exit_group(0);
}

}  // namespace

void run_lat_pipe(Run& r) {
  const uint64_t n = r.p("iters");
  r.ops = n;
  int there[2], back[2];
  if (pipe(there) != 0) {
    r.fail("pipe failed");
    return;
  }
  if (pipe(back) != 0) {
    r.fail("pipe failed");
    close(there[0]);
    close(there[1]);
    return;
  }
  const int64_t pid = fork_or_fail(r);
  if (pid == 0) {
    close(there[1]);
    close(back[0]);
    echo_loop(there[0], back[1]);
  }
  close(there[0]);
  close(back[1]);
  if (pid > 0) {
    for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
      r.start();
      for (uint64_t i = 0; i < n; ++i) {
        char c = static_cast<char>(i), got = 0;
        if (write(there[1], &c, 1) != 1 || read(back[0], &got, 1) != 1 || got != c) {
          r.fail("round trip %lu failed", i);
          break;
        }
      }
      r.stop();
    }
  }
  close(there[1]);  // EOF: the echo side exits
  close(back[0]);
  if (pid > 0) {
    const int st = wait_child(r, pid);
    if (st > 0) r.fail("echo process exited with status 0x%x", st);
  }
}

// ---------------------------------------------------------------------------
// ctx: a ring of procs processes (this one and procs-1 children); process k
// reads the token from pipe k and writes it to pipe k+1 (mod procs), summing
// its own working set after each receive. One rep sends the token round the
// ring iters times (iters * procs hops).

namespace {

volatile uint64_t g_sink;

// Each process's private working set (mapped and written by the process
// itself, so no frames are shared).
struct WorkingSet {
  uint64_t* words = nullptr;
  uint64_t bytes = 0;

  bool map(uint64_t n) {
    bytes = n;
    if (!n) return true;
    const uint64_t len = (n + kPage - 1) & ~(kPage - 1);
    words = static_cast<uint64_t*>(map_anon(len));
    if (!words) return false;
    for (uint64_t i = 0; i < n / 8; ++i) words[i] = i;
    return true;
  }
  void unmap() {
    if (words) munmap(words, (bytes + kPage - 1) & ~(kPage - 1));
    words = nullptr;
  }
  // lmbench's "sum the working set".
  void sum() const {
    uint64_t s = 0;
    const volatile uint64_t* w = words;
    for (uint64_t i = 0; i < bytes / 8; ++i) s += w[i];
    g_sink = s;
  }
};

[[noreturn]] void ring_member(int in, int out, uint64_t ws_bytes) {
  WorkingSet ws;
  if (!ws.map(ws_bytes)) exit_group(3);
  char c;
  while (read(in, &c, 1) == 1) {
    ws.sum();
    if (write(out, &c, 1) != 1) exit_group(2);
  }
  exit_group(0);
}

}  // namespace

void run_ctx(Run& r) {
  const uint64_t procs = r.p("procs"), ws_bytes = r.p("working_set"), iters = r.p("iters");
  r.ops = iters * procs;
  if (procs < 2 || procs > 48) {
    r.fail("procs must be 2..48");
    return;
  }
  if (ws_bytes > 64ull << 20) {
    r.fail("working_set must be at most 64 MiB");
    return;
  }
  WorkingSet ws;
  if (!ws.map(ws_bytes)) {
    r.fail("mmap of the working set failed");
    return;
  }

  // Overhead: the same hop (pipe write + read, working-set sum) in one
  // process, median over the reps.
  {
    int self[2];
    if (pipe(self) != 0) {
      r.fail("pipe failed");
      ws.unmap();
      return;
    }
    Series over;
    for (unsigned rep = 0; rep < r.reps; ++rep) {
      const uint64_t t0 = now_ns();
      for (uint64_t h = 0; h < iters * procs; ++h) {
        char c = 't';
        write(self[1], &c, 1);
        read(self[0], &c, 1);
        ws.sum();
      }
      over.add(now_ns() - t0);
    }
    close(self[0]);
    close(self[1]);
    r.extra("overhead_per_op", over.median() / r.ops);
  }

  // The ring. pipe 0 carries the token from us to child 0; child k reads
  // pipe k and writes pipe k+1; we read pipe procs-1.
  int to_first[2];
  if (pipe(to_first) != 0) {
    r.fail("pipe failed");
    ws.unmap();
    return;
  }
  int prev_read = to_first[0];
  int64_t pids[48];
  unsigned started = 0;
  for (unsigned k = 0; k + 1 < procs; ++k) {
    int next[2];
    if (pipe(next) != 0) {
      r.fail("pipe %u failed", k + 1);
      break;
    }
    const int64_t pid = fork_or_fail(r);
    if (pid == 0) {
      close(to_first[1]);
      close(next[0]);
      ring_member(prev_read, next[1], ws_bytes);
    }
    close(prev_read);
    close(next[1]);
    prev_read = next[0];
    if (pid < 0) break;
    pids[started++] = pid;
  }
  const int first_write = to_first[1];
  // One warm-up round (every member maps its working set), then the reps.
  auto round = [&](uint64_t rounds) {
    for (uint64_t i = 0; i < rounds; ++i) {
      char c = 'T';
      if (write(first_write, &c, 1) != 1 || read(prev_read, &c, 1) != 1 || c != 'T') return r.fail("the token was lost");
      ws.sum();
    }
    return true;
  };
  if (!r.failed() && round(1)) {
    for (unsigned rep = 0; rep < r.reps; ++rep) {
      r.start();
      const bool ok = round(iters);
      r.stop();
      if (!ok) break;
    }
  }
  close(first_write);  // EOF travels round the ring
  close(prev_read);
  for (unsigned k = 0; k < started; ++k) {
    const int st = wait_child(r, pids[k]);
    if (st > 0) r.fail("ring member %u exited with status 0x%x", k, st);
  }
  ws.unmap();
  if (r.ns.n) {
    const uint64_t per = r.ns.median() / r.ops;
    uint64_t over = 0;
    for (unsigned i = 0; i < r.n_extras; ++i)
      if (strcmp(r.extras[i].key, "overhead_per_op") == 0) over = r.extras[i].value;
    r.extra("switch_per_op", per > over ? per - over : 0);
  }
}

}  // namespace bench
