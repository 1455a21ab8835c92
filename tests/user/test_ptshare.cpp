// ptshare_both_write, ptshare_child_exits, ptshare_chain, ptshare_mprotect,
// ptshare_read_into, ptshare_munmap: fork over private memory that fills
// whole 2 MiB-aligned L1 tables, every page dirty before the fork, so that
// with ptshare=on the fork shares those tables behind read-only L2 entries
// (table sharing) and every later write, mprotect, munmap and kernel copy into
// them goes through a shared table. Each case checks the memory contents of
// every process against its own model of what it wrote.
//
// Counters (pvk only; the host has none): the first fork of the region says
// whether tables are shared (its pt_shares delta). If they are, each case
// asserts that the feature did its work (every dirty table shared, a write
// while shared copies the table, a write by the last sharer opens the gate,
// a whole-table mprotect protects at L2); if not (ptshare=off), every
// ptshare counter stays 0. The boot test, which knows the command line,
// checks each record's "fork_shares" so ptshare=on that shares nothing fails.
//
// Each case runs in one helper (the "worker") so its test process can check
// that the free-frame count is back where it was once the worker and all it
// forked are gone (frames are counted by the kernel, so on pvk only).
#include "harness.h"

namespace proctest {
namespace {

constexpr uint64_t kTableBytes = 2ull << 20;  // what one L1 table maps
constexpr unsigned kPagesPerTable = 512;
constexpr unsigned kTables = 3;
constexpr unsigned kPages = kTables * kPagesPerTable;
constexpr unsigned kWords = kPage / 8;

constexpr unsigned table(unsigned t) { return t * kPagesPerTable; }  // first page of table t

// --- The region and this process's model of it ----------------------------

uint64_t* g_base;       // 2 MiB-aligned; exactly kTables tables of one mapping
uint8_t g_tag[kPages];  // what each page holds: pattern(tag, word); 0 = unmapped
bool g_mismatch_told;   // the first mismatch of this process was printed

uint64_t* page_ptr(unsigned p) { return g_base + uint64_t{p} * kWords; }
uint64_t page_addr(unsigned p) { return reinterpret_cast<uint64_t>(page_ptr(p)); }
uint64_t want(unsigned p, unsigned i) { return pattern(g_tag[p], uint64_t{p} * kWords + i); }

// Maps kTables+1 tables' worth and unmaps the unaligned ends, so the region
// is one private anonymous mapping covering exactly kTables whole tables.
bool map_region() {
  const uint64_t len = (kTables + 1) * kTableBytes;
  void* raw = map_anon(len);
  CHECK(raw != nullptr);
  if (!raw) return false;
  const uint64_t start = reinterpret_cast<uint64_t>(raw), end = start + len;
  const uint64_t base = align_up(start, kTableBytes), used_end = base + kTables * kTableBytes;
  if (base > start) CHECK_EQ(munmap(raw, base - start), 0);
  if (end > used_end) CHECK_EQ(munmap(reinterpret_cast<void*>(used_end), end - used_end), 0);
  g_base = reinterpret_cast<uint64_t*>(base);
  memset(g_tag, 0, sizeof g_tag);
  return true;
}

void unmap_region() {
  CHECK_EQ(munmap(g_base, kTables * kTableBytes), 0);
  memset(g_tag, 0, sizeof g_tag);
}

// Every word of pages [from, to) (every step-th page) gets pattern(tag, word).
void write_pages(unsigned from, unsigned to, uint8_t tag, unsigned step = 1) {
  for (unsigned p = from; p < to; p += step) {
    volatile uint64_t* w = page_ptr(p);
    g_tag[p] = tag;
    for (unsigned i = 0; i < kWords; ++i) w[i] = want(p, i);
  }
}

// The same, last page first.
void write_pages_down(unsigned from, unsigned to, uint8_t tag) {
  for (unsigned p = to; p-- > from;) write_pages(p, p + 1, tag);
}

// Words of the mapped pages of [from, to) that differ from the model; the
// process's first mismatch is printed (page, word, got, want).
uint64_t mismatches(unsigned from = 0, unsigned to = kPages) {
  uint64_t bad = 0;
  for (unsigned p = from; p < to; ++p) {
    if (!g_tag[p]) continue;
    const volatile uint64_t* w = page_ptr(p);
    for (unsigned i = 0; i < kWords; ++i) {
      const uint64_t got = w[i];
      if (got == want(p, i)) continue;
      if (!bad && !g_mismatch_told) {
        g_mismatch_told = true;
        printf("proctest[%ld] ptshare: page %u (table %u) word %u holds 0x%lx, want 0x%lx (tag %u)\n", getpid(), p,
               p / kPagesPerTable, i, got, want(p, i), g_tag[p]);
      }
      ++bad;
    }
  }
  return bad;
}

// --- Counters ---------------------------------------------------------------

bool g_counters;  // pvk's counter call works (false on the host)
bool g_sharing;   // the case's first fork shared tables (ptshare=on)

// Filled by the worker for its test process (MAP_SHARED).
struct Report {
  uint64_t fork_shares;  // pt_shares delta of the region's first fork
  int64_t checks;        // checks the worker itself started
  char failure[256];     // the first failed check of the worker or a helper (set_failure_sink)
};
volatile Report* g_report;

struct Delta {
  int64_t shares, copyouts, gate_opens, pushdowns, l2_protects, cow_copies, page_faults, free_frames;
};

PvkCounters snap() {
  PvkCounters c;
  read_counters(&c);  // zeros on the host
  return c;
}

Delta since(const PvkCounters& a) {
  const PvkCounters b = snap();
  auto d = [](uint64_t x, uint64_t y) { return static_cast<int64_t>(x - y); };
  return {d(b.pt_shares, a.pt_shares),       d(b.pt_copyouts, a.pt_copyouts), d(b.pt_gate_opens, a.pt_gate_opens),
          d(b.pt_pushdowns, a.pt_pushdowns), d(b.l2_protects, a.l2_protects), d(b.cow_copies, a.cow_copies),
          d(b.page_faults, a.page_faults),   d(b.free_frames, a.free_frames)};
}

// fork_helper() of a process holding the region. In both processes: with
// sharing, the fork shared at least min_tables tables (every table of the
// region that is dirty and whole); without, none. `first` (the case's first
// fork) decides g_sharing from the delta.
int64_t fork_shared(unsigned min_tables, bool first = false) {
  const PvkCounters before = snap();
  const int64_t pid = fork_helper();
  CHECK(pid >= 0);
  if (pid < 0 || !g_counters) return pid;
  const int64_t d = since(before).shares;
  if (first) {
    g_sharing = d > 0;
    if (pid > 0) g_report->fork_shares = static_cast<uint64_t>(d);
  }
  if (g_sharing)
    CHECK(d >= min_tables);  // dirty whole tables of private memory are shared
  else
    CHECK_EQ(d, 0);
  return pid;
}

// --- Handshakes ---------------------------------------------------------------

// A pipe each way between a process and one helper; each side closes the
// other's ends, so a side that dies is an EOF (recv_byte() == 0), not a hang.
struct Link {
  int down[2] = {-1, -1};  // parent -> helper
  int up[2] = {-1, -1};    // helper -> parent
};
void link_open(Link& l) {
  CHECK_EQ(pipe(l.down), 0);
  CHECK_EQ(pipe(l.up), 0);
}
void link_child(Link& l) {  // in the helper
  close(l.down[1]);
  close(l.up[0]);
}
void link_parent(Link& l) {  // in the parent
  close(l.down[0]);
  close(l.up[1]);
}
void link_close_child(Link& l) {
  close(l.down[0]);
  close(l.up[1]);
}
void link_close_parent(Link& l) {
  close(l.down[1]);
  close(l.up[0]);
}
void tell_child(Link& l, char c) { send_byte(l.down[1], c); }
void tell_parent(Link& l, char c) { send_byte(l.up[1], c); }
char from_child(Link& l) { return recv_byte(l.up[0]); }
char from_parent(Link& l) { return recv_byte(l.down[0]); }

// The start of a case with one helper and a link to it: the region mapped
// and every page written (tag 1), the link opened, m0 snapped, then the
// region's first fork (pid: 0 in the helper), each side taking its own ends
// of the link. False if the region could not be mapped.
bool fork_linked(Link& l, int64_t& pid, PvkCounters& m0) {
  if (!map_region()) return false;
  write_pages(0, kPages, 1);
  link_open(l);
  m0 = snap();
  pid = fork_shared(kTables, /*first=*/true);
  if (pid == 0)
    link_child(l);
  else
    link_parent(l);
  return true;
}

// --- Faults -----------------------------------------------------------------

JmpBuf g_jmp;
void escape(int) { pvk_longjmp(&g_jmp, 1); }

// Whether an access to addr raised SIGSEGV in this process (caught; the
// store did not happen).
bool faults(uint64_t addr, bool write) {
  CHECK_EQ(sigaction(SIGSEGV, escape, kSaNodefer), 0);
  volatile bool faulted = false;
  if (pvk_setjmp(&g_jmp) == 0) {
    if (write)
      poke(addr, 0xbadbadbadull);
    else
      (void)peek(addr);
  } else {
    faulted = true;
  }
  CHECK_EQ(sigaction(SIGSEGV, SIG_DFL), 0);
  return faulted;
}

void touch_write(void* p) { poke(reinterpret_cast<uint64_t>(p), 0xbadbadbadull); }
void touch_read(void* p) { (void)peek(reinterpret_cast<uint64_t>(p)); }

// Page p is mapped read-only: a store raises SIGSEGV here (and, if `helper`,
// kills a forked helper with SIGSEGV), and the page still reads its data.
void expect_read_only(unsigned p, bool helper = false) {
  const uint64_t addr = page_addr(p) + 8 * 7;
  CHECK(faults(addr, /*write=*/true));
  if (helper) CHECK_KILLED_BY(wait_status_of(touch_write, reinterpret_cast<void*>(addr)), SIGSEGV);
  CHECK_EQ(peek(addr), want(p, 7));
}

// Page p is not mapped (or PROT_NONE): a read raises SIGSEGV.
void expect_no_access(unsigned p, bool helper = false) {
  CHECK(faults(page_addr(p) + 8 * 9, /*write=*/false));
  if (helper) CHECK_KILLED_BY(wait_status_of(touch_read, page_ptr(p) + 9), SIGSEGV);
}

// --- The worker -------------------------------------------------------------

// Runs body in a worker and checks, in the test process: the worker passed;
// the ptshare counters are all 0 unless something was shared, and then the
// region's first fork shared every table; free frames are back.
void run_case(void (*body)()) {
  g_report = static_cast<volatile Report*>(map_anon(kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  CHECK(g_report != nullptr);
  if (!g_report) return;
  g_report->fork_shares = 0;
  g_report->checks = 0;
  set_failure_sink(g_report->failure, sizeof g_report->failure);
  PvkCounters c0;
  g_counters = read_counters(&c0) == 0;
  const uint64_t t0 = now_ns();
  const int64_t pid = fork_helper();
  if (pid == 0) {
    body();
    g_report->checks = checks();
    helper_exit();
  }
  CHECK(pid > 0);
  if (pid > 0) {
    const int st = wait_for(pid);
    // The record's first_failure names the check that failed in the worker
    // or a helper (their own lines are on the console too).
    if (st != wait_exited(0) && g_report->failure[0]) {
      char what[sizeof g_report->failure];
      for (size_t i = 0; i < sizeof what; ++i) what[i] = g_report->failure[i];
      what[sizeof what - 1] = '\0';
      check_failed(__LINE__, what, false, 0, 0);
    }
    CHECK_EQ(st, wait_exited(0));
  }
  const Delta d = since(c0);
  detail("ms", static_cast<int64_t>((now_ns() - t0) / 1000000));
  detail("pages", kPages);
  detail("worker_checks", g_report->checks);
  if (!g_counters) {
    detail_str("counters", "none (host)");
  } else {
    detail("fork_shares", static_cast<int64_t>(g_report->fork_shares));
    detail("pt_shares", d.shares);
    detail("pt_copyouts", d.copyouts);
    detail("pt_gate_opens", d.gate_opens);
    detail("pt_pushdowns", d.pushdowns);
    detail("l2_protects", d.l2_protects);
    detail("cow_copies", d.cow_copies);
    detail("page_faults", d.page_faults);
    detail("leaked_frames", -d.free_frames);
    if (d.shares > 0) {
      // Sharing is on: the region's own fork shared every one of its tables.
      CHECK(g_report->fork_shares >= kTables);
    } else {
      // ptshare=off: nothing of the feature ever runs.
      CHECK_EQ(d.copyouts, 0);
      CHECK_EQ(d.gate_opens, 0);
      CHECK_EQ(d.pushdowns, 0);
      CHECK_EQ(d.l2_protects, 0);
    }
    // Everything the worker and its helpers held is back.
    CHECK_EQ(d.free_frames, 0);
  }
  set_failure_sink(nullptr, 0);
  CHECK_EQ(munmap(const_cast<Report*>(g_report), kPage), 0);
}

// --- (a) both sides write everything ---------------------------------------

// The child writes every page while the parent waits, then the parent
// writes every page while the child waits; each sees only its own data, and
// the other's writes never leak across. Then (the region private again) a
// second fork where both write everything at once, in opposite orders.
void both_write() {
  Link l;
  int64_t pid;
  PvkCounters m0;
  if (!fork_linked(l, pid, m0)) return;
  if (pid == 0) {
    const PvkCounters m = snap();
    CHECK_EQ(mismatches(), 0);  // inherited, read through the shared tables
    write_pages(0, kPages, 2);
    CHECK_EQ(mismatches(), 0);
    // The parent still shares every table: each first write copies one out.
    if (g_sharing) CHECK(since(m).copyouts >= kTables);
    tell_parent(l, 'w');
    CHECK_EQ(from_parent(l), 'p');
    CHECK_EQ(mismatches(), 0);  // the parent's writes did not reach us
    helper_exit();
  }
  CHECK_EQ(from_child(l), 'w');
  CHECK_EQ(mismatches(), 0);  // the child's writes did not reach us
  const PvkCounters m1 = snap();
  write_pages(0, kPages, 3);
  CHECK_EQ(mismatches(), 0);
  // Last sharer of every table: gates open (or copies, never nothing).
  if (g_sharing) {
    const Delta d = since(m1);
    CHECK(d.copyouts + d.gate_opens >= kTables);
  }
  tell_child(l, 'p');
  CHECK_HELPER_OK(pid);
  link_close_parent(l);
  CHECK_EQ(mismatches(), 0);
  if (g_sharing) CHECK(since(m0).copyouts >= kTables);

  // Both at once: every table is first written while the other side still
  // shares it or right after, in whatever order the scheduler picks.
  link_open(l);
  const PvkCounters m2 = snap();
  pid = fork_shared(kTables);
  if (pid == 0) {
    link_child(l);
    write_pages(0, kPages, 4);
    CHECK_EQ(mismatches(), 0);
    tell_parent(l, 'w');
    CHECK_EQ(from_parent(l), 'e');  // the parent has written everything
    CHECK_EQ(mismatches(), 0);
    helper_exit();
  }
  link_parent(l);
  write_pages_down(0, kPages, 5);
  CHECK_EQ(mismatches(), 0);
  CHECK_EQ(from_child(l), 'w');
  CHECK_EQ(mismatches(), 0);
  tell_child(l, 'e');
  CHECK_HELPER_OK(pid);
  link_close_parent(l);
  CHECK_EQ(mismatches(), 0);
  if (g_sharing) {
    // Per table: the first writer copies it out, the second is its last sharer.
    const Delta d = since(m2);
    CHECK(d.copyouts >= kTables);
    CHECK(d.copyouts + d.gate_opens >= 2 * kTables);
  }
  unmap_region();
}

// --- (b) the child exits first ----------------------------------------------

// The child reads everything and exits without writing; the parent, now the
// only user of tables that were shared, rewrites everything: no frame is
// copied, and with sharing each table's gate just opens (no copy-out, about
// one fault per table instead of one per page). Again with a child that
// writes one table before it exits.
void child_exits() {
  if (!map_region()) return;
  write_pages(0, kPages, 1);
  int64_t pid = fork_shared(kTables, /*first=*/true);
  if (pid == 0) {
    CHECK_EQ(mismatches(), 0);
    helper_exit();
  }
  CHECK_HELPER_OK(pid);
  PvkCounters m = snap();
  write_pages(0, kPages, 2);
  Delta d = since(m);
  CHECK_EQ(mismatches(), 0);
  if (g_counters) CHECK_EQ(d.cow_copies, 0);  // every frame had one user left
  if (g_sharing) {
    CHECK_EQ(d.copyouts, 0);
    CHECK(d.gate_opens >= kTables);
    CHECK(d.page_faults <= kPages / 8);  // not one per page
  }

  // The child writes table 1 (a copy-out: the parent shares it), then exits.
  pid = fork_shared(kTables);
  if (pid == 0) {
    CHECK_EQ(mismatches(), 0);
    write_pages(table(1), table(2), 3);
    CHECK_EQ(mismatches(), 0);
    helper_exit();
  }
  CHECK_HELPER_OK(pid);
  CHECK_EQ(mismatches(), 0);  // the child's table-1 writes stayed there
  m = snap();
  write_pages(0, kPages, 4);
  d = since(m);
  CHECK_EQ(mismatches(), 0);
  if (g_counters) CHECK_EQ(d.cow_copies, 0);
  if (g_sharing) {
    CHECK_EQ(d.copyouts, 0);
    CHECK(d.gate_opens >= kTables - 1);  // tables 0 and 2 at least (1 may have been opened by the copy-out)
  }
  unmap_region();
}

// --- (c) a fork chain three deep --------------------------------------------

// parent -> child -> grandchild. The child writes half of table 0 (a
// copy-out) and forks the grandchild while it still shares tables 1 and 2
// with the parent (three sharers). The grandchild writes half of table 1;
// the parent, while both descendants live, writes half of table 2; the
// child, after the grandchild is gone, writes into tables 1 and 2; the
// parent finally rewrites everything. Each process checks all of its view
// after every step.
void chain() {
  if (!map_region()) return;
  write_pages(0, kPages, 1);
  Link pg;  // parent <-> grandchild (the child is waited for)
  link_open(pg);
  const PvkCounters m0 = snap();
  const int64_t child = fork_shared(kTables, /*first=*/true);
  if (child == 0) {
    link_close_parent(pg);  // the parent's ends; the grandchild's stay open until it is forked
    CHECK_EQ(mismatches(), 0);
    write_pages(table(0), table(1), 2, 2);
    CHECK_EQ(mismatches(), 0);
    const int64_t grandchild = fork_shared(kTables);
    if (grandchild == 0) {
      CHECK_EQ(mismatches(), 0);  // the child's table-0 writes, the parent's data elsewhere
      write_pages(table(1) + 1, table(2), 3, 2);
      CHECK_EQ(mismatches(), 0);
      tell_parent(pg, 'g');
      CHECK_EQ(from_parent(pg), 'p');  // the parent wrote table 2 meanwhile
      CHECK_EQ(mismatches(), 0);
      helper_exit();
    }
    link_close_child(pg);
    CHECK_HELPER_OK(grandchild);
    CHECK_EQ(mismatches(), 0);  // neither the grandchild's nor the parent's writes reached us
    write_pages(table(1), table(2), 4, 2);
    write_pages(table(2), table(2) + 16, 4);
    CHECK_EQ(mismatches(), 0);
    helper_exit();
  }
  link_parent(pg);
  CHECK_EQ(from_child(pg), 'g');  // the grandchild has written; all three alive
  CHECK_EQ(mismatches(), 0);
  write_pages(table(2), table(3), 5, 2);
  CHECK_EQ(mismatches(), 0);
  tell_child(pg, 'p');
  CHECK_HELPER_OK(child);
  link_close_parent(pg);
  CHECK_EQ(mismatches(), 0);
  write_pages(0, kPages, 6);
  CHECK_EQ(mismatches(), 0);
  if (g_sharing) {
    // Two forks of three tables each; copy-outs at least for the child's
    // table 0, the grandchild's table 1, the parent's table 2 and the
    // child's table 1; gates opened for the rest.
    const Delta d = since(m0);
    CHECK(d.shares >= 2 * kTables);
    CHECK(d.copyouts >= 4);
    CHECK(d.copyouts + d.gate_opens >= 6);
  }
  unmap_region();
}

// --- (d) mprotect of shared tables --------------------------------------------

// mprotect to read-only of whole tables and of ranges that cut a table,
// while the tables are shared, in the child and then in the parent: a write
// raises SIGSEGV (in the process and in a forked helper), reads see the
// data, the neighbours of a cut stay writable; mprotect back to read-write
// and writes work. PROT_NONE of a shared table, too. Neither side's
// protections or writes reach the other. Then, alone, the parent protects
// whole private tables (at L2 with sharing on).
void mprotect_shared() {
  Link l;
  int64_t pid;
  PvkCounters m0;
  if (!fork_linked(l, pid, m0)) return;
  if (pid == 0) {
    // Table 1 whole and pages 100..299 of table 2, read-only.
    CHECK_EQ(mprotect(page_ptr(table(1)), kTableBytes, PROT_READ), 0);
    CHECK_EQ(mprotect(page_ptr(table(2) + 100), 200 * kPage, PROT_READ), 0);
    expect_read_only(table(1), /*helper=*/true);
    expect_read_only(table(1) + kPagesPerTable - 1);
    expect_read_only(table(2) + 100, /*helper=*/true);
    expect_read_only(table(2) + 299);
    write_pages(table(2) + 99, table(2) + 100, 2);  // the cut's neighbours stay writable
    write_pages(table(2) + 300, table(2) + 301, 2);
    CHECK_EQ(mismatches(), 0);
    CHECK_EQ(mprotect(page_ptr(table(1)), kTableBytes, PROT_READ | PROT_WRITE), 0);
    CHECK_EQ(mprotect(page_ptr(table(2) + 100), 200 * kPage, PROT_READ | PROT_WRITE), 0);
    write_pages(table(1), table(2), 2);
    write_pages(table(2) + 100, table(2) + 300, 2);
    CHECK_EQ(mismatches(), 0);

    // Table 0, written (so private to us) and then protected whole.
    write_pages(table(0), table(1), 3, 2);
    const PvkCounters m = snap();
    CHECK_EQ(mprotect(page_ptr(table(0)), kTableBytes, PROT_READ), 0);
    if (g_sharing) CHECK(since(m).l2_protects >= 1);
    expect_read_only(table(0));
    expect_read_only(table(0) + 1);
    CHECK_EQ(mismatches(), 0);
    CHECK_EQ(mprotect(page_ptr(table(0)), kTableBytes, PROT_READ | PROT_WRITE), 0);
    write_pages(table(0) + 1, table(1), 3, 2);
    CHECK_EQ(mismatches(), 0);

    // PROT_NONE of all of table 2 (never at L2): no access, then back.
    CHECK_EQ(mprotect(page_ptr(table(2)), kTableBytes, PROT_NONE), 0);
    expect_no_access(table(2), /*helper=*/true);
    expect_no_access(table(2) + 200);
    CHECK_EQ(mprotect(page_ptr(table(2)), kTableBytes, PROT_READ | PROT_WRITE), 0);
    CHECK_EQ(mismatches(), 0);

    tell_parent(l, 'c');
    CHECK_EQ(from_parent(l), 'p');  // the parent protected and wrote meanwhile
    CHECK_EQ(mismatches(), 0);
    write_pages(table(1) + 5, table(1) + 6, 4);  // our table 1 is writable whatever the parent did
    CHECK_EQ(mismatches(), 0);
    helper_exit();
  }
  CHECK_EQ(from_child(l), 'c');
  // Nothing the child protected or wrote shows here; all of it is writable.
  CHECK_EQ(mismatches(), 0);
  // The second half of table 0 and all of table 1, read-only, in one call
  // (table 0 was copied out by the child: ours is shared with nobody, but
  // its gate may still be closed; table 1 likewise).
  CHECK_EQ(mprotect(page_ptr(table(0) + 256), (kPagesPerTable - 256 + kPagesPerTable) * kPage, PROT_READ), 0);
  expect_read_only(table(0) + 256, /*helper=*/true);
  expect_read_only(table(1) + 300, /*helper=*/true);
  write_pages(table(0) + 255, table(0) + 256, 5);
  write_pages(table(2), table(2) + 1, 5);
  CHECK_EQ(mismatches(), 0);
  CHECK_EQ(mprotect(page_ptr(table(0) + 256), (kPagesPerTable - 256 + kPagesPerTable) * kPage, PROT_READ | PROT_WRITE),
           0);
  write_pages(table(0) + 256, table(2), 5);
  CHECK_EQ(mismatches(), 0);
  tell_child(l, 'p');
  CHECK_HELPER_OK(pid);
  link_close_parent(l);
  CHECK_EQ(mismatches(), 0);

  // Alone now. The whole region read-only, then back.
  PvkCounters m = snap();
  CHECK_EQ(mprotect(g_base, kTables * kTableBytes, PROT_READ), 0);
  for (unsigned t = 0; t < kTables; ++t) expect_read_only(table(t) + 17);
  CHECK_EQ(mismatches(), 0);
  CHECK_EQ(mprotect(g_base, kTables * kTableBytes, PROT_READ | PROT_WRITE), 0);
  write_pages(0, kPages, 6);
  CHECK_EQ(mismatches(), 0);
  if (g_sharing) CHECK(since(m).l2_protects >= 1);
  // Table 2, written by us alone, read-only at its L2 entry, then back.
  m = snap();
  CHECK_EQ(mprotect(page_ptr(table(2)), kTableBytes, PROT_READ), 0);
  if (g_sharing) CHECK(since(m).l2_protects >= 1);
  expect_read_only(table(2) + 511, /*helper=*/true);
  CHECK_EQ(mprotect(page_ptr(table(2)), kTableBytes, PROT_READ | PROT_WRITE), 0);
  write_pages(table(2), table(3), 7);
  CHECK_EQ(mismatches(), 0);
  if (g_sharing) {
    const Delta d = since(m0);
    CHECK(d.l2_protects >= 3);
    CHECK(d.copyouts + d.gate_opens >= kTables);
  }
  unmap_region();
}

// --- (e) read() into shared tables --------------------------------------------

uint8_t g_bytes[4096];
uint8_t byte_of(uint64_t i, uint8_t seed) { return static_cast<uint8_t>((i * 37) ^ (i >> 7) ^ seed); }

// Writes n bytes of seed's stream into a fresh pipe and read()s them to
// addr (the kernel's copy_to_user does the stores); returns what read said.
int64_t read_into(uint64_t addr, size_t n, uint8_t seed) {
  int p[2];
  CHECK_EQ(pipe(p), 0);
  for (size_t i = 0; i < n; ++i) g_bytes[i] = byte_of(i, seed);
  CHECK_EQ(write(p[1], g_bytes, n), n);
  const int64_t r = read(p[0], reinterpret_cast<void*>(addr), n);
  close(p[0]);
  close(p[1]);
  return r;
}

// Checks that [addr, addr+n) holds seed's stream and the rest of its pages
// the model's words; then rewrites those pages with `tag` (the model again).
void check_read_and_restore(uint64_t addr, size_t n, uint8_t seed, uint8_t tag) {
  uint64_t bad = 0;
  const auto* b = reinterpret_cast<const volatile uint8_t*>(addr);
  for (size_t i = 0; i < n; ++i) bad += b[i] != byte_of(i, seed);
  CHECK_EQ(bad, 0);
  const unsigned first = static_cast<unsigned>((addr - page_addr(0)) / kPage);
  const unsigned last = static_cast<unsigned>((addr + n - 1 - page_addr(0)) / kPage);
  uint64_t outside = 0;
  for (unsigned p = first; p <= last; ++p)
    for (unsigned i = 0; i < kWords; ++i) {
      const uint64_t a = page_addr(p) + 8 * i;
      if (a + 8 <= addr || a >= addr + n) outside += peek(a) != want(p, i);
    }
  CHECK_EQ(outside, 0);
  write_pages(first, last + 1, tag);
}

// The child read()s into a shared table (across a page boundary), across
// the boundary of a private and a shared table, and into a whole table it
// made read-only (EFAULT, nothing written, the bytes stay in the pipe);
// the parent then read()s into tables it shares or was left alone with,
// one boundary-crossing; neither sees the other's data.
void read_into_shared() {
  Link l;
  int64_t pid;
  PvkCounters m0;
  if (!fork_linked(l, pid, m0)) return;
  if (pid == 0) {
    const PvkCounters m = snap();
    uint64_t at = page_addr(table(1) + 10) + 2048;  // pages 10 and 11 of table 1
    CHECK_EQ(read_into(at, 4096, 0x11), 4096);
    if (g_sharing) CHECK(since(m).copyouts >= 1);  // the kernel's store copied table 1 out
    check_read_and_restore(at, 4096, 0x11, 2);
    at = page_addr(table(2)) - 1000;  // the end of table 1 (ours now), the start of table 2 (shared)
    CHECK_EQ(read_into(at, 3000, 0x22), 3000);
    check_read_and_restore(at, 3000, 0x22, 2);
    CHECK_EQ(mismatches(), 0);

    // Table 0 read-only: the read fails, the bytes wait in the pipe.
    CHECK_EQ(mprotect(page_ptr(table(0)), kTableBytes, PROT_READ), 0);
    int p[2];
    CHECK_EQ(pipe(p), 0);
    for (size_t i = 0; i < 100; ++i) g_bytes[i] = byte_of(i, 0x33);
    CHECK_EQ(write(p[1], g_bytes, 100), 100);
    at = page_addr(table(0) + 5) + 40;
    CHECK_EQ(read(p[0], reinterpret_cast<void*>(at), 100), -EFAULT);
    CHECK_EQ(mismatches(), 0);
    CHECK_EQ(mprotect(page_ptr(table(0)), kTableBytes, PROT_READ | PROT_WRITE), 0);
    CHECK_EQ(read(p[0], reinterpret_cast<void*>(at), 100), 100);
    close(p[0]);
    close(p[1]);
    check_read_and_restore(at, 100, 0x33, 2);
    CHECK_EQ(mismatches(), 0);

    tell_parent(l, 'c');
    CHECK_EQ(from_parent(l), 'p');
    CHECK_EQ(mismatches(), 0);  // the parent's reads did not reach us
    helper_exit();
  }
  CHECK_EQ(from_child(l), 'c');
  CHECK_EQ(mismatches(), 0);  // nor the child's here
  const PvkCounters m = snap();
  uint64_t at = page_addr(table(2) + 3) + 100;
  CHECK_EQ(read_into(at, 2000, 0x44), 2000);
  check_read_and_restore(at, 2000, 0x44, 3);
  at = page_addr(table(1)) - 2048;  // across the boundary of tables 0 and 1
  CHECK_EQ(read_into(at, 4096, 0x55), 4096);
  check_read_and_restore(at, 4096, 0x55, 3);
  CHECK_EQ(mismatches(), 0);
  if (g_sharing) {
    const Delta d = since(m);
    CHECK(d.copyouts + d.gate_opens >= 1);
  }
  tell_child(l, 'p');
  CHECK_HELPER_OK(pid);
  link_close_parent(l);
  // Alone: a read into table 0, whose gate the child's copy-out left to us.
  at = page_addr(table(0) + 300);
  CHECK_EQ(read_into(at, 4096, 0x66), 4096);
  check_read_and_restore(at, 4096, 0x66, 4);
  CHECK_EQ(mismatches(), 0);
  unmap_region();
}

// --- (f) munmap of shared tables ----------------------------------------------

// The child unmaps part of table 1 and all of table 2 while it shares them;
// the parent keeps reading and writing all of its region, and unmaps part
// of table 0 while the child still shares it. Holes fault, the rest keeps
// its data on both sides.
void munmap_shared() {
  Link l;
  int64_t pid;
  PvkCounters m0;
  if (!fork_linked(l, pid, m0)) return;
  if (pid == 0) {
    CHECK_EQ(munmap(page_ptr(table(1) + 100), 100 * kPage), 0);
    for (unsigned p = table(1) + 100; p < table(1) + 200; ++p) g_tag[p] = 0;
    CHECK_EQ(munmap(page_ptr(table(2)), kTableBytes), 0);
    for (unsigned p = table(2); p < table(3); ++p) g_tag[p] = 0;
    expect_no_access(table(1) + 100, /*helper=*/true);
    expect_no_access(table(1) + 199);
    expect_no_access(table(2) + 5, /*helper=*/true);
    CHECK_EQ(mismatches(), 0);
    write_pages(table(1), table(1) + 100, 2);
    write_pages(table(1) + 200, table(2), 2);
    CHECK_EQ(mismatches(), 0);
    tell_parent(l, 'c');
    CHECK_EQ(from_parent(l), 'p');
    CHECK_EQ(mismatches(), 0);  // the parent's writes and its munmap did not reach us
    expect_no_access(table(2) + 300);
    write_pages(table(0), table(0) + 64, 2);  // table 0, the part the parent unmapped too
    CHECK_EQ(mismatches(), 0);
    helper_exit();
  }
  CHECK_EQ(from_child(l), 'c');
  CHECK_EQ(mismatches(), 0);  // the child's holes are not ours
  write_pages(table(1), table(3), 3);
  CHECK_EQ(mismatches(), 0);
  CHECK_EQ(munmap(page_ptr(table(0) + 32), 64 * kPage), 0);
  for (unsigned p = table(0) + 32; p < table(0) + 96; ++p) g_tag[p] = 0;
  expect_no_access(table(0) + 40, /*helper=*/true);
  CHECK_EQ(mismatches(), 0);
  tell_child(l, 'p');
  CHECK_HELPER_OK(pid);
  link_close_parent(l);
  CHECK_EQ(mismatches(), 0);
  write_pages(table(0), table(0) + 32, 4);
  write_pages(table(0) + 96, table(3), 4);
  CHECK_EQ(mismatches(), 0);
  if (g_sharing) {
    const Delta d = since(m0);
    CHECK(d.copyouts + d.gate_opens >= 2);  // the parent's writes to tables 1 and 2 at least
  }
  unmap_region();
}

}  // namespace

void test_ptshare_both_write() { run_case(both_write); }
void test_ptshare_child_exits() { run_case(child_exits); }
void test_ptshare_chain() { run_case(chain); }
void test_ptshare_mprotect() { run_case(mprotect_shared); }
void test_ptshare_read_into() { run_case(read_into_shared); }
void test_ptshare_munmap() { run_case(munmap_shared); }

}  // namespace proctest
