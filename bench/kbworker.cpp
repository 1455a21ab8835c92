// kbworker: one kernbench job (bench/seed002.cpp execs it).
//
//   kbworker PAGES
//
// Maps PAGES private anonymous pages, writes every page, mprotects the region
// read-only and back to read-write, forks a child that checks a few pages and
// exits, waits for it, unmaps the region and exits. Exit status 0 if every
// step worked and the data held; 1..6 name the failing step.
#include "bench/libc/user.h"

using namespace pvk::user;

namespace {

inline uint64_t word(uint64_t i) { return (i + 1) * 0x9E3779B97F4A7C15ull; }

}  // namespace

int main(int argc, char** argv) {
  uint64_t pages = 0;
  if (argc != 2 || !parse_u64(argv[1], &pages) || pages == 0) return 1;
  const uint64_t len = pages * kPage;
  auto* region = static_cast<volatile uint64_t*>(map_anon(len));
  if (!region) return 2;
  for (uint64_t i = 0; i < pages; ++i) region[i * (kPage / 8)] = word(i);
  if (mprotect(const_cast<uint64_t*>(region), len, PROT_READ) != 0) return 3;
  if (mprotect(const_cast<uint64_t*>(region), len, PROT_READ | PROT_WRITE) != 0) return 3;
  const int64_t pid = fork();
  if (pid < 0) return 4;
  if (pid == 0) {
    const uint64_t step = pages > 8 ? pages / 8 : 1;
    for (uint64_t i = 0; i < pages; i += step)
      if (region[i * (kPage / 8)] != word(i)) exit_group(1);
    region[0] = 0;  // one COW copy in the child
    exit_group(0);
  }
  int st = 0;
  if (wait4(pid, &st, 0) != pid || st != 0) return 5;
  if (region[0] != word(0)) return 6;
  if (munmap(const_cast<uint64_t*>(region), len) != 0) return 6;
  return 0;
}
