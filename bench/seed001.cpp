// Seed 001 (page-fault costs, in ns and cycles, per page over many pages):
// fault_zero_read, fault_zero_cow, fault_write, poke_full, memset_present.
// poke_full is the seed's Poke_full: a memset(0x55) of a whole fresh page, so
// the fault (allocate + clear) plus a full-page store into the new frame.
// And forkexec: lmbench's fork/exec, which Linus asked to see with and
// without the zero page ("use once, then throw away").
//
// Each rep maps a fresh private anonymous region of `pages` pages (outside
// the timed region), prepares it, times one access per page, and unmaps it.
// Every page's access is also timed alone with rdtsc; the median, min and
// max of those of the median rep are reported as page_*_cycles.
#include "bench/bench.h"

namespace bench {
namespace {

enum class Kind { ZeroRead, ZeroCow, Write, PokeFull, MemsetPresent };

constexpr uint64_t kWordsPerPage = kPage / 8;

// One load / store per page, or a memset of the page.
inline void access(Kind kind, uint64_t* page, uint64_t i) {
  switch (kind) {
    case Kind::ZeroRead:
      (void)peek(page);
      break;
    case Kind::ZeroCow:
    case Kind::Write:
      poke(page, i + 1);
      break;
    case Kind::PokeFull:
    case Kind::MemsetPresent:
      memset(page, 0x55, kPage);
      break;
  }
}

void run_faults(Run& r, Kind kind) {
  const uint64_t pages = r.p("pages");
  r.ops = pages;
  if (pages == 0) {
    r.fail("pages must be at least 1");
    return;
  }
  // Per-page cycle deltas of the current rep.
  const uint64_t buf_len = (pages * 8 + kPage - 1) & ~(kPage - 1);
  auto* per_page = static_cast<uint64_t*>(map_anon(buf_len));
  if (!per_page) {
    r.fail("mmap of the per-page buffer failed");
    return;
  }
  for (uint64_t i = 0; i < pages; ++i) per_page[i] = 0;  // present before any rep
  Series page_med, page_min, page_max;

  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    uint64_t* region = map_pages_or_fail(r, pages);
    if (!region) break;
    // Preparation (untimed).
    if (kind == Kind::ZeroCow) {
      uint64_t s = 0;
      for (uint64_t i = 0; i < pages; ++i) s += peek(region + i * kWordsPerPage);
      if (s != 0) r.fail("a fresh anonymous page read non-zero");
    } else if (kind == Kind::MemsetPresent) {
      for (uint64_t i = 0; i < pages; ++i) poke(region + i * kWordsPerPage, i);
    }

    r.start();
    for (uint64_t i = 0; i < pages; ++i) {
      const uint64_t t = rdtsc();
      access(kind, region + i * kWordsPerPage, i);
      per_page[i] = rdtsc() - t;
    }
    r.stop();

    // Checks (untimed): a zero-page read sees zeros, writes stick.
    for (uint64_t i = 0; i < pages && !r.failed(); i += (pages > 64 ? pages / 64 : 1)) {
      const uint64_t* page = region + i * kWordsPerPage;
      const bool full = kind == Kind::MemsetPresent || kind == Kind::PokeFull;
      const uint64_t want = kind == Kind::ZeroRead ? 0 : full ? 0x5555555555555555ull : i + 1;
      if (peek(page) != want) r.fail("page %lu holds 0x%lx, want 0x%lx", i, peek(page), want);
      if (full && peek(page + kWordsPerPage - 1) != want) r.fail("page %lu: memset incomplete", i);
    }
    if (int64_t e = munmap(region, pages * kPage); e != 0) r.fail("munmap returned %ld", e);

    sort_u64(per_page, pages);
    page_med.add(per_page[(pages - 1) / 2]);
    page_min.add(per_page[0]);
    page_max.add(per_page[pages - 1]);
  }
  munmap(per_page, buf_len);
  if (r.ns.n) {
    const unsigned m = r.ns.median_index();
    r.extra("page_median_cycles", page_med.v[m]);
    r.extra("page_min_cycles", page_min.v[m]);
    r.extra("page_max_cycles", page_max.v[m]);
  }
}

}  // namespace

void run_fault_zero_read(Run& r) { run_faults(r, Kind::ZeroRead); }
void run_fault_zero_cow(Run& r) { run_faults(r, Kind::ZeroCow); }
void run_fault_write(Run& r) { run_faults(r, Kind::Write); }
void run_poke_full(Run& r) { run_faults(r, Kind::PokeFull); }
void run_memset_present(Run& r) { run_faults(r, Kind::MemsetPresent); }

// ---------------------------------------------------------------------------
// forkexec: fork, the child execs kbworker without arguments (it exits 0 at
// once), the parent waits.

void run_forkexec(Run& r) {
  const uint64_t n = r.p("iters");
  r.ops = n;
  const char* argv[] = {"kbworker", nullptr};
  const char* path = kbworker_path();
  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    r.start();
    for (uint64_t i = 0; i < n; ++i) {
      const int64_t pid = fork();
      if (pid == 0) {
        execve(path, argv, pvk_environ);
        exit_group(12);
      }
      if (pid < 0) {
        r.fail("fork returned %ld", pid);
        break;
      }
      int st = 0;
      const int64_t got = wait4(pid, &st, 0);
      if (got != pid || st != 0) {
        r.fail("wait4(%ld) returned %ld, status 0x%x%s", pid, got, st,
               st == wait_exited(12) ? " (exec of kbworker failed)" : "");
        break;
      }
    }
    r.stop();
  }
}

}  // namespace bench
