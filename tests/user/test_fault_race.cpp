// fault_race: several threads fault the same pages, and their neighbours, of
// one region at the same moment (page faults run without the kernel
// lock, serialised per address space). Whatever order the faults resolve in,
// each page must end up with one frame that every thread's stores reached:
//  - phase 1, fresh memory: each thread visits every page, some pages read
//    first (a zero-page map racing another thread's write fault), the others
//    written at once, each thread in its own order and to its own words;
//  - phase 2, COW after fork: the region is shared copy-on-write with a child;
//    the parent's threads all write the same pages again (several COW breaks
//    of one page at once) while the child's threads do the same to its copy.
// Every thread then checks every page: its own words and every other
// thread's. A page that got two frames loses one thread's stores; a COW break
// that copied from the wrong frame shows the other side's values. Frames
// return to their baseline when the test ends (the boot tests' leak check).
#include "bench/libc/thread.h"
#include "harness.h"

namespace proctest {
namespace {

constexpr unsigned kThreads = 4;  // racing threads (the main thread starts them, then waits)
constexpr uint64_t kPages = 48;
constexpr uint64_t kWordsPerPage = 4096 / 8;
constexpr uint64_t kWaitNs = 20ull * 1000 * 1000 * 1000;  // bound of every wait (TCG under Xen is slow)

// A thread's words in a page: word i*kStride + 0 .. kStride-1; phase tags
// the value, so phase 2's values differ from phase 1's in every word.
constexpr uint64_t kStride = 8;
uint64_t value_of(uint64_t side, uint64_t phase, unsigned thread, uint64_t page, uint64_t word) {
  return pattern(side * 1000 + phase * 100 + thread, page * kWordsPerPage + word);
}

struct Race {
  volatile uint64_t* region;
  uint64_t side;   // 1: the parent, 2: the child (its values after the fork)
  uint64_t phase;  // 1: fresh memory, 2: after the fork
  volatile uint32_t go;
  volatile uint32_t done;  // threads finished writing
  volatile uint64_t zero_reads_bad[kThreads];  // a first read that saw neither 0 nor a value of this phase
  volatile uint64_t wrong[kThreads];           // words found wrong in the final check
};
Race g_race;
unsigned g_index[kThreads] = {0, 1, 2, 3};

unsigned worker_index() { return *static_cast<unsigned*>(thread_self()->arg); }

bool wait_until_ns(uint64_t bound, volatile uint32_t* flag, uint32_t want) {
  const uint64_t t0 = now_ns();
  while (*flag < want) {
    if (now_ns() - t0 > bound) return false;
    asm volatile("pause");
  }
  return true;
}

// Whether v is a value some thread of this side/phase writes into page p (or
// one the page held before: 0 when fresh, the parent's phase-1 values after
// the fork).
bool plausible(uint64_t v, uint64_t page, uint64_t word) {
  if (g_race.phase == 1 && v == 0) return true;
  const unsigned owner = static_cast<unsigned>(word / kStride);
  if (owner >= kThreads) return v == 0;
  if (v == value_of(g_race.side, g_race.phase, owner, page, word)) return true;
  return g_race.phase == 2 && v == value_of(1, 1, owner, page, word);
}

void racer(void*) {
  const unsigned me = worker_index();
  while (!g_race.go) asm volatile("pause");
  // Every thread walks the pages from its own starting point, so at any
  // moment two threads are on the same page or on neighbours.
  for (uint64_t n = 0; n < kPages; ++n) {
    const uint64_t p = (n + me * (kPages / 2)) % kPages;  // two threads start at each page
    volatile uint64_t* page = g_race.region + p * kWordsPerPage;
    if ((p + me) % 3 == 0) {
      // A read first (a zero-page map, or a read of the COW frame), racing
      // the others' write faults on the same page.
      const uint64_t w = (me * kStride + 7 + p) % kWordsPerPage;
      if (!plausible(page[w], p, w)) g_race.zero_reads_bad[me] = g_race.zero_reads_bad[me] + 1;
    }
    for (uint64_t k = 0; k < kStride; ++k) page[me * kStride + k] = value_of(g_race.side, g_race.phase, me, p, me * kStride + k);
  }
  __atomic_fetch_add(&g_race.done, 1, __ATOMIC_SEQ_CST);
  // All stores are in; now every thread checks every page.
  if (!wait_until_ns(kWaitNs, &g_race.done, kThreads)) {
    g_race.wrong[me] = ~0ull;
    return;
  }
  uint64_t wrong = 0;
  for (uint64_t p = 0; p < kPages; ++p)
    for (unsigned t = 0; t < kThreads; ++t)
      for (uint64_t k = 0; k < kStride; ++k)
        if (g_race.region[p * kWordsPerPage + t * kStride + k] != value_of(g_race.side, g_race.phase, t, p, t * kStride + k))
          ++wrong;
  g_race.wrong[me] = wrong;
}

// One race: kThreads threads on the region, started together; the counts
// of wrong words and implausible reads, summed.
struct Outcome {
  uint64_t wrong = 0;
  uint64_t bad_reads = 0;
  bool joined = true;
};
Outcome run_race(uint64_t side, uint64_t phase) {
  g_race.side = side;
  g_race.phase = phase;
  g_race.go = 0;
  g_race.done = 0;
  for (unsigned i = 0; i < kThreads; ++i) {
    g_race.wrong[i] = 0;
    g_race.zero_reads_bad[i] = 0;
  }
  Thread t[kThreads];
  Outcome o;
  unsigned made = 0;
  for (unsigned i = 0; i < kThreads; ++i)
    if (thread_create(&t[i], racer, &g_index[i]) > 0) ++made;
  if (made != kThreads) {
    o.joined = false;
    g_race.go = 1;
    return o;
  }
  __atomic_store_n(&g_race.go, 1, __ATOMIC_SEQ_CST);
  for (unsigned i = 0; i < kThreads; ++i) o.joined &= thread_join(&t[i]) == 0;
  for (unsigned i = 0; i < kThreads; ++i) o.wrong += g_race.wrong[i], o.bad_reads += g_race.zero_reads_bad[i];
  return o;
}

// The child after the fork: its own threads race on its COW copy, then it
// checks that the copy is its own throughout.
void child_races() {
  const Outcome o = run_race(2, 2);
  CHECK(o.joined);
  CHECK_EQ(o.wrong, 0);
  CHECK_EQ(o.bad_reads, 0);
  helper_exit();
}

}  // namespace

void test_fault_race() {
  // A few rounds on fresh regions: each race is short, and a lost one shows
  // up only when two faults really met.
  constexpr unsigned kRounds = 3;
  const uint64_t len = kPages * 4096;
  uint64_t fresh_wrong = 0, cow_wrong = 0;
  for (unsigned round = 0; round < kRounds; ++round) {
    g_race.region = static_cast<volatile uint64_t*>(map_anon(len));
    CHECK(g_race.region != nullptr);
    if (!g_race.region) return;

    const Outcome fresh = run_race(1, 1);
    CHECK(fresh.joined);
    CHECK_EQ(fresh.wrong, 0);
    CHECK_EQ(fresh.bad_reads, 0);
    fresh_wrong += fresh.wrong;

    // Phase 2: the pages are COW-shared with a child; both sides race their
    // threads' COW breaks on the same pages at the same time.
    const int64_t pid = fork_helper();
    if (pid == 0) child_races();
    CHECK(pid > 0);
    const Outcome cow = run_race(1, 2);
    CHECK(cow.joined);
    CHECK_EQ(cow.wrong, 0);
    CHECK_EQ(cow.bad_reads, 0);
    cow_wrong += cow.wrong;
    if (pid > 0) CHECK_EQ(WAIT_OR_KILL(pid, 60), ::pvk::abi::wait_exited(0));
    CHECK_EQ(munmap(const_cast<uint64_t*>(g_race.region), len), 0);
  }
  detail("fresh_wrong", static_cast<int64_t>(fresh_wrong));
  detail("cow_wrong", static_cast<int64_t>(cow_wrong));
}

}  // namespace proctest
