// The fuzzer's lifetime mode: seeded races between the threads of a
// process on one descriptor table, in several processes at once, and a
// check of every byte read for a leak across pipes or processes.
//
//   sysfuzz ... lifetimes=OPS [procs=N] [threads=N]
//   bench=sysfuzz:seed=S:iters=0:lifetimes=OPS:procs=N:threads=N
//
// After the ordinary fuzzing (none with iters=0) and its regression seeds,
// `procs` processes (default 3, at most 6) run at once; each starts
// `threads` threads (default 4, at most 6), and each thread makes OPS
// random operations (at most 4000) on the process's descriptors 3..15:
// pipe, close, dup2 onto open and free numbers, read and write (blocking,
// with and without data, longer than the pipe), timed FUTEX_WAIT (0-2 ms)
// and FUTEX_WAKE on shared words, nanosleep/clock_nanosleep (0-1 ms), a new
// thread (up to twice `threads` in all, each with OPS operations) and
// thread exit. Operations come from the seed (xorshift per thread, from the
// seed, the process and the thread); their interleaving does not, so a run
// replays its choices, not its races — except in virtual time (`pvk run
// --icount shift=0,sleep=off`), where the same seed gives the same counts
// again. Every byte written is a tag naming
// its process and pipe; see sysfuzz_lifetimes_child.cpp for the tags and
// the checks. Slots of the kernel's pipe and file tables freed by one
// process are reused by the others: a call that kept a freed pipe reads
// another process's tags (foreign_bytes).
//
// A thread blocked in read or write is released by the others (a write,
// a close, a dup2 over its descriptor), or, when every live thread of its
// process is blocked and nothing moves, by the process's main thread: it
// tgkills them with SIGUSR2 (EINTR), or the next time closes every
// descriptor (EOF / EPIPE: a reader blocks on an empty pipe and a writer
// on a full one, so no blocked call holds the other end of another's
// pipe). The parent's watchdog sends SIGUSR2 to a child that made no
// progress for 100 ms (its main thread then releases the blocked ones),
// and SIGKILL after 30 s without progress, which is a failure (a hang:
// every block here has a release). A child passes if it exits 0 having
// joined every thread it started, with no misbehaviour seen. Records: one
// per child,
//   {"event":"sysfuzz_lifetimes_child","seed":..,"child":..,"child_seed":..,
//    "how":"finished"|"kernel_bug"|"exited"|"signal"|"stalled","expected":..,
//    "status":..,"ops":..,"threads_started":..,"threads_joined":..,
//    "tagged_bytes":..,"foreign_bytes":..,"stray_bytes":..,"torn_reads":..,
//    "releases":..,"kicks":..[,"bug":"..."]}
// then the summary: every counter of sysfuzz_lifetimes.h summed,
//   {"event":"sysfuzz_lifetimes","seed":..,"procs":..,"threads":..,
//    "ops_per_thread":..,"ops":..,"pipe":..,...,"foreign_bytes":0,
//    "stray_bytes":0,"torn_reads":0,"children":..,"unexpected":..,
//    "free_frames_start":..,"free_frames_end":..,"ns":..,"pass":..}
// pass: no child unexpected, no foreign, stray or torn byte, some tagged
// bytes checked, and the free frames back at their baseline.
#include "sysfuzz_lifetimes.h"

#include <initializer_list>

#include "base/console/record.h"
#include "bench/libc/user.h"
#include "sysfuzz_common.h"

namespace sysfuzz {
namespace {

using namespace pvk::user;

const char* const kCounterNames[] = {
#define SYSFUZZ_LT_NAME(name) #name,
    SYSFUZZ_LIFETIME_COUNTERS(SYSFUZZ_LT_NAME)
#undef SYSFUZZ_LT_NAME
};
static_assert(sizeof kCounterNames / sizeof kCounterNames[0] == kCounters);

constexpr uint64_t kKickAfterNs = 100'000'000, kKillAfterNs = 30'000'000'000;

struct Child {
  int64_t pid = 0;
  uint64_t seed = 0;
  uint64_t last_ops = 0, last_progress_ns = 0;
  bool kicked = false, killed = false, reaped = false;
};

// Judges a reaped child and prints its record; true if it ended well.
bool judge(const LifetimeConfig& cfg, unsigned i, const Child& c, const LifetimeSlot& s, int status) {
  const char* how;
  if (c.killed)
    how = "stalled";
  else if (WIFSIGNALED(status))
    how = "signal";
  else if (s.bug)
    how = "kernel_bug";
  else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && s.finished)
    how = "finished";
  else
    how = "exited";
  const bool ok = !c.killed && WIFEXITED(status) && WEXITSTATUS(status) == 0 && s.finished && !s.bug;
  pvk::Record r("sysfuzz_lifetimes_child");
  r.u64("seed", cfg.seed).u64("child", i).u64("child_seed", c.seed).str("how", how).boolean("expected", ok);
  r.i64("status", status);
  for (Counter k : {c_ops, c_threads_started, c_threads_joined, c_tagged_bytes, c_foreign_bytes, c_stray_bytes,
                    c_torn_reads, c_releases, c_kicks})
    r.u64(kCounterNames[k], s.counts[k]);
  if (s.bug) r.str("bug", s.bug_msg);
  if (!ok)
    printf("sysfuzz: lifetimes: UNEXPECTED: seed %lu child %u (%s, status 0x%x%s%s): rerun with seed=%lu\n", cfg.seed,
           i, how, status, s.bug ? ": " : "", s.bug ? s.bug_msg : "", cfg.seed);
  return ok;
}

}  // namespace

bool run_lifetimes(const LifetimeConfig& cfg, void* slot_memory) {
  auto* slots = static_cast<LifetimeSlot*>(slot_memory);
  memset(slots, 0, kLifetimeSlotBytes);
  printf("sysfuzz: lifetimes: seed %lu: %lu processes x %lu threads x %lu operations\n", cfg.seed, cfg.procs,
         cfg.threads, cfg.ops);
  const uint64_t start = free_frames();
  const uint64_t t0 = now_ns();
  Child kids[kMaxLifetimeProcs];
  unsigned alive = 0, unexpected = 0;
  for (unsigned i = 0; i < cfg.procs; ++i) {
    Child& c = kids[i];
    c.seed = mix(cfg.seed * 0x100000001b3ull + 0x4c69666500000000ull + i);  // apart from sysfuzz's children
    c.pid = fork();
    if (c.pid == 0) lifetime_child(&slots[i], i, c.seed, cfg);
    if (c.pid < 0) {
      printf("sysfuzz: lifetimes: fork failed: %ld\n", c.pid);
      c.reaped = true;
      ++unexpected;
      continue;
    }
    c.last_progress_ns = now_ns();
    ++alive;
  }
  while (alive) {
    for (unsigned i = 0; i < cfg.procs; ++i) {
      Child& c = kids[i];
      if (c.reaped) continue;
      int st = 0;
      if (wait4(c.pid, &st, WNOHANG) == c.pid) {
        c.reaped = true;
        --alive;
        if (!judge(cfg, i, c, slots[i], st)) ++unexpected;
        continue;
      }
      const uint64_t now = now_ns(), ops = slots[i].counts[c_ops];
      if (ops != c.last_ops) {
        c.last_ops = ops;
        c.last_progress_ns = now;
        c.kicked = false;
      } else if (!c.kicked && now - c.last_progress_ns > kKickAfterNs) {
        kill(c.pid, kSigUsr2);  // its main thread releases the blocked ones
        c.kicked = true;
      } else if (!c.killed && now - c.last_progress_ns > kKillAfterNs) {
        kill(c.pid, SIGKILL);
        c.killed = true;
      }
    }
    const Timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
  const uint64_t ns = now_ns() - t0;
  const uint64_t end = settled_free_frames(start);
  uint64_t sum[kCounters] = {};
  for (unsigned i = 0; i < cfg.procs; ++i)
    for (unsigned k = 0; k < kCounters; ++k) sum[k] += slots[i].counts[k];
  const bool clean = !sum[c_foreign_bytes] && !sum[c_stray_bytes] && !sum[c_torn_reads] && sum[c_tagged_bytes];
  const bool pass = !unexpected && clean && end == start;
  pvk::Record r("sysfuzz_lifetimes");
  r.u64("seed", cfg.seed).u64("procs", cfg.procs).u64("threads", cfg.threads).u64("ops_per_thread", cfg.ops);
  for (unsigned k = 0; k < kCounters; ++k) r.u64(kCounterNames[k], sum[k]);
  r.u64("children", cfg.procs).u64("unexpected", unexpected);
  r.u64("free_frames_start", start).u64("free_frames_end", end).u64("ns", ns).boolean("pass", pass);
  printf("sysfuzz: lifetimes: %lu ops, %lu tagged bytes checked, %lu foreign, %lu stray; frames %lu -> %lu: %s\n",
         sum[c_ops], sum[c_tagged_bytes], sum[c_foreign_bytes], sum[c_stray_bytes], start, end, pass ? "pass" : "FAIL");
  return pass;
}

}  // namespace sysfuzz
