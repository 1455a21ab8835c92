// A lifetime child (sysfuzz_lifetimes.h): threads of one process doing
// random pipe / close / dup2 / read / write / futex / sleep / clone / exit
// on one descriptor table at once, and the check of every byte they read.
//
// Tags. Every write carries 8-byte tags {magic, slot, pid, serial, wop}:
// the writing process (its slot in the run and its pid), the pipe the
// writer believed it wrote into (a serial per pipe() of this process) and
// the write (wop, an index into this process's write log). Reads and
// writes are whole tags: pvk's pipe is 4096 bytes and moves bytes in
// chunks bounded by the free or filled space and the call's length, all
// multiples of 8 here, so a tag is never split; a read of a length that
// is not a multiple of 8 is a failure (torn_reads).
//
// The checks. A tag of another process (other slot or pid, or no magic)
// is a cross-object leak: foreign_bytes, a failure. A tag of ours must
// come from a pipe the reader could hold: the table changes only under
// one user mutex (pipe, close, dup2, the release), each change numbered
// (op k sets gen to 2k-1 before its call and 2k after) and logged per
// descriptor; a reader reads gen before and after its call, a writer
// before (in its write-log entry). A descriptor may meanwhile have named
// its state after the last op done by the first load and what every op
// begun by the second put there; the reader's and the writer's sets must
// share a pipe, the tag's serial be in the writer's, else: stray_bytes,
// a failure. However threads interleave, this never cries wolf; it cannot
// see a stale call read a new pipe of its own process on the same number
// — other processes' pipes, reusing the kernel's slots, catch that.
//
// How a blocked thread is released: sysfuzz_lifetimes.cpp's header.
#include "bench/libc/thread.h"
#include "bench/libc/user.h"
#include "base/lib/format.h"
#include "sysfuzz_common.h"
#include "sysfuzz_lifetimes.h"

namespace sysfuzz {
namespace {

using namespace pvk::user;

constexpr int kFirstFd = 3, kFds = 16;  // pvk's descriptors per process; 0..2 (the console) are left alone
constexpr unsigned kWords = 4;          // futex words
constexpr unsigned kMaxWorkers = 2 * kMaxLifetimeThreads;
constexpr uint32_t kMaxWrites = 65536;  // wop is 16 bits
constexpr uint8_t kMagic = 0xA7;
enum : uint8_t { kEmpty = 0, kRead = 1, kWrite = 2 };
constexpr uint64_t kMaxWriteLen = 6144, kMaxReadLen = 8192;  // a write longer than the pipe blocks

struct Tag {
  uint8_t magic, slot;
  uint16_t pid, serial, wop;
};
static_assert(sizeof(Tag) == 8);

struct LogEntry {
  uint32_t op;
  uint8_t fd, end;
  uint16_t serial;
};
struct WriteRec {
  uint64_t gen0;
  uint16_t serial;
  uint8_t fd;
  volatile uint8_t valid;
};

struct Worker {
  Thread t;
  uint64_t seed;
  volatile uint32_t state;  // 0 being started, 1 started, 2 failed to start
};

struct State {
  LifetimeSlot* slot;
  unsigned index;
  int64_t pid;
  uint64_t ops_per_thread;
  Mutex table;                     // held across every change of the descriptor table
  volatile uint32_t mirror[kFds];  // serial | end << 16, as the table is now
  volatile uint64_t gen;
  uint32_t op;        // table ops so far
  uint16_t serials;   // pipes made so far
  LogEntry* log;
  volatile uint32_t log_n;
  uint32_t log_cap;
  volatile bool log_full;
  WriteRec* wlog;
  volatile uint32_t wlog_n;
  volatile uint32_t words[kWords];
  volatile int32_t running, blocked;
  volatile uint32_t release_asked;  // by the parent's SIGUSR2
  Worker workers[kMaxWorkers];
  volatile uint32_t nworkers;
  uint32_t max_workers;
};
State g;

void count(Counter c, uint64_t n = 1) { __atomic_fetch_add(&g.slot->counts[c], n, __ATOMIC_RELAXED); }
uint64_t gen_now() { return __atomic_load_n(&g.gen, __ATOMIC_SEQ_CST); }
uint8_t end_of(uint32_t m) { return static_cast<uint8_t>(m >> 16); }
uint16_t serial_of(uint32_t m) { return static_cast<uint16_t>(m); }
uint32_t mirror(int fd) { return __atomic_load_n(&g.mirror[fd], __ATOMIC_SEQ_CST); }

// The first misbehaviour is kept for the record; the run goes on and counts.
void bug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void bug(const char* fmt, ...) {
  if (__atomic_exchange_n(&g.slot->bug, 1u, __ATOMIC_SEQ_CST)) return;
  va_list ap;
  va_start(ap, fmt);
  pvk::vformat(g.slot->bug_msg, sizeof g.slot->bug_msg, fmt, ap);
  va_end(ap);
}

void on_kick(int) {
  count(c_kicks);
  if (getpid() == gettid()) g.release_asked = 1;  // the parent's watchdog (it signals the process)
}

// --- The table: every change under the mutex, numbered and logged. ---------

struct TableOp {
  uint32_t k;
  TableOp() {
    mutex_lock(&g.table);
    k = ++g.op;
    __atomic_store_n(&g.gen, 2ull * k - 1, __ATOMIC_SEQ_CST);
  }
  ~TableOp() {
    __atomic_store_n(&g.gen, 2ull * k, __ATOMIC_SEQ_CST);
    mutex_unlock(&g.table);
  }
  void set(int fd, uint16_t serial, uint8_t end) const {
    __atomic_store_n(&g.mirror[fd], serial | uint32_t{end} << 16, __ATOMIC_SEQ_CST);
    const uint32_t n = g.log_n;
    if (n == g.log_cap) {
      g.log_full = true;
      return;
    }
    g.log[n] = LogEntry{k, static_cast<uint8_t>(fd), end, serial};
    __atomic_store_n(&g.log_n, n + 1, __ATOMIC_RELEASE);
  }
};

// The pipes (by serial) whose `end` descriptor fd may have been between a
// load of gen that saw g0 and a later one that saw g1.
struct Cand {
  uint16_t s[24];
  unsigned n = 0;
  bool any = false;  // not bounded (the log is full, or too many): the check is skipped
  bool has(uint16_t v) const {
    for (unsigned i = 0; i < n; ++i)
      if (s[i] == v) return true;
    return any;
  }
  void add(uint16_t v) {
    if (has(v)) return;
    if (n == sizeof s / sizeof s[0]) any = true;
    else s[n++] = v;
  }
};

void candidates(int fd, uint64_t g0, uint64_t g1, uint8_t end, Cand& c) {
  const uint64_t k0 = g0 / 2, kmax = (g1 + 1) / 2;
  // Op kmax may still be logging: it holds the mutex until it is done.
  if (gen_now() < 2 * kmax) {
    mutex_lock(&g.table);
    mutex_unlock(&g.table);
  }
  if (g.log_full) {
    c.any = true;
    return;
  }
  const uint32_t n = __atomic_load_n(&g.log_n, __ATOMIC_ACQUIRE);
  bool based = false;
  LogEntry base{};  // fd's state after op k0
  for (uint32_t i = 0; i < n; ++i) {
    const LogEntry& e = g.log[i];
    if (e.op > kmax) break;  // the log is in op order
    if (e.fd != fd) continue;
    if (e.op <= k0)
      base = e, based = true;
    else if (e.end == end)
      c.add(e.serial);
  }
  if (based && base.end == end) c.add(base.serial);
}

// True if some op began on fd between the two loads of gen (the call raced
// a change of its own descriptor); from the log's recent end.
bool raced(int fd, uint64_t g0, uint64_t g1) {
  if (g0 == g1) return false;
  const uint64_t k0 = g0 / 2, kmax = (g1 + 1) / 2;
  for (uint32_t i = __atomic_load_n(&g.log_n, __ATOMIC_ACQUIRE); i-- > 0;) {
    if (g.log[i].op <= k0) break;
    if (g.log[i].op <= kmax && g.log[i].fd == fd) return true;
  }
  return false;
}

// --- Reads and their check. --------------------------------------------------

// Could the tag's bytes have reached the reader of fd (between g0 and g1)?
enum class Verdict { ok, unchecked, stray };
Verdict ours_here(int fd, const Tag& t, uint64_t g0, uint64_t g1, Cand& r, bool& have_r) {
  if (t.wop >= __atomic_load_n(&g.wlog_n, __ATOMIC_ACQUIRE)) return Verdict::stray;
  const WriteRec& w = g.wlog[t.wop];
  if (!__atomic_load_n(&w.valid, __ATOMIC_ACQUIRE) || w.serial != t.serial) return Verdict::stray;
  if (!have_r) candidates(fd, g0, g1, kRead, r), have_r = true;
  Cand c;
  candidates(w.fd, w.gen0, g1, kWrite, c);  // the writer's lookup came before our read returned
  if (t.serial && !c.has(t.serial)) return Verdict::stray;
  if (r.any || c.any) return Verdict::unchecked;
  for (unsigned i = 0; i < c.n; ++i)
    if (r.has(c.s[i])) return Verdict::ok;
  return Verdict::stray;
}

void check_read(int fd, const uint8_t* buf, uint64_t n, uint64_t g0, uint64_t g1) {
  count(c_bytes_read, n);
  if (n % sizeof(Tag)) {
    count(c_torn_reads);
    bug("read %lu bytes from fd %d: not whole 8-byte tags", n, fd);
  }
  Cand r;
  bool have_r = false;
  Verdict last = Verdict::stray;
  uint32_t last_wop = ~0u;
  for (uint64_t at = 0; at + sizeof(Tag) <= n; at += sizeof(Tag)) {
    Tag t;
    memcpy(&t, buf + at, sizeof t);
    if (t.magic != kMagic || t.slot != g.index || t.pid != static_cast<uint16_t>(g.pid)) {
      count(c_foreign_bytes, sizeof t);
      bug("fd %d read another process's bytes: tag magic 0x%x slot %u pid %u pipe %u write %u (we are slot %u pid %ld)",
          fd, t.magic, t.slot, t.pid, t.serial, t.wop, g.index, g.pid);
      continue;
    }
    count(c_tagged_bytes, sizeof t);
    if (t.wop != last_wop) last_wop = t.wop, last = ours_here(fd, t, g0, g1, r, have_r);
    if (last == Verdict::unchecked) count(c_unchecked_bytes, sizeof t);
    if (last == Verdict::stray) {
      count(c_stray_bytes, sizeof t);
      bug("fd %d read bytes of pipe %u (write %u) it cannot hold there (gen %lu..%lu)", fd, t.serial, t.wop, g0, g1);
    }
  }
}

// A descriptor: mostly one whose end is `want` now (kEmpty: a free
// number), else any of the table's numbers.
int pick_fd(Rng& rng, uint8_t want, bool live = false) {
  if (!rng.one_in(5)) {
    int c[kFds], n = 0;
    for (int fd = kFirstFd; fd < kFds; ++fd) {
      const uint8_t e = end_of(mirror(fd));
      if (live ? e != kEmpty : e == want) c[n++] = fd;
    }
    if (n) return c[rng.below(n)];
  }
  return kFirstFd + static_cast<int>(rng.below(kFds - kFirstFd));
}

uint64_t tags_len(Rng& rng, uint64_t max) {
  const uint64_t pick = rng.below(10);
  const uint64_t len = pick < 6 ? 8 + rng.below(256) : pick < 9 ? 256 + rng.below(2048) : 4096 + rng.below(max - 4096);
  return len / sizeof(Tag) * sizeof(Tag);
}

void do_read(Rng& rng) {
  uint8_t buf[kMaxReadLen];
  const int fd = pick_fd(rng, kRead);
  const uint64_t len = tags_len(rng, kMaxReadLen);
  const uint64_t g0 = gen_now();
  __atomic_fetch_add(&g.blocked, 1, __ATOMIC_SEQ_CST);
  const int64_t r = read(fd, buf, len);
  __atomic_fetch_sub(&g.blocked, 1, __ATOMIC_SEQ_CST);
  const uint64_t g1 = gen_now();
  count(c_read);
  if (raced(fd, g0, g1)) count(c_raced_calls);
  if (r > 0 && static_cast<uint64_t>(r) <= len) return check_read(fd, buf, static_cast<uint64_t>(r), g0, g1);
  if (r == 0) return count(c_read_eof);
  if (r == -EBADF) return count(c_ebadf);
  if (r == -EINTR) return count(c_eintr);
  bug("read(%d, %lu) returned %ld", fd, len, r);
}

void do_write(Rng& rng) {
  uint8_t buf[kMaxWriteLen];
  const int fd = pick_fd(rng, kWrite);
  const uint64_t len = tags_len(rng, kMaxWriteLen);
  const uint32_t wop = __atomic_fetch_add(&g.wlog_n, 1u, __ATOMIC_SEQ_CST);
  if (wop >= kMaxWrites) return;  // past what a tag can name: not made
  WriteRec& w = g.wlog[wop];
  w.gen0 = gen_now();  // before the belief, and before the call looks fd up
  const uint32_t m = mirror(fd);
  w.serial = end_of(m) == kWrite ? serial_of(m) : 0;
  w.fd = static_cast<uint8_t>(fd);
  __atomic_store_n(&w.valid, uint8_t{1}, __ATOMIC_SEQ_CST);
  const Tag t{kMagic, uint8_t(g.index), uint16_t(g.pid), w.serial, uint16_t(wop)};
  for (uint64_t at = 0; at < len; at += sizeof t) memcpy(buf + at, &t, sizeof t);
  __atomic_fetch_add(&g.blocked, 1, __ATOMIC_SEQ_CST);
  const int64_t r = write(fd, buf, len);
  __atomic_fetch_sub(&g.blocked, 1, __ATOMIC_SEQ_CST);
  count(c_write);
  if (raced(fd, w.gen0, gen_now())) count(c_raced_calls);
  if (r > 0 && static_cast<uint64_t>(r) <= len) {
    if (r % sizeof t) bug("write(%d, %lu) moved %ld bytes: not whole tags", fd, len, r);
    return count(c_bytes_written, static_cast<uint64_t>(r));
  }
  if (r == -EPIPE) return count(c_write_epipe);
  if (r == -EBADF) return count(c_ebadf);
  if (r == -EINTR) return count(c_eintr);
  bug("write(%d, %lu) returned %ld", fd, len, r);
}

// --- Table changes, each checked against the table as we know it. ---------

void do_pipe() {
  count(c_pipe);
  TableOp op;
  int want[2] = {-1, -1};  // pvk and Linux both give the two lowest free numbers
  for (int fd = kFirstFd, n = 0; fd < kFds && n < 2; ++fd)
    if (end_of(mirror(fd)) == kEmpty) want[n++] = fd;
  int p[2] = {-1, -1};
  const int64_t r = pipe(p);
  if (r == -EMFILE) return count(c_pipe_emfile);  // no numbers left, or the kernel's pipes are all in use
  if (r != 0 || p[0] != want[0] || p[1] != want[1]) {
    bug("pipe returned %ld, fds %d %d (want %d %d)", r, p[0], p[1], want[0], want[1]);
    if (r != 0 || p[0] < kFirstFd || p[0] >= kFds || p[1] < kFirstFd || p[1] >= kFds) return;
  }
  if (++g.serials == 0) ++g.serials;  // serial 0 names no pipe
  op.set(p[0], g.serials, kRead);
  op.set(p[1], g.serials, kWrite);
}

void do_close(Rng& rng) {
  count(c_close);
  const int fd = pick_fd(rng, kEmpty, true);
  TableOp op;
  const bool open = end_of(mirror(fd)) != kEmpty;
  const int64_t r = close(fd);
  if (r != (open ? 0 : -EBADF)) bug("close(%d) returned %ld, the descriptor being %s", fd, r, open ? "open" : "free");
  if (open) op.set(fd, 0, kEmpty);
}

void do_dup2(Rng& rng) {
  count(c_dup2);
  const int from = pick_fd(rng, kEmpty, true);
  const int to = rng.one_in(10) ? from : rng.one_in(2) ? pick_fd(rng, kEmpty) : pick_fd(rng, kEmpty, true);
  TableOp op;
  const uint32_t m = mirror(from);
  const int64_t r = dup2(from, to);
  const int64_t want = end_of(m) == kEmpty ? -EBADF : to;
  if (r != want) bug("dup2(%d, %d) returned %ld, want %ld", from, to, r, want);
  if (r == to && want == to && from != to) op.set(to, serial_of(m), end_of(m));
}

// Every live thread blocked and nothing moving: signal them, or (every
// other time) close the whole table.
void release() {
  const uint64_t n = __atomic_fetch_add(&g.slot->counts[c_releases], 1, __ATOMIC_RELAXED);
  if (n % 2 == 0) {
    for (uint32_t i = 0; i < __atomic_load_n(&g.nworkers, __ATOMIC_SEQ_CST); ++i) {
      const int32_t tid = g.workers[i].t.tid;
      if (g.workers[i].state == 1 && tid > 0) tgkill(g.pid, tid, kSigUsr2);  // a gone thread: ESRCH
    }
    return;
  }
  TableOp op;
  for (int fd = kFirstFd; fd < kFds; ++fd) {
    if (end_of(mirror(fd)) == kEmpty) continue;
    if (const int64_t r = close(fd); r != 0) bug("release: close(%d) returned %ld", fd, r);
    op.set(fd, 0, kEmpty);
  }
}

// --- Threads. -----------------------------------------------------------------

void one_op(Rng& rng);

void worker_main(void* arg) {
  auto* w = static_cast<Worker*>(arg);
  Rng rng{w->seed};
  for (uint64_t i = 0; i < g.ops_per_thread; ++i) one_op(rng), count(c_ops);
  __atomic_fetch_sub(&g.running, 1, __ATOMIC_SEQ_CST);
}

// Starts a thread in the next worker slot, if any is left.
void start_worker(uint64_t seed) {
  uint32_t i = __atomic_load_n(&g.nworkers, __ATOMIC_SEQ_CST);
  do {
    if (i >= g.max_workers) return;
  } while (!__atomic_compare_exchange_n(&g.nworkers, &i, i + 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  Worker& w = g.workers[i];
  w.seed = seed;
  __atomic_fetch_add(&g.running, 1, __ATOMIC_SEQ_CST);  // before it can end: running counts it
  const int64_t tid = thread_create(&w.t, worker_main, &w);
  if (tid <= 0) {
    __atomic_store_n(&w.state, 2u, __ATOMIC_SEQ_CST);
    __atomic_fetch_sub(&g.running, 1, __ATOMIC_SEQ_CST);
    if (tid != -EAGAIN && tid != -ENOMEM) bug("thread_create returned %ld", tid);
    return;
  }
  __atomic_store_n(&w.state, 1u, __ATOMIC_SEQ_CST);
  count(c_threads_started);
}

void do_futex_wait(Rng& rng) {
  count(c_futex_wait);
  volatile uint32_t* word = &g.words[rng.below(kWords)];
  const uint32_t now = *word, expect = rng.one_in(4) ? now + 1 : now;  // a stale value: EAGAIN
  const Timespec ts{0, static_cast<int64_t>(rng.below(2000001))};       // 0-2 ms
  const int64_t r = futex(word, FUTEX_WAIT | (rng.one_in(2) ? FUTEX_PRIVATE_FLAG : 0), expect, &ts);
  if (r == 0) return count(c_futex_woken);
  if (r == -ETIMEDOUT) return count(c_futex_timedout);
  if (r != -EAGAIN && r != -EINTR) bug("futex wait returned %ld", r);
}

void do_futex_wake(Rng& rng) {
  count(c_futex_wake);
  volatile uint32_t* word = &g.words[rng.below(kWords)];
  __atomic_fetch_add(word, 1u, __ATOMIC_SEQ_CST);
  const int64_t r = futex(word, FUTEX_WAKE | (rng.one_in(2) ? FUTEX_PRIVATE_FLAG : 0), 1 + rng.below(3));
  if (r < 0 || r > static_cast<int64_t>(kMaxWorkers)) bug("futex wake returned %ld", r);
}

void do_sleep(Rng& rng) {
  count(c_sleep);
  const Timespec ts{0, static_cast<int64_t>(rng.below(1000001))};  // 0-1 ms
  Timespec rem;
  const int64_t r = rng.one_in(2) ? nanosleep(&ts, &rem) : clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr);
  if (r != 0 && r != -EINTR) bug("sleep returned %ld", r);
}

// One random operation (in thousandths); a thread may end early in one.
void one_op(Rng& rng) {
  const uint64_t x = rng.below(1000);
  if (x < 90) do_pipe();
  else if (x < 200) do_close(rng);
  else if (x < 290) do_dup2(rng);
  else if (x < 500) do_read(rng);
  else if (x < 710) do_write(rng);
  else if (x < 800) do_futex_wait(rng);
  else if (x < 890) do_futex_wake(rng);
  else if (x < 930) do_sleep(rng);
  else if (x < 970) count(c_spawn), start_worker(mix(rng.next()));
  else if (x < 998) sched_yield();
  else {
    count(c_thread_exit), count(c_ops);
    __atomic_fetch_sub(&g.running, 1, __ATOMIC_SEQ_CST);
    thread_exit(0);
  }
}

}  // namespace

void lifetime_child(LifetimeSlot* slot, unsigned index, uint64_t seed, const LifetimeConfig& cfg) {
  g.slot = slot;
  g.index = index;
  g.pid = getpid();
  g.ops_per_thread = cfg.ops;
  g.max_workers = static_cast<uint32_t>(2 * cfg.threads);
  // Every table change logs at most two entries (a release: one per descriptor).
  g.log_cap = static_cast<uint32_t>(4 * g.max_workers * cfg.ops + 64 * kFds);
  g.log = static_cast<LogEntry*>(map_anon(g.log_cap * sizeof(LogEntry)));
  g.wlog = static_cast<WriteRec*>(map_anon(kMaxWrites * sizeof(WriteRec)));
  if (!g.log || !g.wlog) {
    bug("cannot map the logs");
    exit_group(3);
  }
  sigaction(SIGPIPE, SIG_IGN);  // a write without readers: EPIPE
  sigaction(kSigUsr2, on_kick);
  for (int fd = kFirstFd; fd < kFds; ++fd) close(fd);  // whatever the parent left: the table starts empty
  for (uint64_t i = 0; i < cfg.threads; ++i) start_worker(mix(seed + i + 1));
  // Until every thread has ended: release the blocked ones when nothing moves.
  uint64_t last = ~0ull;
  unsigned still = 0;
  while (__atomic_load_n(&g.running, __ATOMIC_SEQ_CST) > 0) {
    const Timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
    const uint64_t ops = slot->counts[c_ops];
    const bool stuck = __atomic_load_n(&g.blocked, __ATOMIC_SEQ_CST) >= __atomic_load_n(&g.running, __ATOMIC_SEQ_CST);
    still = stuck && ops == last ? still + 1 : 0;
    last = ops;
    if (still >= 2 || g.release_asked) {
      g.release_asked = 0;
      still = 0;
      release();
    }
  }
  for (uint32_t i = 0; i < g.nworkers; ++i) {
    if (g.workers[i].state != 1) continue;
    if (const int64_t r = thread_join(&g.workers[i].t); r != 0) bug("thread_join returned %ld", r);
    count(c_threads_joined);
  }
  if (slot->counts[c_threads_joined] != slot->counts[c_threads_started])
    bug("%lu threads started, %lu joined", slot->counts[c_threads_started], slot->counts[c_threads_joined]);
  slot->finished = 1;
  exit_group(0);
}

}  // namespace sysfuzz
