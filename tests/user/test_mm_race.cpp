// mm_race_*: the mm calls and page faults that run without the kernel
// lock (docs/locking.md), raced by threads and processes pinned to
// different CPUs. Each check is about the moment a call returned:
//  - mm_race_threads: one process, the main thread on one CPU and a worker
//    on each other CPU, in rounds over one region (overlapping ranges):
//     1. workers store into their page; the main thread mprotects the
//        region read-only: no store may land after the call returned (the
//        page stays as it was when it returned, and each worker's store
//        count moves by at most the store in flight), and every worker's
//        next store faults (its SIGSEGV handler counts);
//     2. writable again, workers read their tagged page while the main
//        thread munmaps it and hands the frames to a new owner (another
//        mapping, filled with another tag): a read sees the old tag or
//        faults, never the new owner's, and a read begun after the worker
//        saw "unmapped" must fault;
//     3. disjoint ranges: every thread at once maps, fills, checks (a
//        checksum against the pattern), write-protects half of and unmaps
//        its own slice of one shared arena, with MAP_FIXED, so neighbouring
//        VMAs and the same page tables change on several CPUs at once.
//  - mm_race_procs: a process per CPU, each with a reader thread pinned to
//    the next CPU: the main thread maps, fills (its pid in every word),
//    mprotects, forks children that check and rewrite their copy and exit,
//    and unmaps, while the reader keeps reading the pages being unmapped.
//    Frames one process frees are the next ones another gets: the reader
//    must never see a word tagged with another process's pid.
// With one CPU these hold trivially; with several they fail without a
// correct shootdown and a correct order of unmap, flush and free. Frames
// return to their baseline when the test ends (the boot test's leak check).
#include "bench/libc/thread.h"
#include "cpu_pinning.h"
#include "harness.h"

namespace proctest {
namespace {

constexpr unsigned kMaxWorkers = 3;  // CPUs 1..3 (4 CPUs at most are used)
constexpr uint64_t kWords = 4096 / 8;
constexpr uint64_t kWaitNs = 20ull * 1000 * 1000 * 1000;  // bound of a wait for another CPU (virtual time)

using usertest::cpus_mask;
using usertest::nth_cpu;
using usertest::pin;

int64_t shootdowns_now() {
  PvkCounters c{};
  return read_counters(&c) == 0 ? static_cast<int64_t>(c.shootdowns) : 0;
}
// Flushes that left a lazy CPU out (it catches up when it runs the space again).
int64_t lazy_skipped_now() {
  PvkCounters c{};
  return read_counters(&c) == 0 ? static_cast<int64_t>(c.shootdown_lazy_skipped) : 0;
}


// --- mm_race_threads ---------------------------------------------------------

enum Mode : uint32_t { kIdle, kStore, kRead, kDisjoint, kQuit };

struct Shared {
  volatile uint32_t mode;
  volatile uint32_t round;           // bumped with every mode change
  volatile uint64_t* region;         // one page per worker (phases 1 and 2)
  volatile uint32_t unmapped;        // phase 2: munmap has returned
  volatile uint32_t unmapping;       // phase 2: munmap is about to be called
  volatile uint64_t foreign_early;   // foreign reads before munmap was called
  volatile uint8_t* arena;           // phase 3: a slice per thread
  volatile uint64_t stores[kMaxWorkers];
  volatile uint32_t faults[kMaxWorkers];      // SIGSEGVs taken, all phases
  volatile uint32_t acked[kMaxWorkers];       // the round a worker is in
  volatile uint64_t reads[kMaxWorkers];       // phase 2 reads that returned
  volatile uint64_t foreign[kMaxWorkers];     // a read saw anything but the old owner's tag
  volatile uint64_t late[kMaxWorkers];        // a read begun after "unmapped" returned a value
  volatile uint64_t first_foreign;            // the first foreign value read (what it was tells whose)
  volatile uint64_t first_foreign_at;         // round << 8 | worker
  volatile uint64_t bad_sums[kMaxWorkers + 1];  // phase 3 checksums that did not match
};
Shared g;
unsigned g_workers;
unsigned g_index[kMaxWorkers] = {0, 1, 2};
JmpBuf g_jmp[kMaxWorkers];

constexpr uint64_t kOldTag = 0xA1, kNewTag = 0xB2;
// Values that say who wrote them: a phase-1 store (round, worker, count)
// and the phase-2 tags (owner, round, page).
uint64_t stored(uint64_t round, uint64_t worker, uint64_t n) {
  return 0x5Cull << 56 | round << 40 | worker << 32 | (n & 0xffffffff);
}
uint64_t tagged(uint64_t owner, uint64_t round, uint64_t page) {
  return owner << 56 | round << 40 | page << 32 | 0x7A6;
}
constexpr uint64_t kSlicePages = 6, kDisjointCycles = 4;

unsigned my_index() { return *static_cast<unsigned*>(thread_self()->arg); }

void worker_segv(int) {
  const unsigned i = my_index();
  g.faults[i] = g.faults[i] + 1;
  pvk_longjmp(&g_jmp[i], 1);
}

uint64_t slice_sum(volatile uint8_t* p, uint64_t pages) {
  uint64_t s = 0;
  for (uint64_t w = 0; w < pages * kWords; ++w) s = s * 31 + reinterpret_cast<volatile uint64_t*>(p)[w];
  return s;
}

// Phase 3 for thread `slot` (worker i is slot i, the main thread the last):
// cycles over its own slice of the arena.
void disjoint_cycles(unsigned slot, unsigned round) {
  volatile uint8_t* base = g.arena + slot * kSlicePages * 4096;
  auto* words = reinterpret_cast<volatile uint64_t*>(base);
  for (uint64_t c = 0; c < kDisjointCycles; ++c) {
    const uint64_t tag = (uint64_t{round} << 16) | (slot << 8) | c;
    if (is_err(mmap(const_cast<uint8_t*>(base), kSlicePages * 4096, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED))) {
      g.bad_sums[slot] = g.bad_sums[slot] + 1;
      return;
    }
    uint64_t want = 0;
    for (uint64_t w = 0; w < kSlicePages * kWords; ++w) words[w] = pattern(tag, w);
    for (uint64_t w = 0; w < kSlicePages * kWords; ++w) want = want * 31 + pattern(tag, w);
    if (mprotect(const_cast<uint8_t*>(base), kSlicePages / 2 * 4096, PROT_READ) != 0)
      g.bad_sums[slot] = g.bad_sums[slot] + 1;
    if (slice_sum(base, kSlicePages) != want) g.bad_sums[slot] = g.bad_sums[slot] + 1;
    // Leave a hole between cycles: the next mmap makes the VMA again.
    if (munmap(const_cast<uint8_t*>(base), kSlicePages * 4096) != 0) g.bad_sums[slot] = g.bad_sums[slot] + 1;
  }
  // Reserved again once the cycles are over: a hole left here would be the
  // first gap the next round's regions get, and a thread still reading one
  // would then see the next phase's slice there, legitimately mapped.
  if (is_err(mmap(const_cast<uint8_t*>(base), kSlicePages * 4096, PROT_NONE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED)))
    g.bad_sums[slot] = g.bad_sums[slot] + 1;
}

void worker(void*) {
  const unsigned i = my_index();
  volatile uint32_t seen = 0;  // the round this worker last acted in
  pvk_setjmp(&g_jmp[i]);       // a fault comes back here: wait for the next round
  for (;;) {
    while (g.round == seen) asm volatile("pause");
    const uint32_t round = g.round;
    const uint32_t mode = g.mode;
    seen = round;
    g.acked[i] = round;
    volatile uint64_t* page = g.region + i * kWords;
    if (mode == kQuit) return;
    if (mode == kStore) {
      // Until the store faults (mprotect) or the next round.
      for (uint64_t n = 1; g.round == round; ++n) {
        page[n % kWords] = stored(round, i, n);
        g.stores[i] = n;
      }
    } else if (mode == kRead) {
      const uint64_t old_tag = tagged(kOldTag, round, i);
      while (g.round == round) {
        const uint32_t started = __atomic_load_n(&g.unmapping, __ATOMIC_ACQUIRE);
        const uint32_t gone = __atomic_load_n(&g.unmapped, __ATOMIC_ACQUIRE);
        const uint64_t v = page[round % kWords];
        if (gone) g.late[i] = g.late[i] + 1;  // the read above should have faulted
        if (v != old_tag) {
          g.foreign[i] = g.foreign[i] + 1;
          if (!started) g.foreign_early = g.foreign_early + 1;
          if (!g.first_foreign) g.first_foreign = v, g.first_foreign_at = (uint64_t{round} << 8) | i;
        }
        g.reads[i] = g.reads[i] + 1;
      }
    } else if (mode == kDisjoint) {
      disjoint_cycles(i, round);
    }
  }
}

// Starts a round of `mode` and waits until every worker is in it.
void start_round(uint32_t mode) {
  g.mode = mode;
  __atomic_store_n(&g.round, g.round + 1, __ATOMIC_SEQ_CST);
  const uint32_t r = g.round;
  wait_until([r] {
    for (unsigned i = 0; i < g_workers; ++i)
      if (g.acked[i] != r) return false;
    return true;
  }, kWaitNs);
}

}  // namespace

void test_mm_race_threads() {
  constexpr unsigned kRounds = 16;
  const uint64_t mask = cpus_mask();
  g_workers = __builtin_popcountll(mask) > 1 ? static_cast<unsigned>(__builtin_popcountll(mask)) - 1 : 1;
  if (g_workers > kMaxWorkers) g_workers = kMaxWorkers;
  pin(nth_cpu(mask, 0));
  CHECK_EQ(sigaction(SIGSEGV, worker_segv, kSaNodefer), 0);
  const uint64_t len = g_workers * 4096;
  void* arena = map_anon((g_workers + 1) * kSlicePages * 4096, PROT_NONE);
  CHECK(arena != nullptr);
  if (!arena) return;
  g.arena = static_cast<volatile uint8_t*>(arena);
  Thread t[kMaxWorkers];
  // Each worker pins itself as its first act: the mask is inherited, so
  // pin the main thread to the worker's CPU around the create.
  for (unsigned i = 0; i < g_workers; ++i) {
    pin(nth_cpu(mask, i + 1));
    CHECK(thread_create(&t[i], worker, &g_index[i]) > 0);
  }
  pin(nth_cpu(mask, 0));
  const int64_t shootdowns_before = shootdowns_now(), lazy_before = lazy_skipped_now();
  uint64_t late_stores = 0, changed_words = 0, unfaulted = 0, foreign = 0, late_reads = 0, reads = 0;
  for (unsigned round = 0; round < kRounds; ++round) {
    g.region = static_cast<volatile uint64_t*>(map_anon(len));
    CHECK(g.region != nullptr);
    if (!g.region) break;
    // 1. mprotect under the stores.
    uint32_t faults_before[kMaxWorkers];
    for (unsigned i = 0; i < g_workers; ++i) g.stores[i] = 0, faults_before[i] = g.faults[i];
    start_round(kStore);
    wait_until([] {
      for (unsigned i = 0; i < g_workers; ++i)
        if (g.stores[i] < 1000) return false;
      return true;
    }, kWaitNs);
    CHECK_EQ(mprotect(const_cast<uint64_t*>(g.region), len, PROT_READ), 0);
    uint64_t at_return[kMaxWorkers];
    static uint64_t snapshot[kMaxWorkers * kWords];
    for (unsigned i = 0; i < g_workers; ++i) at_return[i] = g.stores[i];
    for (uint64_t w = 0; w < g_workers * kWords; ++w) snapshot[w] = g.region[w];
    wait_until([&] {
      for (unsigned i = 0; i < g_workers; ++i)
        if (g.faults[i] == faults_before[i]) return false;
      return true;
    }, kWaitNs);
    for (unsigned i = 0; i < g_workers; ++i) {
      if (g.faults[i] == faults_before[i]) ++unfaulted;
      if (g.stores[i] > at_return[i] + 1) late_stores += g.stores[i] - at_return[i] - 1;
    }
    for (uint64_t w = 0; w < g_workers * kWords; ++w)
      if (g.region[w] != snapshot[w]) ++changed_words;

    // 2. munmap under the reads; the frames go to a new owner elsewhere.
    CHECK_EQ(mprotect(const_cast<uint64_t*>(g.region), len, PROT_READ | PROT_WRITE), 0);
    // Tagged with the round the readers will be in (start_round bumps it).
    for (unsigned i = 0; i < g_workers; ++i)
      for (uint64_t w = 0; w < kWords; ++w) g.region[i * kWords + w] = tagged(kOldTag, g.round + 1, i);
    g.unmapped = 0;
    g.unmapping = 0;
    for (unsigned i = 0; i < g_workers; ++i) g.reads[i] = 0;
    start_round(kRead);
    wait_until([] {
      for (unsigned i = 0; i < g_workers; ++i)
        if (g.reads[i] < 100) return false;
      return true;
    }, kWaitNs);
    // The new owner's range is taken before the munmap, so the old one
    // stays unmapped (a read there must fault): only the frames move on,
    // when the new owner's first stores fault them in.
    auto* next = static_cast<volatile uint64_t*>(map_anon(len));
    CHECK(next != nullptr);
    __atomic_store_n(&g.unmapping, 1, __ATOMIC_SEQ_CST);
    CHECK_EQ(munmap(const_cast<uint64_t*>(g.region), len), 0);
    __atomic_store_n(&g.unmapped, 1, __ATOMIC_RELEASE);
    if (next)
      for (uint64_t w = 0; w < g_workers * kWords; ++w) next[w] = tagged(kNewTag, g.round, w / kWords);
    // 3. Disjoint slices, the main thread too; only once every reader has
    // left phase 2 (a reader still in it must not race the slices' mmaps).
    start_round(kIdle);
    start_round(kDisjoint);
    disjoint_cycles(g_workers, round);
    start_round(kIdle);  // waits until every worker finished its cycles
    if (next) CHECK_EQ(munmap(const_cast<uint64_t*>(next), len), 0);
  }
  start_round(kQuit);
  for (unsigned i = 0; i < g_workers; ++i) CHECK_EQ(thread_join(&t[i]), 0);
  uint64_t bad_sums = 0;
  for (unsigned i = 0; i <= g_workers; ++i) bad_sums += g.bad_sums[i];
  for (unsigned i = 0; i < g_workers; ++i) foreign += g.foreign[i], late_reads += g.late[i], reads += g.reads[i];
  CHECK_EQ(late_stores, 0);
  CHECK_EQ(changed_words, 0);
  CHECK_EQ(unfaulted, 0);
  CHECK_EQ(foreign, 0);
  CHECK_EQ(late_reads, 0);
  CHECK_EQ(bad_sums, 0);
  CHECK_EQ(munmap(arena, (g_workers + 1) * kSlicePages * 4096), 0);
  detail("workers", g_workers);
  detail("rounds", kRounds);
  detail("shootdowns", shootdowns_now() - shootdowns_before);
  detail("late_stores", static_cast<int64_t>(late_stores));
  detail("foreign_reads", static_cast<int64_t>(foreign));
  detail("late_reads", static_cast<int64_t>(late_reads));
  detail("bad_sums", static_cast<int64_t>(bad_sums));
  detail("lazy_skipped", lazy_skipped_now() - lazy_before);
  // What the first foreign read saw (the new owner's tag, 0 from a frame
  // cleared for its next owner, another program's data) and where; whether
  // any came before the munmap was even called.
  detail("first_foreign", static_cast<int64_t>(g.first_foreign));
  detail("first_foreign_at", static_cast<int64_t>(g.first_foreign_at));
  detail("foreign_early", static_cast<int64_t>(g.foreign_early));
}

// --- mm_race_procs -----------------------------------------------------------

namespace {

constexpr unsigned kMaxProcs = 4;
constexpr unsigned kProcRounds = 24;
constexpr uint64_t kProcPages = 8;

// Per process, in a MAP_SHARED page the test maps before forking them.
struct ProcSlot {
  volatile uint64_t foreign;  // the reader saw a word with another pid
  volatile uint64_t reads;
  volatile uint64_t faults;
  volatile uint64_t bad;      // the main thread's own checks (sums, children, calls)
  volatile uint64_t forks;
  volatile uint32_t done;
};
ProcSlot* g_slots;

struct Proc {
  volatile uint64_t* region;  // the pages the reader reads (null: none right now)
  volatile uint32_t stop;
  uint64_t tag_base;          // this process's tags: pid << 32 | word
  JmpBuf jmp;
  ProcSlot* slot;
};
Proc g_proc;

uint64_t tag_of(uint64_t pid, uint64_t w) { return pid << 32 | (w & 0xffffffff); }

void reader_segv(int) {
  g_proc.slot->faults = g_proc.slot->faults + 1;
  pvk_longjmp(&g_proc.jmp, 1);
}

// Reads whatever region is current; a word is either 0 (a fresh page),
// this process's own tag or the fault that munmap makes of it.
void proc_reader(void*) {
  volatile uint64_t w = 0;
  pvk_setjmp(&g_proc.jmp);
  while (!g_proc.stop) {
    volatile uint64_t* r = __atomic_load_n(&g_proc.region, __ATOMIC_ACQUIRE);
    if (!r) continue;
    w = (w + 61) % (kProcPages * kWords);
    const uint64_t v = r[w];
    if (v != 0 && (v >> 32) != g_proc.tag_base) g_proc.slot->foreign = g_proc.slot->foreign + 1;
    g_proc.slot->reads = g_proc.slot->reads + 1;
  }
}

[[noreturn]] void proc_main(unsigned index, uint64_t mask) {
  g_proc.slot = &g_slots[index];
  g_proc.tag_base = static_cast<uint64_t>(getpid());
  ProcSlot& s = *g_proc.slot;
  sigaction(SIGSEGV, reader_segv, kSaNodefer);
  pin(nth_cpu(mask, index + 1));  // the reader's CPU: the next one
  Thread reader;
  if (thread_create(&reader, proc_reader, nullptr) <= 0) s.bad = s.bad + 1;
  pin(nth_cpu(mask, index));
  const uint64_t len = kProcPages * 4096;
  for (unsigned round = 0; round < kProcRounds; ++round) {
    auto* r = static_cast<volatile uint64_t*>(map_anon(len));
    if (!r) { s.bad = s.bad + 1; break; }
    for (uint64_t w = 0; w < kProcPages * kWords; ++w) r[w] = tag_of(g_proc.tag_base, w);
    __atomic_store_n(&g_proc.region, r, __ATOMIC_RELEASE);
    // Half read-only for a while, then a fork: the child checks its copy,
    // overwrites the writable half and exits (its frames go back at once).
    if (mprotect(const_cast<uint64_t*>(r), len / 2, PROT_READ) != 0) s.bad = s.bad + 1;
    if (round % 2 == 0) {
      const int64_t pid = fork();
      if (pid == 0) {
        uint64_t wrong = 0;
        for (uint64_t w = 0; w < kProcPages * kWords; ++w) wrong += r[w] != tag_of(g_proc.tag_base, w);
        for (uint64_t w = kProcPages / 2 * kWords; w < kProcPages * kWords; ++w) r[w] = tag_of(getpid(), w);
        for (uint64_t w = kProcPages / 2 * kWords; w < kProcPages * kWords; ++w) wrong += r[w] != tag_of(getpid(), w);
        exit(wrong ? 1 : 0);
      }
      if (pid < 0) s.bad = s.bad + 1;
      else if (wait_for(pid) != ::pvk::abi::wait_exited(0)) s.bad = s.bad + 1;
      else s.forks = s.forks + 1;
    }
    uint64_t wrong = 0;
    for (uint64_t w = 0; w < kProcPages * kWords; ++w) wrong += r[w] != tag_of(g_proc.tag_base, w);
    if (wrong) s.bad = s.bad + 1;
    // Unmap in two overlapping calls (the second covers an unmapped part).
    if (munmap(const_cast<uint64_t*>(r) + kProcPages / 4 * kWords, len / 2) != 0) s.bad = s.bad + 1;
    if (munmap(const_cast<uint64_t*>(r), len) != 0) s.bad = s.bad + 1;
    __atomic_store_n(&g_proc.region, static_cast<volatile uint64_t*>(nullptr), __ATOMIC_RELEASE);
  }
  g_proc.stop = 1;
  if (thread_join(&reader) != 0) s.bad = s.bad + 1;
  s.done = 1;
  exit(0);
}

}  // namespace

void test_mm_race_procs() {
  const uint64_t mask = cpus_mask();
  unsigned procs = static_cast<unsigned>(__builtin_popcountll(mask));
  if (procs < 2) procs = 2;
  if (procs > kMaxProcs) procs = kMaxProcs;
  g_slots = static_cast<ProcSlot*>(map_anon(4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  CHECK(g_slots != nullptr);
  if (!g_slots) return;
  const int64_t shootdowns_before = shootdowns_now();
  int64_t pids[kMaxProcs];
  for (unsigned i = 0; i < procs; ++i) {
    pids[i] = fork();
    if (pids[i] == 0) proc_main(i, mask);
    CHECK(pids[i] > 0);
  }
  uint64_t foreign = 0, bad = 0, reads = 0, forks = 0, faults = 0;
  for (unsigned i = 0; i < procs; ++i) {
    if (pids[i] > 0) CHECK_EQ(WAIT_OR_KILL(pids[i], 60), ::pvk::abi::wait_exited(0));
    CHECK_EQ(g_slots[i].done, 1);
    foreign += g_slots[i].foreign, bad += g_slots[i].bad, reads += g_slots[i].reads;
    forks += g_slots[i].forks, faults += g_slots[i].faults;
  }
  CHECK_EQ(foreign, 0);
  CHECK_EQ(bad, 0);
  CHECK_EQ(forks, procs * kProcRounds / 2);
  detail("procs", procs);
  detail("foreign_reads", static_cast<int64_t>(foreign));
  detail("reads", static_cast<int64_t>(reads));
  detail("reader_faults", static_cast<int64_t>(faults));
  detail("shootdowns", shootdowns_now() - shootdowns_before);
  CHECK_EQ(munmap(g_slots, 4096), 0);
}

}  // namespace proctest
