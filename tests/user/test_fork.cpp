// fork_cow, fork_tree, fork_exec.
#include "harness.h"

namespace proctest {
namespace {

constexpr unsigned kWordsPerPage = kPage / 8;

// Globals in .bss and .data, shared copy-on-write like the heap.
constexpr unsigned kBssPages = 8, kDataPages = 4;
uint64_t g_bss_area[kBssPages * kWordsPerPage];
uint64_t g_data_area[kDataPages * kWordsPerPage] = {1};  // initialised: lives in .data

// Fills page p of base (for every p with select(p)) with pattern(tag_of(p), word).
template <typename Sel, typename Tag>
void write_pages(uint64_t* base, unsigned pages, Sel select, Tag tag_of) {
  for (unsigned p = 0; p < pages; ++p) {
    if (!select(p)) continue;
    volatile uint64_t* w = base + p * kWordsPerPage;
    for (unsigned i = 0; i < kWordsPerPage; ++i) w[i] = pattern(tag_of(p), p * kWordsPerPage + i);
  }
}

// Words of base (pages pages) that differ from pattern(tag_of(page), word).
template <typename Tag>
uint64_t mismatches(const uint64_t* base, unsigned pages, Tag tag_of) {
  uint64_t bad = 0;
  for (unsigned p = 0; p < pages; ++p) {
    const volatile uint64_t* w = base + p * kWordsPerPage;
    for (unsigned i = 0; i < kWordsPerPage; ++i) bad += w[i] != pattern(tag_of(p), p * kWordsPerPage + i);
  }
  return bad;
}

constexpr auto all = [](unsigned) { return true; };
constexpr auto even = [](unsigned p) { return p % 2 == 0; };

}  // namespace

// Parent fills 64 private anonymous pages and 12 pages of globals, forks; the
// child overwrites the even pages and must see its writes there and the
// parent's values elsewhere; the parent, while the child lives and after it
// is gone, must see only its own values. Both sides also write a page the
// other still shares while both are alive.
void test_fork_cow() {
  constexpr unsigned kPages = 64;
  auto* region = static_cast<uint64_t*>(map_anon(kPages * kPage));
  CHECK(region != nullptr);
  if (!region) return;
  auto tag1 = [](unsigned) { return 1; };
  write_pages(region, kPages, all, tag1);
  write_pages(g_bss_area, kBssPages, all, tag1);
  write_pages(g_data_area, kDataPages, all, tag1);

  int to_child[2], to_parent[2];
  CHECK_EQ(pipe(to_child), 0);
  CHECK_EQ(pipe(to_parent), 0);
  PvkCounters c0, c1;
  const bool counters = read_counters(&c0) == 0;

  auto child_view = [](unsigned p) { return p % 2 == 0 ? 2 : 1; };
  int64_t pid = fork_helper();
  CHECK(pid >= 0);
  if (pid == 0) {
    CHECK_EQ(mismatches(region, kPages, tag1), 0);
    CHECK_EQ(mismatches(g_bss_area, kBssPages, tag1), 0);
    CHECK_EQ(mismatches(g_data_area, kDataPages, tag1), 0);
    auto tag2 = [](unsigned) { return 2; };
    write_pages(region, kPages, even, tag2);
    write_pages(g_bss_area, kBssPages, even, tag2);
    write_pages(g_data_area, kDataPages, even, tag2);
    CHECK_EQ(mismatches(region, kPages, child_view), 0);
    CHECK_EQ(mismatches(g_bss_area, kBssPages, child_view), 0);
    CHECK_EQ(mismatches(g_data_area, kDataPages, child_view), 0);
    send_byte(to_parent[1], 'w');
    // The parent now writes page 1 (still shared with us): invisible here.
    CHECK_EQ(recv_byte(to_child[0]), 'p');
    CHECK_EQ(mismatches(region, kPages, child_view), 0);
    helper_exit();
  }
  if (pid < 0) return;
  CHECK_EQ(recv_byte(to_parent[0]), 'w');
  // The child's writes must not show here, while it is alive...
  CHECK_EQ(mismatches(region, kPages, tag1), 0);
  CHECK_EQ(mismatches(g_bss_area, kBssPages, tag1), 0);
  CHECK_EQ(mismatches(g_data_area, kDataPages, tag1), 0);
  auto tag3 = [](unsigned) { return 3; };
  write_pages(region, kPages, [](unsigned p) { return p == 1; }, tag3);
  send_byte(to_child[1], 'p');
  CHECK_HELPER_OK(pid);
  // ...nor after it is gone.
  auto parent_view = [](unsigned p) { return p == 1 ? 3 : 1; };
  CHECK_EQ(mismatches(region, kPages, parent_view), 0);
  CHECK_EQ(mismatches(g_bss_area, kBssPages, tag1), 0);
  CHECK_EQ(mismatches(g_data_area, kDataPages, tag1), 0);
  if (counters && read_counters(&c1) == 0) {
    detail("cow_copies", static_cast<int64_t>(c1.cow_copies - c0.cow_copies));
    detail("page_faults", static_cast<int64_t>(c1.page_faults - c0.page_faults));
  }
  // Sole owner again: every page writable and holding what is written.
  auto tag4 = [](unsigned) { return 4; };
  write_pages(region, kPages, all, tag4);
  CHECK_EQ(mismatches(region, kPages, tag4), 0);
  CHECK_EQ(munmap(region, kPages * kPage), 0);
  const int fds[] = {to_child[0], to_child[1], to_parent[0], to_parent[1]};
  for (int fd : fds) CHECK_EQ(close(fd), 0);
  detail("pages", kPages + kBssPages + kDataPages);
}

namespace {

constexpr int kTreeDepth = 4, kTreeFanout = 2;
uint64_t* g_tree_page;  // private anonymous page
uint64_t g_tree_global;

// One node of the fork tree at `level` with `path` (base-4 digits 1..fanout,
// one per level). Writes its identity into the shared-by-COW page and the
// global, forks its children, checks its own view after each subtree ran.
// Returns the number of processes in its subtree that passed.
unsigned tree_node(int level, uint64_t path) {
  // What the ancestors wrote before forking is inherited.
  for (int l = 0; l < level; ++l) CHECK_EQ(g_tree_page[2 + l], path >> (2 * (level - l)));
  if (level > 0) {
    CHECK_EQ(g_tree_page[0], level - 1);
    CHECK_EQ(g_tree_page[1], path >> 2);
    CHECK_EQ(g_tree_global, (path >> 2) * 16 + level - 1);
  }
  g_tree_page[0] = level;
  g_tree_page[1] = path;
  g_tree_page[2 + level] = path;
  g_tree_global = path * 16 + level;

  unsigned count = 1;
  if (level < kTreeDepth) {
    int64_t pids[kTreeFanout];
    for (int k = 0; k < kTreeFanout; ++k) {
      pids[k] = fork_helper();
      CHECK(pids[k] >= 0);
      if (pids[k] == 0) {
        unsigned n = tree_node(level + 1, path * 4 + k + 1);
        exit_group(failures() ? 255 : static_cast<int>(n));
      }
    }
    for (int k = 0; k < kTreeFanout; ++k) {
      if (pids[k] < 0) continue;
      const int st = wait_for(pids[k]);
      CHECK(WIFEXITED(st));
      CHECK(WEXITSTATUS(st) != 255);
      if (WIFEXITED(st) && WEXITSTATUS(st) != 255) count += static_cast<unsigned>(WEXITSTATUS(st));
    }
  }
  // Whatever the descendants wrote, this process still sees its own values.
  CHECK_EQ(g_tree_page[0], level);
  CHECK_EQ(g_tree_page[1], path);
  CHECK_EQ(g_tree_global, path * 16 + level);
  for (int l = 0; l <= level; ++l) CHECK_EQ(g_tree_page[2 + l], path >> (2 * (level - l)));
  for (int l = level + 1; l <= kTreeDepth; ++l) CHECK_EQ(g_tree_page[2 + l], 0);
  return count;
}

}  // namespace

// A fork tree of depth 4, fan-out 2 (31 processes, up to ~10 alive at once):
// each level writes its identity into one private page and a global before
// forking, and checks after its subtree finished that it still sees exactly
// its own values; children check they inherited their ancestors' values.
void test_fork_tree() {
  g_tree_page = static_cast<uint64_t*>(map_anon(kPage));
  CHECK(g_tree_page != nullptr);
  if (!g_tree_page) return;
  const unsigned n = tree_node(0, 0);
  unsigned expected = 0;
  for (int l = 0, width = 1; l <= kTreeDepth; ++l, width *= kTreeFanout) expected += width;
  CHECK_EQ(n, expected);
  detail("depth", kTreeDepth);
  detail("processes", n);
  CHECK_EQ(munmap(g_tree_page, kPage), 0);
}

// A child dirties memory, installs a handler and ignores SIGPIPE, then
// execve's cowchild with arguments, an environment and an inherited pipe;
// cowchild checks all of that (see cowchild.cpp), writes "pid=N ok" to the
// pipe and exits with the code it was given. execve of an unknown program
// returns -ENOENT and the caller carries on.
void test_fork_exec() {
  constexpr int kCode = 77;
  int p[2];
  CHECK_EQ(pipe(p), 0);
  int64_t pid = fork_helper();
  CHECK(pid >= 0);
  if (pid == 0) {
    CHECK_EQ(close(p[0]), 0);
    // Memory the new image must not inherit.
    auto* dirty = static_cast<uint64_t*>(map_anon(16 * kPage));
    CHECK(dirty != nullptr);
    if (dirty)
      for (unsigned i = 0; i < 16 * kWordsPerPage; ++i) dirty[i] = ~uint64_t{0};
    for (auto& w : g_bss_area) w = ~uint64_t{0};
    for (auto& w : g_data_area) w = ~uint64_t{0};
    // A caught signal is reset to SIG_DFL by execve; an ignored one stays ignored.
    CHECK_EQ(sigaction(SIGUSR1, [](int) {}), 0);
    CHECK_EQ(sigaction(SIGPIPE, SIG_IGN), 0);
    char addr_arg[24], fd_arg[16], code_arg[8];
    pvk::format(addr_arg, sizeof addr_arg, "0x%lx", reinterpret_cast<uint64_t>(dirty));
    pvk::format(fd_arg, sizeof fd_arg, "%d", p[1]);
    pvk::format(code_arg, sizeof code_arg, "%d", kCode);
    const char* argv[] = {"cowchild", "alpha", "beta gamma", addr_arg, fd_arg, code_arg, nullptr};
    const char* envp[] = {"PVK_TEST=cowchild", "SECOND=2", nullptr};
    const int64_t r = execve("cowchild", argv, envp);
    CHECK_EQ(r, 0);  // only reached if execve failed
    helper_exit();
  }
  CHECK_EQ(close(p[1]), 0);
  char msg[128];
  const int64_t n = pid > 0 ? read_full(p[0], msg, sizeof msg - 1) : 0;
  msg[n > 0 ? n : 0] = '\0';
  if (n > 0 && msg[n - 1] == '\n') msg[n - 1] = '\0';
  detail_str("cowchild_says", msg);
  char want[64];
  pvk::format(want, sizeof want, "pid=%ld ok", pid);
  CHECK(strcmp(msg, want) == 0);  // same pid after execve, and every cowchild check passed
  if (pid > 0) {
    const int st = wait_for(pid);
    CHECK_EQ(st, wait_exited(kCode));
  }
  CHECK_EQ(close(p[0]), 0);

  // An unknown program: -ENOENT, and the caller is still there.
  pid = fork_helper();
  if (pid == 0) {
    const char* argv[] = {"no-such-program", nullptr};
    const char* envp[] = {nullptr};
    CHECK_EQ(execve("no-such-program", argv, envp), -ENOENT);
    helper_exit();
  }
  CHECK_HELPER_OK(pid);
}

}  // namespace proctest
