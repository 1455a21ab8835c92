// exhaust: running the machine out of processes and memory from user mode.
// The kernel must answer with errors or an OOM kill, keep
// running, and get every frame back once the processes are gone.
//
//   exhaust [rounds=N] [chunk_mib=M]
//
// Each round:
//  - fork bomb: fork until fork fails (EAGAIN: the process table is full,
//    or ENOMEM); every child blocks on a pipe, then all are released and
//    reaped;
//  - mmap-and-touch: a child maps chunk_mib MiB at a time and writes every
//    page until mmap says ENOMEM or the kernel kills it for lack of frames
//    (SIGKILL, with the kernel's "oom_kill" record); the parent reaps it;
//  - the free-frame count must be back at its baseline.
// Ends with {"event":"exhaust",...} and exits 0 iff every round did.
#include "bench/libc/user.h"
#include "base/console/record.h"

using namespace pvk::user;

namespace {

// The text after `key` if arg starts with it, else null.
const char* value_of(const char* arg, const char* key) {
  for (; *key; ++key, ++arg)
    if (*arg != *key) return nullptr;
  return arg;
}

uint64_t free_frames() {
  PvkCounters c{};
  return read_counters(&c) == 0 ? c.free_frames : 0;
}

struct BombResult {
  int forked = 0;
  int64_t error = 0;  // what the failing fork returned
};

BombResult fork_bomb() {
  BombResult out;
  int p[2];
  if (pipe(p) != 0) return out;
  for (;;) {
    const int64_t pid = fork();
    if (pid < 0) {
      out.error = pid;
      break;
    }
    if (pid == 0) {
      close(p[1]);
      char c;
      read(p[0], &c, 1);  // until the parent closes the write end: EOF
      exit_group(0);
    }
    ++out.forked;
  }
  close(p[0]);
  close(p[1]);
  int st;
  for (int left = out.forked; left > 0 && wait4(-1, &st, 0) > 0;) --left;
  return out;
}

enum class HogEnd { Enomem, OomKilled, Other };

HogEnd memory_hog(uint64_t chunk) {
  const int64_t pid = fork();
  if (pid < 0) return HogEnd::Other;
  if (pid == 0) {
    for (;;) {
      auto* m = static_cast<volatile uint8_t*>(map_anon(chunk));
      if (!m) exit_group(12);  // ENOMEM from mmap: a clean refusal
      for (uint64_t off = 0; off < chunk; off += kPage) m[off] = 1;
    }
  }
  int st = 0;
  if (wait4(pid, &st, 0) != pid) return HogEnd::Other;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 12) return HogEnd::Enomem;
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) return HogEnd::OomKilled;
  return HogEnd::Other;
}

}  // namespace

int main(int argc, char** argv, char**) {
  uint64_t rounds = 2, chunk_mib = 16;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (const char* v = value_of(a, "rounds="); v && parse_u64(v, &rounds)) continue;
    if (const char* v = value_of(a, "chunk_mib="); v && parse_u64(v, &chunk_mib) && chunk_mib) continue;
    printf("exhaust: bad argument '%s' (rounds=N chunk_mib=M)\n", a);
    return 2;
  }
  warm_root_cache(20);  // cached roots are kept frames: fill the cache first
  const uint64_t start = free_frames();
  bool ok = start != 0;
  int forks_max = 0, oom_kills = 0, mmap_enomem = 0, other = 0;
  int64_t fork_error = 0;
  for (uint64_t r = 0; r < rounds; ++r) {
    const BombResult bomb = fork_bomb();
    forks_max = bomb.forked > forks_max ? bomb.forked : forks_max;
    fork_error = bomb.error;
    ok &= bomb.forked > 0 && (bomb.error == -EAGAIN || bomb.error == -ENOMEM);
    switch (memory_hog(chunk_mib << 20)) {
      case HogEnd::Enomem: ++mmap_enomem; break;
      case HogEnd::OomKilled: ++oom_kills; break;
      case HogEnd::Other: ++other, ok = false; break;
    }
    const uint64_t now = free_frames();
    printf("exhaust: round %lu: %d forks (then %ld), frames %lu (baseline %lu)\n", r, bomb.forked, bomb.error, now,
           start);
    ok &= now == start;
  }
  const uint64_t end = free_frames();
  pvk::Record("exhaust")
      .u64("rounds", rounds)
      .i64("forks_max", forks_max)
      .i64("fork_error", fork_error)
      .i64("oom_kills", oom_kills)
      .i64("mmap_enomem", mmap_enomem)
      .i64("other_endings", other)
      .u64("free_frames_start", start)
      .u64("free_frames_end", end)
      .boolean("pass", ok && end == start);
  return ok && end == start ? 0 : 1;
}
