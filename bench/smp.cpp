// The SMP benchmarks: what other CPUs running the same address space
// cost a page-table operation (TLB shootdown), and how page faults and a
// token pass scale across threads.
//
//   mprotect_threads  mprotect RW->RO->RW of N pages while K threads read them
//   munmap_threads    mmap + touch + munmap of N pages while K threads spin
//   fork_threads      fork + child exit + wait of a process with K threads
//   fault_threads     the main thread and K threads each write-fault N fresh pages
//   ctx_threads       a token passed round a ring of 1 + K threads by futex
//
// The background threads (bench/libc/thread.h) are started before the first
// rep and run until the parameter set ends; the main thread waits until each
// has begun its loop, so their CPUs hold the address space live while the
// timed operation runs. They call sched_yield every few thousand accesses:
// while pvk runs every thread on the boot CPU (one vCPU, or before the
// scheduler runs threads on the others) the timed thread then gets the CPU
// back within a fraction of a slice instead of after each spinner's whole
// 10 ms slice; on a CPU of its own, a yield with nothing else to run returns
// at once. `thread_touches` (extra field) counts the accesses the threads
// made during the parameter set: how much they ran.
//
// With more than one CPU, the threads are pinned where the kernel lets a
// thread choose (Linux: sched_setaffinity; see Placement below).
//
// The same static binary runs on Linux (clone, futex: the Linux ABI).
#include "bench/bench.h"
#include "bench/libc/thread.h"

namespace bench {
namespace {

constexpr uint64_t kWordsPerPage = kPage / 8;
constexpr uint64_t kMaxThreads = 15;  // pvk: 64 process slots; threads take them too
constexpr uint64_t kYieldEvery = 4096;

// CPU placement. On Linux a new thread may stay on its creator's CPU (the
// measured K = 1, 1 page case: the reader ran one pass in the whole set),
// so the threads are pinned: the main thread to CPU 0, thread i to CPU
// (i + 1) mod the CPUs it may use, the main thread's mask restored at the
// end of the set. pvk has no sched_setaffinity (-ENOSYS): nothing is
// pinned there and its scheduler places the threads. Linux x86-64 system
// call numbers; the mask is one 64-bit word (CPUs 0..63).
constexpr uint64_t kSysSchedSetaffinity = 203, kSysSchedGetaffinity = 204;

struct Placement {
  uint64_t saved = 0;  // the main thread's mask before the set (0: not pinned)
  unsigned cpus = 1;   // CPUs in it
};

unsigned nth_cpu(uint64_t mask, unsigned n) {
  for (unsigned c = 0, seen = 0; c < 64; ++c)
    if (mask >> c & 1) {
      if (seen == n) return c;
      ++seen;
    }
  return 0;
}

int64_t pin_self(unsigned cpu) {
  const uint64_t mask = 1ull << cpu;
  return syscall3(kSysSchedSetaffinity, 0, sizeof mask, reinterpret_cast<uint64_t>(&mask));
}

// Pins the main thread to the first CPU of its mask (more than one CPU only).
Placement place_main() {
  Placement p;
  uint64_t mask = 0;
  if (syscall3(kSysSchedGetaffinity, 0, sizeof mask, reinterpret_cast<uint64_t>(&mask)) <= 0 || mask == 0) return p;
  p.cpus = static_cast<unsigned>(__builtin_popcountll(mask));
  if (p.cpus > 1 && pin_self(nth_cpu(mask, 0)) == 0) p.saved = mask;
  return p;
}

// In thread `index` (0-based): its CPU, the (index + 1)-th of the mask, round robin.
void place_thread(const Placement& p, unsigned index) {
  if (p.saved) pin_self(nth_cpu(p.saved, (index + 1) % p.cpus));
}

void unplace_main(const Placement& p) {
  if (p.saved) syscall3(kSysSchedSetaffinity, 0, sizeof p.saved, reinterpret_cast<uint64_t>(&p.saved));
}

enum class Work {
  Read,   // load one word of each page of the shared region, round and round
  Write,  // store to the thread's own page (other memory of the process)
};

struct Crew;

struct Worker {
  Crew* crew = nullptr;
  Thread thread{};
  uint64_t* own = nullptr;  // Work::Write: this thread's page
  volatile uint64_t touches = 0;
};

// K background threads running one kind of work until stopped.
struct Crew {
  Work work = Work::Read;
  uint64_t* region = nullptr;  // Work::Read
  uint64_t pages = 0;
  volatile uint32_t stop = 0;
  volatile uint32_t running = 0;  // threads that have begun their loop
  Worker w[kMaxThreads];
  unsigned n = 0;
  uint64_t* own_pages = nullptr;  // one page per thread (Work::Write)
  uint64_t own_count = 0;
  Placement placement;
};

void crew_loop(void* arg) {
  Worker* me = static_cast<Worker*>(arg);
  Crew* c = me->crew;
  place_thread(c->placement, static_cast<unsigned>(me - c->w));
  __atomic_add_fetch(&c->running, 1u, __ATOMIC_ACQ_REL);
  uint64_t n = 0, i = 0;
  while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
    for (uint64_t k = 0; k < kYieldEvery; ++k) {
      if (c->work == Work::Read) {
        (void)peek(c->region + i * kWordsPerPage);
        if (++i == c->pages) i = 0;
      } else {
        poke(me->own, n + k);
      }
    }
    n += kYieldEvery;
    me->touches = n;
    sched_yield();
  }
}

// Starts k threads; false (r failed) if one could not be created.
bool crew_start(Run& r, Crew& c, unsigned k) {
  if (k > kMaxThreads) return r.fail("threads must be 0..%lu", kMaxThreads);
  c.stop = 0;
  c.running = 0;
  c.n = 0;
  c.placement = k ? place_main() : Placement{};
  // Every set maps (and writes) the threads' pages for the most threads,
  // whatever k: the same mappings around the timed ones at every k, so
  // that page tables the timed operation empties are not freed and
  // reallocated at k = 0 only (pvk frees an emptied table at munmap).
  c.own_pages = map_pages_or_fail(r, kMaxThreads);
  if (!c.own_pages) return false;
  c.own_count = kMaxThreads;
  for (uint64_t i = 0; i < kMaxThreads; ++i) poke(c.own_pages + i * kWordsPerPage, i);
  for (unsigned t = 0; t < k; ++t) {
    Worker& w = c.w[t];
    w = Worker{};
    w.crew = &c;
    if (c.own_pages) w.own = c.own_pages + t * kWordsPerPage;
    const int64_t tid = thread_create(&w.thread, crew_loop, &w);
    if (tid < 0) return r.fail("thread_create %u returned %ld", t, tid);
    ++c.n;
  }
  // Every thread in its loop, and past its first pass (a thread placed on
  // an idle CPU may take milliseconds to get going there: measured on
  // Linux with -smp 2 under -icount, a reader that made one pass in a
  // whole 3 ms parameter set), before the first rep.
  while (__atomic_load_n(&c.running, __ATOMIC_ACQUIRE) < c.n) sched_yield();
  for (unsigned t = 0; t < c.n; ++t)
    while (c.w[t].touches < 2 * kYieldEvery) sched_yield();
  return true;
}

// Stops and joins the threads; reports their accesses.
void crew_stop(Run& r, Crew& c) {
  __atomic_store_n(&c.stop, 1u, __ATOMIC_RELEASE);
  uint64_t touches = 0;
  for (unsigned t = 0; t < c.n; ++t) {
    if (int64_t e = thread_join(&c.w[t].thread); e != 0) r.fail("thread_join %u returned %ld", t, e);
    touches += c.w[t].touches;
  }
  if (c.own_pages) munmap(c.own_pages, c.own_count * kPage);
  c.own_pages = nullptr;
  c.n = 0;
  unplace_main(c.placement);
  c.placement = Placement{};
  r.extra("thread_touches", touches);
}

// loops= as given, or (0) about budget / pages, from 1 to cap; the record
// shows the count used, and each loop is one op.
uint64_t loops_param(Run& r, uint64_t pages, uint64_t budget, uint64_t cap) {
  uint64_t loops = r.p("loops");
  if (loops == 0) {
    loops = budget / pages;
    if (loops < 1) loops = 1;
    if (loops > cap) loops = cap;
  }
  r.set_p("loops", loops);
  r.ops = loops;
  return loops;
}

}  // namespace

// ---------------------------------------------------------------------------
// mprotect_threads: `loops` x (mprotect RO, mprotect RW) of `pages` present,
// dirty pages while `threads` threads keep reading them (a read never
// faults at either protection): with the address space live on other CPUs
// each change must reach their TLBs (the shootdown per mprotect).

void run_mprotect_threads(Run& r) {
  const uint64_t pages = r.p("pages"), threads = r.p("threads");
  if (!pages_or_fail(r, pages)) return;
  const uint64_t loops = loops_param(r, pages, 16384, 200);
  // The region between two PROT_NONE guard pages: a neighbouring mapping
  // with the same protection (the threads' stacks or pages) would let
  // Linux merge the region into it at RW and split it again at RO, a cost
  // that would depend on K through the layout, not on the CPUs.
  const uint64_t len = pages * kPage, guarded = len + 2 * kPage;
  const int64_t m = mmap(nullptr, guarded, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS);
  if (is_err(m)) {
    r.fail("mmap of %lu pages returned %ld", pages + 2, m);
    return;
  }
  uint64_t* region = reinterpret_cast<uint64_t*>(m + static_cast<int64_t>(kPage));
  if (int64_t e = mprotect(region, len, PROT_READ | PROT_WRITE); e != 0) {
    r.fail("mprotect RW of the region returned %ld", e);
    munmap(reinterpret_cast<void*>(m), guarded);
    return;
  }
  for (uint64_t i = 0; i < pages; ++i) poke(region + i * kWordsPerPage, pattern(5, i));

  static Crew c;
  c.work = Work::Read;
  c.region = region;
  c.pages = pages;
  if (crew_start(r, c, static_cast<unsigned>(threads))) {
    time_mprotect_cycles(r, region, len, loops);
  }
  crew_stop(r, c);
  for (uint64_t i = 0; i < pages && !r.failed(); i += (pages > 64 ? pages / 64 : 1)) {
    uint64_t* w = region + i * kWordsPerPage;
    if (peek(w) != pattern(5, i)) r.fail("page %lu lost its data", i);
    poke(w, 0);  // writable again
  }
  if (r.ns.n) r.extra("per_page", r.ns.median() / r.ops / pages);
  if (int64_t e = munmap(reinterpret_cast<void*>(m), guarded); e != 0) r.fail("munmap returned %ld", e);
}

// ---------------------------------------------------------------------------
// munmap_threads: `loops` x (mmap `pages` pages, write one word to each,
// munmap) while `threads` threads spin writing their own pages: the unmap's
// flush must reach the CPUs the address space is live on.

void run_munmap_threads(Run& r) {
  const uint64_t pages = r.p("pages"), threads = r.p("threads");
  if (!pages_or_fail(r, pages)) return;
  const uint64_t loops = loops_param(r, pages, 4096, 100);
  static Crew c;
  c.work = Work::Write;
  if (crew_start(r, c, static_cast<unsigned>(threads))) {
    for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
      r.start();
      for (uint64_t l = 0; l < loops && !r.failed(); ++l) {
        uint64_t* region = map_pages_or_fail(r, pages);
        if (!region) break;
        for (uint64_t i = 0; i < pages; ++i) poke(region + i * kWordsPerPage, i + 1);
        if (int64_t e = munmap(region, pages * kPage); e != 0) r.fail("munmap returned %ld", e);
      }
      r.stop();
    }
  }
  crew_stop(r, c);
}

// ---------------------------------------------------------------------------
// fork_threads: fork of a process that has `pages` dirty pages and
// `threads` more threads running (writing their own pages, so fork's
// write-protection of them must reach their CPUs); the child exits at once,
// the parent waits. One fork per rep; the pages are dirtied again (untimed)
// before each.

void run_fork_threads(Run& r) {
  const uint64_t pages = r.p("pages"), threads = r.p("threads");
  if (!pages_or_fail(r, pages)) return;
  uint64_t* region = map_pages_or_fail(r, pages);
  if (!region) return;
  static Crew c;
  c.work = Work::Write;
  if (crew_start(r, c, static_cast<unsigned>(threads))) {
    for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
      for (uint64_t i = 0; i < pages; ++i) poke(region + i * kWordsPerPage, pattern(rep, i));
      r.start();
      const int64_t pid = fork();
      if (pid == 0) {
        // Only the forking thread is in the child: its copy must be intact.
        const bool ok = peek(region) == pattern(rep, 0) && peek(region + (pages - 1) * kWordsPerPage) == pattern(rep, pages - 1);
        exit_group(ok ? 0 : 3);
      }
      if (pid < 0) {
        r.stop();
        r.fail("fork returned %ld", pid);
        break;
      }
      const int st = wait_child(r, pid);
      r.stop();
      if (st > 0) r.fail("child saw wrong data (status 0x%x)", st);
    }
  }
  crew_stop(r, c);
  if (int64_t e = munmap(region, pages * kPage); e != 0) r.fail("munmap returned %ld", e);
}

// ---------------------------------------------------------------------------
// fault_threads: page-fault scalability. Each rep maps 1 + `threads` slices
// of `pages` fresh pages (untimed); the main thread and `threads` threads
// then each write one word to every page of its own slice at once (write
// faults: allocate + clear, in one address space). per_op = the rep's time /
// every fault taken ((1 + threads) x pages): with perfect scaling on enough
// CPUs it falls as 1 / (1 + threads); on one CPU it stays the single
// thread's figure plus the switches.

namespace {

struct FaultCrew {
  volatile uint32_t gen = 0;   // bumped to start a rep (or to stop)
  uint32_t start_gen = 0;      // gen when this parameter set's threads were made
  volatile uint32_t done = 0;  // threads finished with this rep
  volatile uint32_t stop = 0;
  uint64_t* region = nullptr;
  uint64_t pages = 0;
  unsigned n = 0;
  Thread t[kMaxThreads];
  unsigned index[kMaxThreads];
  Placement placement;
};
FaultCrew g_fc;

void fault_slice(uint64_t* slice, uint64_t pages, uint64_t tag) {
  for (uint64_t i = 0; i < pages; ++i) poke(slice + i * kWordsPerPage, pattern(tag, i));
}

void fault_loop(void* arg) {
  const unsigned me = *static_cast<unsigned*>(arg);
  place_thread(g_fc.placement, me);
  // Not 0: gen carries on from earlier parameter sets, and a thread that
  // took an old value for a new rep would fault on a region not yet mapped
  // (seen on two CPUs, where the thread runs before the first rep is set).
  uint32_t seen = g_fc.start_gen;
  for (;;) {
    uint32_t g;
    while ((g = __atomic_load_n(&g_fc.gen, __ATOMIC_ACQUIRE)) == seen)
      futex(&g_fc.gen, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, seen);
    seen = g;
    if (__atomic_load_n(&g_fc.stop, __ATOMIC_ACQUIRE)) return;
    fault_slice(g_fc.region + (me + 1) * g_fc.pages * kWordsPerPage, g_fc.pages, me + 1);
    if (__atomic_add_fetch(&g_fc.done, 1u, __ATOMIC_ACQ_REL) == g_fc.n)
      futex(&g_fc.done, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1);
  }
}

void fault_go() {
  __atomic_add_fetch(&g_fc.gen, 1u, __ATOMIC_ACQ_REL);
  futex(&g_fc.gen, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 0x7fffffff);
}

}  // namespace

void run_fault_threads(Run& r) {
  const uint64_t pages = r.p("pages"), threads = r.p("threads");
  if (!pages_or_fail(r, pages)) return;
  if (threads > kMaxThreads) {
    r.fail("threads must be 0..%lu", kMaxThreads);
    return;
  }
  const uint64_t slices = 1 + threads;
  r.ops = slices * pages;
  g_fc.stop = 0;
  g_fc.done = 0;
  g_fc.n = 0;
  g_fc.pages = pages;
  g_fc.region = nullptr;
  g_fc.placement = threads ? place_main() : Placement{};
  g_fc.start_gen = __atomic_load_n(&g_fc.gen, __ATOMIC_ACQUIRE);
  for (unsigned t = 0; t < threads; ++t) {
    g_fc.index[t] = t;
    const int64_t tid = thread_create(&g_fc.t[t], fault_loop, &g_fc.index[t]);
    if (tid < 0) {
      r.fail("thread_create %u returned %ld", t, tid);
      break;
    }
    ++g_fc.n;
  }
  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    uint64_t* region = map_pages_or_fail(r, slices * pages);
    if (!region) break;
    g_fc.region = region;
    __atomic_store_n(&g_fc.done, 0u, __ATOMIC_RELEASE);
    r.start();
    fault_go();
    fault_slice(region, pages, 0);
    uint32_t d;
    while ((d = __atomic_load_n(&g_fc.done, __ATOMIC_ACQUIRE)) < g_fc.n)
      futex(&g_fc.done, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, d);
    r.stop();
    // Every slice holds its writer's pattern (untimed).
    for (uint64_t s = 0; s < slices && !r.failed(); ++s)
      for (uint64_t i = 0; i < pages; i += (pages > 16 ? pages / 16 : 1))
        if (peek(region + (s * pages + i) * kWordsPerPage) != pattern(s, i)) {
          r.fail("slice %lu page %lu lost its write", s, i);
          break;
        }
    if (int64_t e = munmap(region, slices * pages * kPage); e != 0) r.fail("munmap returned %ld", e);
  }
  __atomic_store_n(&g_fc.stop, 1u, __ATOMIC_RELEASE);
  fault_go();
  for (unsigned t = 0; t < g_fc.n; ++t)
    if (int64_t e = thread_join(&g_fc.t[t]); e != 0) r.fail("thread_join %u returned %ld", t, e);
  unplace_main(g_fc.placement);
  r.extra("faulters", slices);
}

// ---------------------------------------------------------------------------
// ctx_threads: a token passed `iters` times round a ring of 1 + `threads`
// threads of one process (threads=1: a ping-pong between two; threads=0:
// the main thread passes it to itself, the same calls without a switch, the
// overhead to subtract). Each thread
// sleeps in FUTEX_WAIT on its own word until the previous one sets it and
// wakes it: per hop a wake, a switch (or a cross-CPU wake-up when the two
// threads are on different CPUs) and a return from the wait. The threads
// analogue of ctx (which passes it between processes over pipes); per_op is
// one hop.

namespace {

struct Ring {
  volatile uint32_t flag[kMaxThreads + 1];
  volatile uint32_t stop = 0;
  unsigned size = 0;
  Thread t[kMaxThreads];
  unsigned index[kMaxThreads + 1];
  Placement placement;
};
Ring g_ring;

void ring_pass(unsigned to) {
  __atomic_store_n(&g_ring.flag[to], 1u, __ATOMIC_RELEASE);
  futex(&g_ring.flag[to], FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1);
}

void ring_wait(unsigned me) {
  while (__atomic_load_n(&g_ring.flag[me], __ATOMIC_ACQUIRE) == 0)
    futex(&g_ring.flag[me], FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0);
  __atomic_store_n(&g_ring.flag[me], 0u, __ATOMIC_RELAXED);
}

void ring_loop(void* arg) {
  const unsigned me = *static_cast<unsigned*>(arg);
  const unsigned next = (me + 1) % g_ring.size;
  place_thread(g_ring.placement, me - 1);  // thread 1 on the main thread's neighbour CPU
  for (;;) {
    ring_wait(me);
    const bool stop = __atomic_load_n(&g_ring.stop, __ATOMIC_ACQUIRE);
    if (!stop || next != 0) ring_pass(next);  // on stop: pass it on so every thread ends
    if (stop) return;
  }
}

}  // namespace

void run_ctx_threads(Run& r) {
  const uint64_t threads = r.p("threads"), iters = r.p("iters");
  if (threads > kMaxThreads) {
    r.fail("threads must be 0..%lu", kMaxThreads);
    return;
  }
  g_ring.size = static_cast<unsigned>(threads + 1);
  g_ring.stop = 0;
  for (auto& f : g_ring.flag) f = 0;
  r.ops = iters * g_ring.size;
  g_ring.placement = threads ? place_main() : Placement{};
  unsigned started = 0;
  for (unsigned t = 0; t < threads; ++t) {
    g_ring.index[t] = t + 1;
    const int64_t tid = thread_create(&g_ring.t[t], ring_loop, &g_ring.index[t]);
    if (tid < 0) {
      r.fail("thread_create %u returned %ld", t, tid);
      break;
    }
    ++started;
  }
  const unsigned first = 1 % g_ring.size;  // the main thread's successor (itself when alone)
  if (started == threads) {
    // One warm-up round, then the reps.
    ring_pass(first);
    ring_wait(0);
    for (unsigned rep = 0; rep < r.reps; ++rep) {
      r.start();
      for (uint64_t i = 0; i < iters; ++i) {
        ring_pass(first);
        ring_wait(0);
      }
      r.stop();
    }
  }
  __atomic_store_n(&g_ring.stop, 1u, __ATOMIC_RELEASE);
  if (started == threads) {
    if (threads) ring_pass(1);
  } else
    for (unsigned t = 0; t < started; ++t) ring_pass(t + 1);  // partial ring: wake each to see stop
  for (unsigned t = 0; t < started; ++t)
    if (int64_t e = thread_join(&g_ring.t[t]); e != 0) r.fail("thread_join %u returned %ld", t, e);
  unplace_main(g_ring.placement);
}

}  // namespace bench
