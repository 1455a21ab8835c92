// kbworker: the program kernbench (bench/seed002.cpp) and forkexec
// (bench/seed001.cpp) exec.
//
//   kbworker                 exit 0 at once (forkexec's program)
//   kbworker PAGES BYTES     one kernbench job, a little like one compiler run:
//
// reads its "source file" from stdin (a pipe the kernbench worker fills:
// BYTES bytes of source_byte(), bench/kbjob.h) in 4 KiB reads until EOF and
// checks every byte; uses its "compiler tables" (kTables: 64 KiB of
// initialized .rodata, so the image exec loads is ~18 pages instead of 2 —
// pvk copies the whole image at exec, Linux maps it from the page cache and
// faults in what is touched) once per source chunk; maps a symbol table of
// PAGES/4 + 1 pages that it reads all through (lookups that miss: zeros) and
// fills every 8th page of (where the zero page matters, seed 001: a read
// maps it, the later write copies it); maps PAGES private anonymous pages
// (its heap), writes every page, mprotects the heap read-only and back,
// forks a child that checks a few pages, writes one (a COW copy) and exits,
// waits for it, unmaps the heap and exits. Exit status 0 if every step
// worked and the data held; 1..8 name the failing step.
#include "bench/kbjob.h"
#include "bench/libc/user.h"

using namespace pvk::user;

namespace {

constexpr uint64_t word(uint64_t i) { return (i + 1) * 0x9E3779B97F4A7C15ull; }

constexpr uint64_t kTableWords = 64 * 1024 / 8;
struct Tables {
  uint64_t w[kTableWords];
};
// Non-zero, so they are file bytes of the image (not .bss).
constexpr Tables make_tables() {
  Tables t{};
  for (uint64_t i = 0; i < kTableWords; ++i) t.w[i] = word(i) | 1;
  return t;
}
constexpr Tables kTables = make_tables();

// One pass over the tables, a word per 512 bytes (every page of them is
// touched), mixed into h.
uint64_t consult_tables(uint64_t h) {
  const volatile uint64_t* t = kTables.w;
  for (uint64_t i = h % 64; i < kTableWords; i += 64) h = (h ^ t[i]) * 0x100000001B3ull;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) return 0;
  uint64_t pages = 0, bytes = 0;
  if (argc != 3 || !parse_u64(argv[1], &pages) || pages == 0 || !parse_u64(argv[2], &bytes)) return 1;

  // Read and "lex" the source.
  static char chunk[4096];
  uint64_t got = 0, h = 0;
  for (;;) {
    const int64_t n = read(0, chunk, sizeof chunk);
    if (n < 0) return 7;
    if (n == 0) break;
    for (int64_t k = 0; k < n; ++k)
      if (chunk[k] != bench::source_byte(got + k)) return 7;
    got += n;
    h = consult_tables(h + got);
  }
  if (got != bytes || (bytes && h == 0)) return 7;

  // The symbol table: looked up everywhere, filled sparsely.
  const uint64_t table_pages = pages / 4 + 1, table_len = table_pages * kPage;
  auto* table = static_cast<volatile uint64_t*>(map_anon(table_len));
  if (!table) return 8;
  uint64_t misses = 0;
  for (uint64_t i = 0; i < table_pages; ++i) misses += table[i * (kPage / 8) + (h + i) % (kPage / 8)] == 0;
  for (uint64_t i = 0; i < table_pages; i += 8) table[i * (kPage / 8)] = word(i);
  if (misses != table_pages || table[0] != word(0)) return 8;
  if (munmap(const_cast<uint64_t*>(table), table_len) != 0) return 8;

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
