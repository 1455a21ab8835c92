// The SMP shootdown benchmarks: what other CPUs running the same address
// space cost a page-table operation (the TLB shootdown it needs).
//
//   mprotect_threads  mprotect RW->RO->RW of N pages while K threads read them
//   munmap_threads    mmap + touch + munmap of N pages while K threads spin
//   fork_threads      fork + child exit + wait of a process with K threads
//
// The same static binary runs on Linux (clone, futex: the Linux ABI).
#include "bench/smp_threads.h"

namespace bench {

using namespace smp;

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
    time_mprotect_cycles(r, region, len, loops, [](void* crew) { crew_sync(*static_cast<Crew*>(crew)); }, &c);
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
      crew_sync(c);
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
      crew_sync(c);
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

}  // namespace bench
