// tlb_*: what a stale TLB entry on another CPU would let through.
// Threads of one process run on other CPUs and keep using a region while
// the main thread changes its mapping; once the call returns, no CPU may
// still reach the old translation:
//  - tlb_mprotect: writers keep storing while the region becomes read-only:
//    after mprotect returns, no store may land (each writer's next store
//    faults); made writable again, every store lands;
//  - tlb_cow_fork: a thread keeps storing into a private page while the main
//    thread forks: the child's copy must not change after the fork (a
//    writable entry left on the writer's CPU would store into the frame the
//    child now shares);
//  - tlb_munmap: readers keep reading while the region is unmapped and its
//    frames are handed out again: they fault, and never read what the new
//    owner writes;
//  - tlb_lazy: a thread stores into a page and exits, so its CPU idles with
//    the space still loaded (lazy TLB) and the writable entry cached; the
//    page becomes read-only (a flush that may skip the lazy CPU); a new
//    thread — taken by that idle CPU — must fault on its first store: the
//    CPU caught up when it came back to the space. A CPU only idles when
//    nothing else can run: proctest's runner polls for the test process
//    (always runnable), so it takes 3 CPUs (runner, main thread, the
//    storers') for the lazy case to happen; with 2 it still must pass.
// On one CPU these hold trivially (the threads take turns on the CPU that
// changes the mapping); with several, they fail without TLB shootdown.
#include "bench/libc/thread.h"
#include "harness.h"

namespace proctest {
namespace {

constexpr unsigned kWorkers = 3;
constexpr uint64_t kWordsPerPage = 4096 / 8;
constexpr uint64_t kWaitNs = 10ull * 1000 * 1000 * 1000;  // bound of every wait (TCG under Xen is slow)

// Which worker a thread is: its thread_create argument.
unsigned worker_index() { return *static_cast<unsigned*>(thread_self()->arg); }

unsigned g_index[kWorkers] = {0, 1, 2};


// The kernel's shootdown count (pvk's counter syscall; -1 on Linux): a
// test reports how many its call made, so a boot test can tell a race that
// crossed CPUs (the threads ran elsewhere) from one on a single CPU.
int64_t shootdowns_now() {
  PvkCounters c{};
  return read_counters(&c) == 0 ? static_cast<int64_t>(c.shootdowns) : -1;
}
void detail_shootdowns(const char* key, int64_t before) {
  const int64_t after = shootdowns_now();
  if (before >= 0 && after >= 0) detail(key, after - before);
}

// A worker's SIGSEGV ends that worker, noting it faulted (the handler runs
// in the faulting thread).
volatile uint32_t g_faulted[kWorkers];
void worker_segv(int) {
  g_faulted[worker_index()] = 1;
  thread_exit(0);
}

bool all_faulted() {
  for (unsigned i = 0; i < kWorkers; ++i)
    if (!g_faulted[i]) return false;
  return true;
}

void reset_faulted() {
  for (unsigned i = 0; i < kWorkers; ++i) g_faulted[i] = 0;
}

// --- tlb_mprotect ------------------------------------------------------------

struct StoreRace {
  volatile uint64_t* region;  // one page per worker
  volatile uint32_t stop;
  volatile uint64_t stores[kWorkers];  // stores that completed (counted after each)
  uint64_t limit;                      // 0: until stop or a fault
  // tlb_lazy: the CPU a storer first stores on (where it ran), and the
  // CPU the next storer must store on (-1: wherever it was taken).
  volatile uint32_t ran_on;
  int pin_cpu = -1;
};
StoreRace g_sr;
uint64_t g_snapshot[kWorkers * kWordsPerPage];

void storer(void*) {
  const unsigned i = worker_index();
  volatile uint64_t* slot = g_sr.region + i * kWordsPerPage;
  if (g_sr.pin_cpu >= 0) {
    // Onto that CPU before the first store, wherever the thread was taken.
    const uint64_t mask = uint64_t{1} << g_sr.pin_cpu;
    sched_setaffinity(0, sizeof mask, &mask);
    uint32_t cpu = ~0u;
    // Until it runs there, or the main thread gives up waiting (stop).
    while (!g_sr.stop && getcpu(&cpu, nullptr) == 0 && cpu != static_cast<uint32_t>(g_sr.pin_cpu)) sched_yield();
  }
  uint32_t cpu = 0;
  if (getcpu(&cpu, nullptr) == 0) g_sr.ran_on = cpu;
  for (uint64_t n = 1; !g_sr.stop && (g_sr.limit == 0 || n <= g_sr.limit); ++n) {
    slot[n % kWordsPerPage] = pattern(i + 1, n);
    g_sr.stores[i] = n;
  }
}

bool all_stored(uint64_t at_least) {
  for (unsigned i = 0; i < kWorkers; ++i)
    if (g_sr.stores[i] < at_least) return false;
  return true;
}

}  // namespace

void test_tlb_mprotect() {
  const uint64_t len = kWorkers * 4096;
  g_sr.region = static_cast<volatile uint64_t*>(map_anon(len));
  CHECK(g_sr.region != nullptr);
  if (!g_sr.region) return;
  CHECK_EQ(sigaction(SIGSEGV, worker_segv, kSaNodefer), 0);
  reset_faulted();
  Thread t[kWorkers];
  for (unsigned i = 0; i < kWorkers; ++i) CHECK(thread_create(&t[i], storer, &g_index[i]) > 0);
  // Every writer has stored for a while: its CPU holds the writable entry.
  CHECK(wait_until([] { return all_stored(10000); }, kWaitNs));

  const int64_t shootdowns_before = shootdowns_now();
  CHECK_EQ(mprotect(const_cast<uint64_t*>(g_sr.region), len, PROT_READ), 0);
  uint64_t at_return[kWorkers];
  for (unsigned i = 0; i < kWorkers; ++i) at_return[i] = g_sr.stores[i];
  for (uint64_t w = 0; w < kWorkers * kWordsPerPage; ++w) g_snapshot[w] = g_sr.region[w];
  detail_shootdowns("shootdowns", shootdowns_before);

  // Each writer's next store faults ...
  const bool faulted = wait_until(all_faulted, kWaitNs);
  CHECK(faulted);
  if (!faulted) g_sr.stop = 1;  // writers still storing: stop them, so they can be joined
  // ... and none landed after mprotect returned: at most the one a writer
  // had made but not yet counted when the call returned.
  uint64_t late_stores = 0, changed_words = 0;
  for (unsigned i = 0; i < kWorkers; ++i)
    if (g_sr.stores[i] > at_return[i] + 1) late_stores += g_sr.stores[i] - at_return[i] - 1;
  for (uint64_t w = 0; w < kWorkers * kWordsPerPage; ++w)
    if (g_sr.region[w] != g_snapshot[w]) ++changed_words;
  CHECK_EQ(late_stores, 0);
  CHECK_EQ(changed_words, 0);
  for (unsigned i = 0; i < kWorkers; ++i) CHECK_EQ(thread_join(&t[i]), 0);

  // Writable again: every store of new writers lands.
  CHECK_EQ(mprotect(const_cast<uint64_t*>(g_sr.region), len, PROT_READ | PROT_WRITE), 0);
  reset_faulted();
  g_sr.limit = 3 * kWordsPerPage;
  for (unsigned i = 0; i < kWorkers; ++i) g_sr.stores[i] = 0;
  for (unsigned i = 0; i < kWorkers; ++i) CHECK(thread_create(&t[i], storer, &g_index[i]) > 0);
  for (unsigned i = 0; i < kWorkers; ++i) CHECK_EQ(thread_join(&t[i]), 0);
  uint64_t wrong = 0;
  for (unsigned i = 0; i < kWorkers; ++i) {
    CHECK_EQ(g_faulted[i], 0);
    CHECK_EQ(g_sr.stores[i], g_sr.limit);
    // The last pass wrote every word of the page: n from 2·512+1 to 3·512.
    for (uint64_t n = g_sr.limit - kWordsPerPage + 1; n <= g_sr.limit; ++n)
      if (g_sr.region[i * kWordsPerPage + n % kWordsPerPage] != pattern(i + 1, n)) ++wrong;
  }
  CHECK_EQ(wrong, 0);
  detail("stores_before_mprotect", static_cast<int64_t>(at_return[0] + at_return[1] + at_return[2]));
  CHECK_EQ(munmap(const_cast<uint64_t*>(g_sr.region), len), 0);
}

// --- tlb_cow_fork ------------------------------------------------------------

namespace {

struct CowRace {
  volatile uint64_t* page;
  volatile uint32_t stop;
  volatile uint64_t stores;
  // In a MAP_SHARED page (the child's copy of the rest is frozen at the
  // fork): set by the parent once the writer has stored since the fork.
  volatile uint32_t* writer_went_on;
};
CowRace g_cr;

void cow_writer(void*) {
  for (uint64_t n = 1; !g_cr.stop; ++n) {
    g_cr.page[n % kWordsPerPage] = n;
    g_cr.stores = n;
  }
}

// The child: its copy of the page is the parent's at the fork and must stay
// so while the parent's thread keeps storing into the parent's copy.
void cow_child_reads() {
  uint64_t first[kWordsPerPage];
  for (uint64_t w = 0; w < kWordsPerPage; ++w) first[w] = g_cr.page[w];
  uint64_t changed = 0;
  const uint64_t t0 = now_ns();
  // At least 50 ms, and until the writer has stored since the fork: under
  // TCG on a loaded host its CPU may not run for a while, and the race needs
  // it storing while this copy is watched (bounded by kWaitNs).
  auto watching = [&] {
    const uint64_t t = now_ns() - t0;
    return t < 50ull * 1000 * 1000 || (!*g_cr.writer_went_on && t < kWaitNs);
  };
  while (watching())
    for (uint64_t w = 0; w < kWordsPerPage; ++w)
      if (g_cr.page[w] != first[w]) ++changed;
  CHECK_EQ(changed, 0);
  helper_exit();
}

}  // namespace

void test_tlb_cow_fork() {
  g_cr.page = static_cast<volatile uint64_t*>(map_anon(4096));
  CHECK(g_cr.page != nullptr);
  if (!g_cr.page) return;
  g_cr.page[0] = 0;
  g_cr.writer_went_on =
      static_cast<volatile uint32_t*>(map_anon(4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  CHECK(g_cr.writer_went_on != nullptr);
  if (!g_cr.writer_went_on) return;
  *g_cr.writer_went_on = 0;
  Thread t;
  CHECK(thread_create(&t, cow_writer, &g_index[0]) > 0);
  CHECK(wait_until([] { return g_cr.stores > 10000; }, kWaitNs));
  const uint64_t at_fork = g_cr.stores;
  const int64_t shootdowns_before = shootdowns_now();
  const int64_t pid = fork_helper();
  if (pid == 0) cow_child_reads();
  detail_shootdowns("shootdowns", shootdowns_before);
  CHECK(pid > 0);
  // The writer goes on storing while the child watches (the race happens).
  CHECK(wait_until([at_fork] { return g_cr.stores > at_fork; }, kWaitNs));
  *g_cr.writer_went_on = 1;
  if (pid > 0) CHECK_EQ(WAIT_OR_KILL(pid, 20), ::pvk::abi::wait_exited(0));
  CHECK(g_cr.stores > at_fork);
  g_cr.stop = 1;
  CHECK_EQ(thread_join(&t), 0);
  // The parent's copy has the writer's last store.
  CHECK_EQ(g_cr.page[g_cr.stores % kWordsPerPage], g_cr.stores);
  CHECK_EQ(munmap(const_cast<uint64_t*>(g_cr.page), 4096), 0);
  CHECK_EQ(munmap(const_cast<uint32_t*>(g_cr.writer_went_on), 4096), 0);
}

// --- tlb_munmap --------------------------------------------------------------

namespace {

constexpr uint64_t kUnmapPages = 16;
constexpr uint64_t kOld = 0x01d01d01d01d01d0ull, kNew = 0x0e70e70e70e70e70ull;

struct ReadRace {
  volatile uint64_t* region;
  volatile uint64_t reads[kWorkers];
  volatile uint64_t bad[kWorkers];  // a value that was never the region's
};
ReadRace g_rr;

void reader(void*) {
  const unsigned i = worker_index();
  for (uint64_t n = 1;; ++n) {
    for (uint64_t p = 0; p < kUnmapPages; ++p) {
      const uint64_t v = g_rr.region[p * kWordsPerPage + (n + i) % kWordsPerPage];
      if (v != kOld) g_rr.bad[i] = v;
    }
    g_rr.reads[i] = n;
  }
}

}  // namespace

void test_tlb_munmap() {
  const uint64_t len = kUnmapPages * 4096;
  g_rr.region = static_cast<volatile uint64_t*>(map_anon(len));
  // The next owner of the frames, mapped now (so at another address) and
  // touched only after the munmap (so its frames are the ones just freed).
  auto* next = static_cast<volatile uint64_t*>(map_anon(len));
  CHECK(g_rr.region != nullptr && next != nullptr);
  if (!g_rr.region || !next) return;
  for (uint64_t w = 0; w < kUnmapPages * kWordsPerPage; ++w) g_rr.region[w] = kOld;
  CHECK_EQ(sigaction(SIGSEGV, worker_segv, kSaNodefer), 0);
  reset_faulted();
  Thread t[kWorkers];
  for (unsigned i = 0; i < kWorkers; ++i) CHECK(thread_create(&t[i], reader, &g_index[i]) > 0);
  CHECK(wait_until([] {
    for (unsigned i = 0; i < kWorkers; ++i)
      if (g_rr.reads[i] < 100) return false;
    return true;
  }, kWaitNs));

  const int64_t shootdowns_before = shootdowns_now();
  CHECK_EQ(munmap(const_cast<uint64_t*>(g_rr.region), len), 0);
  detail_shootdowns("shootdowns", shootdowns_before);
  for (uint64_t w = 0; w < kUnmapPages * kWordsPerPage; ++w) next[w] = kNew;

  const bool faulted = wait_until(all_faulted, kWaitNs);
  CHECK(faulted);
  for (unsigned i = 0; i < kWorkers; ++i) {
    CHECK_EQ(g_rr.bad[i], 0);
    // A reader that never faulted reads on: the test process' exit_group ends it.
    if (faulted) CHECK_EQ(thread_join(&t[i]), 0);
  }
  if (!faulted) return;
  CHECK_EQ(munmap(const_cast<uint64_t*>(next), len), 0);
}

// --- tlb_lazy ----------------------------------------------------------------

namespace {

constexpr unsigned kLazyRounds = 4;

// The kernel's lazy-TLB counters (zero on Linux, where the call fails).
struct LazyCounts {
  int64_t skipped = 0, catchups = 0;
};
LazyCounts lazy_counts() {
  PvkCounters c{};
  if (read_counters(&c) != 0) return {};
  return {static_cast<int64_t>(c.shootdown_lazy_skipped), static_cast<int64_t>(c.tlb_lazy_catchups)};
}

// Waits like wait_until, but without giving up the CPU and mostly without
// entering the kernel (the clock is read every 64Ki polls): the main
// thread keeps its CPU busy in user mode, so a new thread is taken by the
// idle CPU (a yield would hand it this CPU instead).
template <typename Pred>
bool spin_until(Pred pred) {
  const uint64_t t0 = now_ns();
  for (uint64_t n = 1; !pred(); ++n)
    if (n % 65536 == 0 && now_ns() - t0 > kWaitNs) return false;
  return true;
}

// Runs one storer (worker 0) for `limit` stores into g_sr.region while the
// main thread spins on its own CPU. False if it neither finished nor
// faulted in time.
bool run_one_storer(uint64_t limit) {
  g_sr.limit = limit;
  g_sr.stores[0] = 0;
  g_faulted[0] = 0;
  Thread t;
  if (thread_create(&t, storer, &g_index[0]) <= 0) return false;
  const bool done = spin_until([limit] { return g_faulted[0] || g_sr.stores[0] >= limit; });
  if (!done) g_sr.stop = 1;
  CHECK_EQ(thread_join(&t), 0);
  g_sr.stop = 0;
  return done;
}

}  // namespace

void test_tlb_lazy() {
  g_sr.region = static_cast<volatile uint64_t*>(map_anon(4096));
  CHECK(g_sr.region != nullptr);
  if (!g_sr.region) return;
  CHECK_EQ(sigaction(SIGSEGV, worker_segv, kSaNodefer), 0);
  const LazyCounts before = lazy_counts();
  const int64_t shootdowns_before = shootdowns_now();
  uint64_t late_stores = 0;
  for (unsigned round = 0; round < kLazyRounds; ++round) {
    CHECK_EQ(mprotect(const_cast<uint64_t*>(g_sr.region), 4096, PROT_READ | PROT_WRITE), 0);
    // A storer caches the writable entry on its CPU and exits: that CPU
    // idles, the space's root still loaded.
    CHECK(run_one_storer(20000));
    CHECK_EQ(g_faulted[0], 0);
    // The main thread's CPU caches the writable entry too: whichever CPU
    // the main thread runs on after the join, the idle one holds it.
    g_sr.region[1] = pattern(9, round);
    // Let the other CPU reach its idle loop before the change.
    spin_until([t0 = now_ns()] { return now_ns() - t0 > 2ull * 1000 * 1000; });
    CHECK_EQ(mprotect(const_cast<uint64_t*>(g_sr.region), 4096, PROT_READ), 0);
    // A new storer, on the CPU that went idle (pinned there: a CPU
    // polling or ticking could take the new thread first): its first
    // store must fault, and that CPU caught up when it came back to the
    // space.
    g_sr.pin_cpu = static_cast<int>(g_sr.ran_on);
    CHECK(run_one_storer(64));
    g_sr.pin_cpu = -1;
    CHECK_EQ(g_faulted[0], 1);
    late_stores += g_sr.stores[0];
  }
  CHECK_EQ(late_stores, 0);
  const LazyCounts after = lazy_counts();
  detail_shootdowns("shootdowns", shootdowns_before);
  detail("lazy_skipped", after.skipped - before.skipped);
  detail("lazy_catchups", after.catchups - before.catchups);
  CHECK_EQ(munmap(const_cast<uint64_t*>(g_sr.region), 4096), 0);
}

}  // namespace proctest
