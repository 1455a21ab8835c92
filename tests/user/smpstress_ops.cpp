// smpstress's operations: each draws its arguments from the thread's
// seeded generator, makes its calls and checks every result against what
// it must be. Memory holds a pattern derived from a per-region tag, so
// any page a region's owner did not write (another owner's frame, a lost
// store, a COW copy from the wrong frame) fails its checksum; a store into
// a read-only range must fault; a signal sent to oneself is taken before
// the call returns; a child's copy of memory is the parent's at the fork.
#include "base/lib/format.h"
#include "bench/libc/files.h"
#include "smpstress.h"

namespace smpstress {

const char* const kOpNames[kOps] = {
#define SMPSTRESS_NAME(name) #name,
    SMPSTRESS_OPS(SMPSTRESS_NAME)
#undef SMPSTRESS_NAME
};

namespace {

constexpr unsigned kRegions = 6;
constexpr uint64_t kMaxPages = 8;
constexpr uint64_t kWords = 4096 / 8;

struct Region {
  volatile uint64_t* base = nullptr;
  uint64_t pages = 0;
  uint64_t tag = 0;
};

// A region's word w: its tag and index, never 0 (a fresh page's value).
uint64_t word_of(uint64_t tag, uint64_t w) { return mix(tag * 0x10001 + w) | 1; }

// The regions a thread made: its own, never touched by the other thread.
struct ThreadState {
  Ctx* c;
  Region r[kRegions];
};

Ctx* self() { return static_cast<Ctx*>(thread_self()->arg); }

#define CHECK_OP(kind, cond)                                                   \
  do {                                                                         \
    if (!(cond)) fail(c, kind, __LINE__);                                      \
  } while (0)

void fail(Ctx* c, Op kind, int line) {
  ++c->tally->bad[kind];
  if (!c->tally->first_bad_op) {
    c->tally->first_bad_op = c->op + 1;
    c->tally->first_bad_kind = kind;
    c->tally->first_bad_line = static_cast<uint32_t>(line);
  }
}

// The operation had nothing to work on (no region, not the break's
// thread, no /tmp): not counted as made.
void skip(Ctx* c, Op kind) { --c->tally->done[kind]; }

void fill(const Region& r) {
  for (uint64_t w = 0; w < r.pages * kWords; ++w) r.base[w] = word_of(r.tag, w);
}
uint64_t wrong_words(const Region& r) {
  uint64_t n = 0;
  for (uint64_t w = 0; w < r.pages * kWords; ++w) n += r.base[w] != word_of(r.tag, w);
  return n;
}

void segv(int) {
  Ctx* c = self();
  if (c->arm) {
    c->arm = 0;
    pvk_longjmp(&c->jmp, 1);
  }
  // An unexpected fault: said, then the thread's process dies as it would
  // have without a handler (the kernel reports the fault).
  printf("smpstress: unexpected SIGSEGV: seed %lu worker %u thread %u operation %lu\n", c->cfg->seed, c->worker,
         c->thread, c->op);
  sigaction(SIGSEGV, SIG_DFL);
}
void usr1(int) { self()->usr1 = self()->usr1 + 1; }

// A store into [p] must fault: true if it did (and changed nothing).
bool store_faults(Ctx* c, volatile uint64_t* p) {
  if (pvk_setjmp(&c->jmp)) return true;
  c->arm = 1;
  *p = 0xdead;
  c->arm = 0;
  return false;
}

Region* pick(ThreadState& t, bool mapped) {
  const unsigned start = static_cast<unsigned>(next(t.c->rng) % kRegions);
  for (unsigned k = 0; k < kRegions; ++k) {
    Region& r = t.r[(start + k) % kRegions];
    if ((r.base != nullptr) == mapped) return &r;
  }
  return nullptr;
}

void op_mmap_(ThreadState& t) {
  Ctx* c = t.c;
  Region* r = pick(t, false);
  if (!r) r = pick(t, true);  // all in use: replace one
  if (r->base) CHECK_OP(op_mmap, munmap(const_cast<uint64_t*>(r->base), r->pages * 4096) == 0);
  r->pages = 1 + next(c->rng) % kMaxPages;
  r->tag = next(c->rng);
  const int64_t a = mmap(nullptr, r->pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
  CHECK_OP(op_mmap, !is_err(a) && a % 4096 == 0);
  r->base = is_err(a) ? nullptr : reinterpret_cast<volatile uint64_t*>(a);
  if (!r->base) return;
  // A fresh mapping reads as zeros, whichever frame it gets next.
  for (uint64_t p = 0; p < r->pages; ++p) CHECK_OP(op_mmap, r->base[p * kWords + (r->tag % kWords)] == 0);
  fill(*r);
}

void op_munmap_(ThreadState& t) {
  Ctx* c = t.c;
  Region* r = pick(t, true);
  if (!r) return skip(c, op_munmap);
  CHECK_OP(op_munmap, wrong_words(*r) == 0);
  const uint64_t keep = next(c->rng) % r->pages;  // unmap the tail, keep the head
  // (Not again over the hole: the other thread may have mapped there since.)
  CHECK_OP(op_munmap, munmap(const_cast<uint64_t*>(r->base + keep * kWords), (r->pages - keep) * 4096) == 0);
  r->pages = keep;
  if (!keep) r->base = nullptr;
  else CHECK_OP(op_munmap, wrong_words(*r) == 0);
}

void op_mprotect_(ThreadState& t) {
  Ctx* c = t.c;
  Region* r = pick(t, true);
  if (!r) return skip(c, op_mprotect);
  const uint64_t first = next(c->rng) % r->pages, n = 1 + next(c->rng) % (r->pages - first);
  volatile uint64_t* p = r->base + first * kWords;
  CHECK_OP(op_mprotect, mprotect(const_cast<uint64_t*>(p), n * 4096, PROT_READ) == 0);
  const bool faulted = store_faults(c, p + (next(c->rng) % (n * kWords)));
  CHECK_OP(op_mprotect, faulted);
  c->tally->segv_expected += faulted;
  CHECK_OP(op_mprotect, wrong_words(*r) == 0);
  CHECK_OP(op_mprotect, mprotect(const_cast<uint64_t*>(p), n * 4096, PROT_READ | PROT_WRITE) == 0);
  p[0] = word_of(r->tag, first * kWords);  // writable again
}

void op_touch_(ThreadState& t) {
  Ctx* c = t.c;
  Region* r = pick(t, true);
  if (!r) return skip(c, op_touch);
  CHECK_OP(op_touch, wrong_words(*r) == 0);
  r->tag = next(c->rng);  // rewrite it all: write faults on COW pages after a fork
  fill(*r);
  CHECK_OP(op_touch, wrong_words(*r) == 0);
}

// The break is the process's: only the pinned thread moves it, and gives
// it back before the operation ends.
void op_brk_(ThreadState& t) {
  Ctx* c = t.c;
  if (c->thread != 0) return skip(c, op_brk);
  const int64_t cur = brk(nullptr);
  CHECK_OP(op_brk, cur > 0);
  if (cur <= 0) return;
  const uint64_t pages = 1 + next(c->rng) % 4;
  const uint64_t base = (static_cast<uint64_t>(cur) + 4095) & ~uint64_t{4095};
  const int64_t grown = brk(reinterpret_cast<void*>(base + pages * 4096));
  CHECK_OP(op_brk, grown == static_cast<int64_t>(base + pages * 4096));
  if (grown != static_cast<int64_t>(base + pages * 4096)) return;
  Region r{reinterpret_cast<volatile uint64_t*>(base), pages, next(c->rng)};
  fill(r);
  CHECK_OP(op_brk, wrong_words(r) == 0);
  CHECK_OP(op_brk, brk(reinterpret_cast<void*>(cur)) == cur);
}

// fork: the child checks its copy of every region and the one it was
// handed, rewrites one, and reports its own sum through a pipe; exit and
// wait. fork_kill: the child is killed wherever it is (before it ran, or
// in its work): the status says one or the other.
void op_fork_(ThreadState& t, bool kill_it) {
  Ctx* c = t.c;
  const Op kind = kill_it ? op_fork_kill : op_fork;
  int fds[2];
  CHECK_OP(kind, pipe(fds) == 0);
  const int64_t pid = fork();
  CHECK_OP(kind, pid >= 0);
  if (pid < 0) return;
  if (pid == 0) {
    uint64_t wrong = 0;
    for (Region& r : t.r)
      if (r.base) {
        wrong += wrong_words(r);
        r.tag = ~r.tag;
        fill(r);
        wrong += wrong_words(r);
      }
    write(fds[1], &wrong, sizeof wrong);
    exit(wrong ? 1 : 0);
  }
  close(fds[1]);
  if (kill_it) CHECK_OP(kind, kill(pid, SIGKILL) == 0);
  uint64_t wrong = ~0ull;
  const int64_t got = read_full(fds[0], &wrong, sizeof wrong);
  close(fds[0]);
  int st = 0;
  CHECK_OP(kind, wait4(pid, &st, 0) == pid);
  if (kill_it) {
    CHECK_OP(kind, st == wait_signaled(SIGKILL) || (st == wait_exited(0) && got == 8 && wrong == 0));
  } else {
    CHECK_OP(kind, st == wait_exited(0) && got == 8 && wrong == 0);
  }
  for (Region& r : t.r)
    if (r.base) CHECK_OP(kind, wrong_words(r) == 0);  // the child's stores stayed in its copies
}

struct Mini {
  volatile uint64_t out;
  uint64_t tag;
};
void mini_thread(void* arg) {
  Mini* m = static_cast<Mini*>(arg);
  const int64_t a = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
  if (is_err(a)) return;
  auto* p = reinterpret_cast<volatile uint64_t*>(a);
  for (uint64_t w = 0; w < kWords; ++w) p[w] = word_of(m->tag, w);
  uint64_t ok = 1;
  for (uint64_t w = 0; w < kWords; ++w) ok &= p[w] == word_of(m->tag, w);
  ok &= munmap(reinterpret_cast<void*>(a), 4096) == 0;
  m->out = ok ? m->tag : 0;
}

void op_thread_(ThreadState& t) {
  Ctx* c = t.c;
  Mini m{0, next(c->rng) | 1};
  Thread th;
  CHECK_OP(op_thread, thread_create(&th, mini_thread, &m, 16 * 1024) > 0);
  CHECK_OP(op_thread, thread_join(&th) == 0);
  CHECK_OP(op_thread, m.out == m.tag);
}

void op_pipe_(ThreadState& t) {
  Ctx* c = t.c;
  int fds[2];
  CHECK_OP(op_pipe, pipe(fds) == 0);
  uint8_t out[256], in[256];
  const uint64_t n = 1 + next(c->rng) % sizeof out;
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(next(c->rng));
  CHECK_OP(op_pipe, write(fds[1], out, n) == static_cast<int64_t>(n));
  CHECK_OP(op_pipe, read_full(fds[0], in, n) == static_cast<int64_t>(n) && memcmp(in, out, n) == 0);
  CHECK_OP(op_pipe, close(fds[1]) == 0);
  CHECK_OP(op_pipe, read(fds[0], in, 1) == 0);  // EOF: the writer is gone
  CHECK_OP(op_pipe, close(fds[0]) == 0);
}

void op_futex_(ThreadState& t) {
  Ctx* c = t.c;
  volatile uint32_t word = static_cast<uint32_t>(next(c->rng));
  CHECK_OP(op_futex, futex(&word, FUTEX_WAKE, 1) == 0);                 // nobody waits on a stack word
  CHECK_OP(op_futex, futex(&word, FUTEX_WAIT, word + 1) == -EAGAIN);   // the value differs
  const Timespec ts{0, static_cast<int64_t>(10'000 + next(c->rng) % 90'000)};
  CHECK_OP(op_futex, futex(&word, FUTEX_WAIT, word, &ts) == -ETIMEDOUT);
}

void op_signal_(ThreadState& t) {
  Ctx* c = t.c;
  const uint64_t before = c->usr1;
  // To this thread: taken before the call returns to it.
  CHECK_OP(op_signal, tgkill(getpid(), gettid(), SIGUSR1) == 0);
  CHECK_OP(op_signal, c->usr1 == before + 1);
  CHECK_OP(op_signal, kill(getpid(), 0) == 0);
  CHECK_OP(op_signal, kill(0x3fffffff, SIGUSR1) == -ESRCH);
}

void op_sleep_(ThreadState& t) {
  Ctx* c = t.c;
  const Timespec ts{0, static_cast<int64_t>(next(c->rng) % 200'000)};
  const uint64_t t0 = now_ns();
  CHECK_OP(op_sleep, nanosleep(&ts, nullptr) == 0);
  CHECK_OP(op_sleep, now_ns() - t0 >= static_cast<uint64_t>(ts.tv_nsec));
}

void op_ids_(ThreadState& t) {
  Ctx* c = t.c;
  const int64_t pid = getpid(), tid = gettid();
  CHECK_OP(op_ids, pid > 0 && tid > 0 && getppid() > 0);
  CHECK_OP(op_ids, tid != pid);  // both are threads the worker's main thread started
  uint32_t cpu = ~0u;
  CHECK_OP(op_ids, getcpu(&cpu, nullptr) == 0 && cpu < 64);
}

void op_clock_(ThreadState& t) {
  Ctx* c = t.c;
  Timespec ts{};
  CHECK_OP(op_clock, clock_gettime(CLOCK_MONOTONIC, &ts) == 0);
  const uint64_t ns = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
  CHECK_OP(op_clock, ns >= c->last_clock && ts.tv_nsec < 1'000'000'000);
  c->last_clock = ns;
}

// A file of its own in /tmp: written, read back at an offset, removed.
void op_file_(ThreadState& t) {
  Ctx* c = t.c;
  if (!c->cfg->files) return skip(c, op_file);
  char path[48];
  pvk::format(path, sizeof path, "/tmp/smpstress.%u.%u", c->worker, c->thread);
  const int64_t fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
  CHECK_OP(op_file, fd >= 0);
  if (fd < 0) return;
  uint8_t out[512], in[512];
  const uint64_t n = 1 + next(c->rng) % sizeof out, off = next(c->rng) % 8192;
  for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(next(c->rng));
  CHECK_OP(op_file, pwrite(static_cast<int>(fd), out, n, static_cast<int64_t>(off)) == static_cast<int64_t>(n));
  CHECK_OP(op_file, pread(static_cast<int>(fd), in, n, static_cast<int64_t>(off)) == static_cast<int64_t>(n));
  CHECK_OP(op_file, memcmp(in, out, n) == 0);
  CHECK_OP(op_file, close(static_cast<int>(fd)) == 0);
  CHECK_OP(op_file, unlink(path) == 0);
}

}  // namespace

void install_handlers() {
  sigaction(SIGSEGV, segv, kSaNodefer);
  sigaction(SIGUSR1, usr1);
}

void run_thread(void* arg) {
  ThreadState t;
  t.c = static_cast<Ctx*>(arg);
  Ctx* c = t.c;
  // The memory operations come most often: they are what runs without
  // the kernel lock; the rest keep the kernel lock's paths busy beside them.
  static const Op kWeights[] = {op_mmap,  op_mmap,  op_munmap, op_munmap, op_mprotect, op_mprotect, op_touch,
                                op_touch, op_brk,   op_fork,   op_fork_kill, op_thread, op_pipe,     op_futex,
                                op_signal, op_yield, op_sleep, op_ids,    op_clock,    op_file};
  constexpr unsigned kChoices = sizeof kWeights / sizeof kWeights[0];
  for (c->op = 0; c->op < c->cfg->ops; ++c->op) {
    const Op kind = kWeights[next(c->rng) % kChoices];
    ++c->tally->done[kind];
    switch (kind) {
      case op_mmap: op_mmap_(t); break;
      case op_munmap: op_munmap_(t); break;
      case op_mprotect: op_mprotect_(t); break;
      case op_touch: op_touch_(t); break;
      case op_brk: op_brk_(t); break;
      case op_fork: op_fork_(t, false); break;
      case op_fork_kill: op_fork_(t, true); break;
      case op_thread: op_thread_(t); break;
      case op_pipe: op_pipe_(t); break;
      case op_futex: op_futex_(t); break;
      case op_signal: op_signal_(t); break;
      case op_yield: CHECK_OP(op_yield, sched_yield() == 0); break;
      case op_sleep: op_sleep_(t); break;
      case op_ids: op_ids_(t); break;
      case op_clock: op_clock_(t); break;
      case op_file: op_file_(t); break;
      default: break;
    }
  }
  for (Region& r : t.r)
    if (r.base) {
      CHECK_OP(op_munmap, wrong_words(r) == 0);
      CHECK_OP(op_munmap, munmap(const_cast<uint64_t*>(r.base), r.pages * 4096) == 0);
    }
  c->tally->finished = 1;
}

}  // namespace smpstress
