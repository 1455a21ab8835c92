// Seed 003: fork after dirtying N contiguous pages (writable page tables vs
// emulation, 2006). The parent side of fork is "median"; the child's exit
// and reap is "exit_*".
//
// Per rep: write one word to every page (every PTE present, writable, dirty;
// untimed), time fork() in the parent. The child blocks on a pipe so it
// cannot run inside the parent's timed region; the parent then asks it to
// check a few pages against the parent's data, reads the verdict, and times
// "go" -> the child's exit_group -> wait4 returning.
#include "bench/bench.h"

namespace bench {
namespace {

constexpr uint64_t kWordsPerPage = kPage / 8;
constexpr unsigned kChecked = 9;

// The pages the child checks: first, last, middle and a spread.
void checked_pages(uint64_t pages, uint64_t* out) {
  const uint64_t picks[kChecked] = {0, 1, pages / 8, pages / 4, pages / 3, pages / 2, pages * 3 / 4, pages - 2,
                                    pages - 1};
  for (unsigned i = 0; i < kChecked; ++i) out[i] = picks[i] < pages ? picks[i] : pages - 1;
}

[[noreturn]] void child(const uint64_t* region, uint64_t pages, uint64_t tag, int in, int out) {
  char c = 0;
  if (read(in, &c, 1) != 1 || c != 'c') exit_group(3);
  uint64_t idx[kChecked];
  checked_pages(pages, idx);
  char verdict = 'y';
  for (unsigned i = 0; i < kChecked; ++i)
    if (peek(region + idx[i] * kWordsPerPage) != pattern(tag, idx[i])) verdict = 'n';
  if (write(out, &verdict, 1) != 1) exit_group(4);
  if (read(in, &c, 1) != 1 || c != 'g') exit_group(5);
  exit_group(verdict == 'y' ? 0 : 1);
}

}  // namespace

void run_fork_dirty(Run& r) {
  const uint64_t pages = r.p("pages");
  r.ops = 1;
  if (pages < 2) {
    r.fail("pages must be at least 2");
    return;
  }
  uint64_t* region = map_pages_or_fail(r, pages);
  if (!region) return;
  int down[2], up[2];
  if (pipe(down) != 0 || pipe(up) != 0) {
    r.fail("pipe failed");
    munmap(region, pages * kPage);
    return;
  }
  uint64_t idx[kChecked];
  checked_pages(pages, idx);

  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    const uint64_t tag = 0x40 + rep;
    for (uint64_t i = 0; i < pages; ++i) poke(region + i * kWordsPerPage, pattern(tag, i));

    r.start();
    const int64_t pid = fork();
    if (pid == 0) {
      close(down[1]);
      close(up[0]);
      child(region, pages, tag, down[0], up[1]);
    }
    r.stop();
    if (pid < 0) {
      r.fail("fork returned %ld", pid);
      break;
    }
    char c = 'c', verdict = 0;
    if (write(down[1], &c, 1) != 1 || read(up[0], &verdict, 1) != 1) r.fail("no verdict from the child");
    if (verdict != 'y') r.fail("the child saw wrong data in one of %u checked pages (rep %u)", kChecked, rep);

    c = 'g';
    r.start2();
    write(down[1], &c, 1);
    int st = 0;
    const int64_t got = wait4(pid, &st, 0);
    r.stop2();
    if (got != pid)
      r.fail("wait4(%ld) returned %ld", pid, got);
    else if (st != 0 && verdict == 'y')
      r.fail("the child exited with status 0x%x", st);
    // The parent's data is intact after the child is gone.
    for (unsigned i = 0; i < kChecked; ++i)
      if (peek(region + idx[i] * kWordsPerPage) != pattern(tag, idx[i])) {
        r.fail("the parent's page %lu changed across fork", idx[i]);
        break;
      }
  }
  close(down[0]);
  close(down[1]);
  close(up[0]);
  close(up[1]);
  if (int64_t e = munmap(region, pages * kPage); e != 0) r.fail("munmap returned %ld", e);

  if (r.ns2.n) {
    r.extra("exit_median", r.ns2.median());
    r.extra("exit_min", r.ns2.min());
    r.extra("exit_max", r.ns2.max());
    r.extra("exit_median_cycles", r.cycles2.median());
    if (g_have_counters) {
      const Counters& d = r.deltas2[r.ns2.median_index()];
      // pte_writes, hypercalls, mmu_update_entries, ptwr_traps, pt_pages_release
      r.extra("exit_pte_writes", d.v[0]);
      r.extra("exit_hypercalls", d.v[7]);
      r.extra("exit_mmu_update_entries", d.v[9]);
      r.extra("exit_ptwr_traps", d.v[11]);
      r.extra("exit_pt_pages_release", d.v[6]);
    }
  }
  r.extra("child_checked_pages", kChecked);
}

}  // namespace bench
