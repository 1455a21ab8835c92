// The SMP scaling benchmarks: how page faults and a token pass scale
// across threads.
//
//   fault_threads     the main thread and K threads each write-fault N fresh pages
//   ctx_threads       a token passed round a ring of 1 + K threads by futex
//
// The same static binary runs on Linux (clone, futex: the Linux ABI).
#include "bench/smp_threads.h"

namespace bench {

using namespace smp;

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
