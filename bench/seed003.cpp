// Seed 003: fork after dirtying N contiguous pages (writable page tables vs
// emulation, 2006). The parent side of fork is "median"; the child's exit
// and reap is "exit_*"; the parent writing every page again afterwards is
// "rewrite_*"; the three together, per rep, "total_*".
//
// `stride=k` (default 1) dirties every k-th page of the same span of `pages`
// pages instead (pages 0, k, 2k, ...; ceil(pages / k) of them, the record's
// `dirtied_pages`): the L1 tables under the span stay the same, the share
// of their entries that are present and dirty falls (k = 1, 2, 10, 100, 512:
// 100 %, 50 %, 10 %, 1 %, one entry per table). The seed's next question:
// where strategies break even as density falls. The other pages are never
// touched (not present). Everything below, the rewrite included, concerns
// the dirtied pages only.
//
// Per rep: write one word to every dirtied page (every such PTE present,
// writable, dirty; untimed), time fork() in the parent. The child blocks on a pipe so it
// cannot run inside the parent's timed region; the parent then asks it to
// check a few pages against the parent's data, reads the verdict, and times
// "go" -> the child's exit_group -> wait4 returning. Then it times writing
// one word to every page again (rewrite): after a per-PTE fork that is a
// write fault per page on a write-protected leaf whose frame is no longer
// shared; with ptshare=on, whatever the first writes through a shared table
// cost (a gate opening or a table copy-out). Sharing moves work from fork to
// these faults, so the total is the honest figure.
#include "bench/bench.h"
#include "base/lib/error_or.h"  // pvk::panic
#include "base/lib/format.h"

namespace bench {
namespace {

constexpr uint64_t kWordsPerPage = kPage / 8;
constexpr unsigned kChecked = 9;

// "prefix_suffix" keys for Run::extra, which keeps the pointer: interned in
// a static pool (the set of names is fixed, so the pool does not grow; it is
// sized for every phase's fields at the longest key a field may have).
constexpr size_t kKeyMax = 64;
const char* key(const char* prefix, const char* suffix) {
  static char pool[kMaxExtras * kKeyMax];
  static size_t used = 0;
  char want[kKeyMax];
  pvk::format(want, sizeof want, "%s_%s", prefix, suffix);
  for (size_t at = 0; at < used; at += strlen(pool + at) + 1)
    if (strcmp(pool + at, want) == 0) return pool + at;
  const size_t n = strlen(want) + 1;
  if (used + n > sizeof pool) pvk::panic("fork_dirty: key pool full");
  memcpy(pool + used, want, n);
  used += n;
  return pool + used - n;
}

// prefix_median/_min/_max/_median_cycles and every counter's delta over the
// phase's median rep (prefix_pte_writes, ...), as the fork phase's record
// fields carry them.
void report_phase(Run& r, const char* prefix, const Series& ns, const Series& cycles, const Counters* deltas) {
  if (!ns.n) return;
  r.extra(key(prefix, "median"), ns.median());
  r.extra(key(prefix, "min"), ns.min());
  r.extra(key(prefix, "max"), ns.max());
  r.extra(key(prefix, "median_cycles"), cycles.median());
  if (!g_have_counters) return;
  const Counters& d = deltas[ns.median_index()];
  for (unsigned i = 0; i < kNumCounters; ++i) r.extra(key(prefix, kCounterNames[i]), d.v[i]);
}

// The pages the child checks: first, last, middle and a spread, each the
// dirtied page at or below it (a multiple of stride).
void checked_pages(uint64_t pages, uint64_t stride, uint64_t* out) {
  const uint64_t picks[kChecked] = {0, 1, pages / 8, pages / 4, pages / 3, pages / 2, pages * 3 / 4, pages - 2,
                                    pages - 1};
  for (unsigned i = 0; i < kChecked; ++i) {
    const uint64_t p = picks[i] < pages ? picks[i] : pages - 1;
    out[i] = p - p % stride;
  }
}

[[noreturn]] void child(const uint64_t* region, uint64_t pages, uint64_t stride, uint64_t tag, int in, int out) {
  char c = 0;
  if (read(in, &c, 1) != 1 || c != 'c') exit_group(3);
  uint64_t idx[kChecked];
  checked_pages(pages, stride, idx);
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
  const uint64_t stride = r.p("stride");
  r.ops = 1;
  if (pages < 2) {
    r.fail("pages must be at least 2");
    return;
  }
  if (stride < 1 || stride > pages) {
    r.fail("stride must be 1..pages");
    return;
  }
  const uint64_t dirtied = (pages + stride - 1) / stride;
  r.extra("dirtied_pages", dirtied);
  uint64_t* region = map_pages_or_fail(r, pages);
  if (!region) return;
  int down[2], up[2];
  if (pipe(down) != 0 || pipe(up) != 0) {
    r.fail("pipe failed");
    munmap(region, pages * kPage);
    return;
  }
  uint64_t idx[kChecked];
  checked_pages(pages, stride, idx);

  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    const uint64_t tag = 0x40 + rep;
    for (uint64_t i = 0; i < pages; i += stride) poke(region + i * kWordsPerPage, pattern(tag, i));

    r.start();
    const int64_t pid = fork();
    if (pid == 0) {
      close(down[1]);
      close(up[0]);
      child(region, pages, stride, tag, down[0], up[1]);
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

    // The parent writes every dirtied page again, the child gone.
    const uint64_t tag2 = 0x80 + rep;
    r.start3();
    for (uint64_t i = 0; i < pages; i += stride) poke(region + i * kWordsPerPage, pattern(tag2, i));
    r.stop3();
    for (unsigned i = 0; i < kChecked; ++i)
      if (peek(region + idx[i] * kWordsPerPage) != pattern(tag2, idx[i])) {
        r.fail("the parent's rewrite of page %lu did not stick", idx[i]);
        break;
      }
  }
  close(down[0]);
  close(down[1]);
  close(up[0]);
  close(up[1]);
  if (int64_t e = munmap(region, pages * kPage); e != 0) r.fail("munmap returned %ld", e);

  report_phase(r, "exit", r.ns2, r.cycles2, r.deltas2);
  report_phase(r, "rewrite", r.ns3, r.cycles3, r.deltas3);
  // fork + child exit + parent rewrite, rep by rep.
  const unsigned n = r.ns.n < r.ns2.n ? (r.ns.n < r.ns3.n ? r.ns.n : r.ns3.n) : (r.ns2.n < r.ns3.n ? r.ns2.n : r.ns3.n);
  if (n) {
    static Series total, total_cycles;
    static Counters total_deltas[kMaxReps];
    total = Series{};
    total_cycles = Series{};
    for (unsigned i = 0; i < n; ++i) {
      total.add(r.ns.v[i] + r.ns2.v[i] + r.ns3.v[i]);
      total_cycles.add(r.cycles.v[i] + r.cycles2.v[i] + r.cycles3.v[i]);
      for (unsigned c = 0; c < kNumCounters; ++c)
        total_deltas[i].v[c] = r.deltas[i].v[c] + r.deltas2[i].v[c] + r.deltas3[i].v[c];
    }
    report_phase(r, "total", total, total_cycles, total_deltas);
  }
  r.extra("child_checked_pages", kChecked);
}

}  // namespace bench
