// zero_page, mmap_shared, munmap.
#include "harness.h"

namespace proctest {
namespace {

constexpr unsigned kWords = kPage / 8;

// Pages of a zero_page region that get written, and the words written in them.
bool written(unsigned page) { return page % 7 == 3; }
constexpr unsigned kWrittenWords[] = {0, 17, kWords - 1};

// Checks every word of the region: written pages hold pattern(tag, ...) at
// kWrittenWords and zero elsewhere; other pages are all zero. Also the pages
// (child_pages) a child wrote with tag 9 at word 5. Returns the bad words.
uint64_t zero_region_mismatches(const uint64_t* base, unsigned pages, bool (*child_page)(unsigned)) {
  uint64_t bad = 0;
  for (unsigned p = 0; p < pages; ++p) {
    const volatile uint64_t* w = base + uint64_t{p} * kWords;
    for (unsigned i = 0; i < kWords; ++i) {
      uint64_t want = 0;
      if (written(p))
        for (unsigned k : kWrittenWords)
          if (i == k) want = pattern(5, uint64_t{p} * kWords + i);
      if (child_page && child_page(p) && i == 5) want = pattern(9, p);
      bad += w[i] != want;
    }
  }
  return bad;
}

bool no_child_page(unsigned) { return false; }
bool child_written(unsigned p) { return p % 7 == 4 || p % 7 == 3; }

}  // namespace

// A 4 MiB private anonymous region reads as zeros everywhere (each page
// touched by a read first: the zero page, when zero_page=on). Writing a few
// words into every 7th page leaves exactly those words set and every other
// byte zero. A forked child sees the same; its writes to never-written
// (zero-mapped) and written pages do not show in the parent. A region mapped
// again after a dirty one was unmapped is zero again (freed frames are
// cleared before reuse).
void test_zero_page() {
  constexpr unsigned kPages = 1024;
  const uint64_t len = uint64_t{kPages} * kPage;
  auto* region = static_cast<uint64_t*>(map_anon(len));
  CHECK(region != nullptr);
  if (!region) return;
  PvkCounters c0, c1, c2;
  const bool counters = read_counters(&c0) == 0;

  unsigned nonzero_pages = 0;
  for (unsigned p = 0; p < kPages; ++p) {
    const volatile uint64_t* w = region + uint64_t{p} * kWords;
    uint64_t any = 0;
    for (unsigned i = 0; i < kWords; ++i) any |= w[i];
    nonzero_pages += any != 0;
  }
  CHECK_EQ(nonzero_pages, 0);
  if (counters && read_counters(&c1) == 0) {
    detail("read_faults", static_cast<int64_t>(c1.page_faults - c0.page_faults));
    detail("zero_page_maps", static_cast<int64_t>(c1.zero_page_maps - c0.zero_page_maps));
  }

  for (unsigned p = 0; p < kPages; ++p)
    if (written(p))
      for (unsigned k : kWrittenWords) region[uint64_t{p} * kWords + k] = pattern(5, uint64_t{p} * kWords + k);
  CHECK_EQ(zero_region_mismatches(region, kPages, no_child_page), 0);
  if (counters && read_counters(&c2) == 0)
    detail("write_faults", static_cast<int64_t>(c2.page_faults - c1.page_faults));

  int64_t pid = fork_helper();
  if (pid == 0) {
    CHECK_EQ(zero_region_mismatches(region, kPages, no_child_page), 0);
    for (unsigned p = 0; p < kPages; ++p)
      if (child_written(p)) region[uint64_t{p} * kWords + 5] = pattern(9, p);
    CHECK_EQ(zero_region_mismatches(region, kPages, child_written), 0);
    helper_exit();
  }
  CHECK(pid > 0);
  CHECK_HELPER_OK(pid);
  CHECK_EQ(zero_region_mismatches(region, kPages, no_child_page), 0);

  // Dirty everything, unmap, map again: zeros.
  for (uint64_t i = 0; i < len / 8; ++i) region[i] = ~i;
  CHECK_EQ(munmap(region, len), 0);
  region = static_cast<uint64_t*>(map_anon(len));
  CHECK(region != nullptr);
  if (!region) return;
  // The first touch of each page is a write (a fresh frame, which must have
  // been cleared), then every word is read.
  volatile uint64_t* v = region;
  uint64_t any = 0;
  for (unsigned p = 0; p < kPages; ++p) {
    v[uint64_t{p} * kWords + kWords / 2] = 0;
    for (unsigned i = 0; i < kWords; ++i) any |= v[uint64_t{p} * kWords + i];
  }
  CHECK_EQ(any, 0);
  CHECK_EQ(munmap(region, len), 0);
  detail("pages", kPages);
}

// MAP_SHARED|MAP_ANONYMOUS: what the parent wrote before fork is seen by the
// child; what the child writes (also to pages nobody touched before the fork,
// and from a grandchild) is seen by the parent; writes are visible while
// both run. A private page next to it stays private. A child's munmap of the
// shared region leaves the parent's mapping alone.
void test_mmap_shared() {
  constexpr unsigned kPages = 4;
  auto* shared = static_cast<volatile uint64_t*>(map_anon(kPages * kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  auto* fresh = static_cast<volatile uint64_t*>(map_anon(2 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  auto* priv = static_cast<volatile uint64_t*>(map_anon(kPage));
  CHECK(shared != nullptr && fresh != nullptr && priv != nullptr);
  if (!shared || !fresh || !priv) return;
  for (unsigned i = 0; i < kPages * kWords; ++i) shared[i] = pattern(1, i);
  priv[0] = 1;

  int64_t pid = fork_helper();
  if (pid == 0) {
    uint64_t bad = 0;
    for (unsigned i = 0; i < kPages * kWords; ++i) bad += shared[i] != pattern(1, i);
    CHECK_EQ(bad, 0);
    for (unsigned i = 0; i < kPages * kWords; ++i) shared[i] = pattern(2, i);
    fresh[0] = 0xf00d;            // first touch of this page is in the child
    fresh[kWords + 1] = 0xbeef;   // and of this one
    priv[0] = 2;
    // A grandchild's write reaches everyone too.
    int64_t g = fork_helper();
    if (g == 0) {
      CHECK_EQ(shared[3], pattern(2, 3));
      shared[3] = 0x6c;
      helper_exit();
    }
    CHECK_HELPER_OK(g);
    CHECK_EQ(shared[3], 0x6c);
    helper_exit();
  }
  CHECK(pid > 0);
  CHECK_HELPER_OK(pid);
  uint64_t bad = 0;
  for (unsigned i = 0; i < kPages * kWords; ++i)
    if (i != 3) bad += shared[i] != pattern(2, i);
  CHECK_EQ(bad, 0);
  CHECK_EQ(shared[3], 0x6c);
  CHECK_EQ(fresh[0], 0xf00d);
  CHECK_EQ(fresh[kWords + 1], 0xbeef);
  CHECK_EQ(priv[0], 1);

  // Both alive: the parent writes, the child sees it and answers.
  shared[10] = 0;
  shared[11] = 0;
  pid = fork_helper();
  if (pid == 0) {
    const uint64_t t0 = now_ns();
    while (shared[10] != 0xc && now_ns() - t0 < 5000000000ull) sched_yield();
    CHECK_EQ(shared[10], 0xc);
    shared[11] = 0xd;
    helper_exit();
  }
  CHECK(pid > 0);
  for (int i = 0; i < 5; ++i) sched_yield();
  shared[10] = 0xc;
  const uint64_t t0 = now_ns();
  while (shared[11] != 0xd && now_ns() - t0 < 5000000000ull) sched_yield();
  CHECK_EQ(shared[11], 0xd);
  CHECK_HELPER_OK(pid);

  // A child unmapping the shared region does not unmap ours.
  pid = fork_helper();
  if (pid == 0) {
    CHECK_EQ(munmap(const_cast<uint64_t*>(shared), kPages * kPage), 0);
    helper_exit();
  }
  CHECK_HELPER_OK(pid);
  shared[12] = 12;
  CHECK_EQ(shared[12], 12);
  CHECK_EQ(shared[0], pattern(2, 0));

  CHECK_EQ(munmap(const_cast<uint64_t*>(shared), kPages * kPage), 0);
  CHECK_EQ(munmap(const_cast<uint64_t*>(fresh), 2 * kPage), 0);
  CHECK_EQ(munmap(const_cast<uint64_t*>(priv), kPage), 0);
}

namespace {
void touch_write(void* p) { poke(reinterpret_cast<uint64_t>(p)); }
void touch_read(void* p) { peek(reinterpret_cast<uint64_t>(p)); }
}  // namespace

// munmap of the middle of an 8-page region: the pages on both sides keep
// their data and stay writable, the hole faults (read and write: SIGSEGV in
// a child), a MAP_FIXED mapping fills part of the hole with zeros while the
// rest stays a hole; unmapping the whole span (holes included) succeeds and
// every page then faults. An mprotect in the middle splits the same way.
void test_munmap() {
  constexpr unsigned kPages = 8;
  auto* base = static_cast<uint64_t*>(map_anon(kPages * kPage));
  CHECK(base != nullptr);
  if (!base) return;
  auto page = [&](unsigned p) { return base + uint64_t{p} * kWords; };
  for (unsigned p = 0; p < kPages; ++p)
    for (unsigned i = 0; i < kWords; ++i) page(p)[i] = pattern(p, i);

  CHECK_EQ(munmap(page(3), 2 * kPage), 0);
  uint64_t bad = 0;
  for (unsigned p = 0; p < kPages; ++p) {
    if (p == 3 || p == 4) continue;
    for (unsigned i = 0; i < kWords; ++i) bad += page(p)[i] != pattern(p, i);
    page(p)[1] = 0x1111 * p;  // still writable
    bad += page(p)[1] != 0x1111 * p;
  }
  CHECK_EQ(bad, 0);
  int st = wait_status_of(touch_write, page(3));
  CHECK_KILLED_BY(st, SIGSEGV);
  st = wait_status_of(touch_read, page(4) + 100);
  CHECK_KILLED_BY(st, SIGSEGV);

  // Refill page 3 only.
  const int64_t r = mmap(page(3), kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED);
  CHECK_EQ(r, reinterpret_cast<int64_t>(page(3)));
  if (r == reinterpret_cast<int64_t>(page(3))) {
    uint64_t any = 0;
    for (unsigned i = 0; i < kWords; ++i) any |= page(3)[i];
    CHECK_EQ(any, 0);
    page(3)[7] = 77;
    CHECK_EQ(page(3)[7], 77);
  }
  st = wait_status_of(touch_write, page(4));
  CHECK_KILLED_BY(st, SIGSEGV);
  CHECK_EQ(page(2)[kWords - 1], pattern(2, kWords - 1));
  CHECK_EQ(page(5)[0], pattern(5, 0));

  // mprotect splits too: page 6 read-only, 5 and 7 writable.
  CHECK_EQ(mprotect(page(6), kPage, PROT_READ), 0);
  page(5)[2] = 52;
  page(7)[2] = 72;
  CHECK_EQ(page(5)[2], 52);
  CHECK_EQ(page(7)[2], 72);
  CHECK_EQ(page(6)[2], pattern(6, 2));
  st = wait_status_of(touch_write, page(6));
  CHECK_KILLED_BY(st, SIGSEGV);

  // The whole span, hole included.
  CHECK_EQ(munmap(base, kPages * kPage), 0);
  st = wait_status_of(touch_read, page(0));
  CHECK_KILLED_BY(st, SIGSEGV);
  st = wait_status_of(touch_read, page(7));
  CHECK_KILLED_BY(st, SIGSEGV);
  st = wait_status_of(touch_write, page(3));
  CHECK_KILLED_BY(st, SIGSEGV);
}

}  // namespace proctest
