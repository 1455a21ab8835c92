// mmap_churn: mmap/munmap churn on disjoint ranges by several workers at
// once, as processes (mode=procs) or as threads of one process
// (mode=threads).
//
// Each rep, the main thread and `threads` more workers each run `loops`
// cycles of (mmap `pages` fresh anonymous pages, write one word to each,
// check two of them, munmap), every worker on ranges of its own. per_op =
// the rep's time / every worker's cycles: under -icount the guest's clock is
// the sum of every vCPU's instructions, so per_op is the machine's total
// work per cycle, and work that does not grow with the CPUs (nothing shared
// between the workers) keeps it where one worker alone has it. As processes
// the workers share nothing in the kernel's address-space code; as threads
// they share one address space (its VMA tree, its page tables, the TLBs it
// is live in: each munmap must reach the other workers' CPUs).
//
// Workers are pinned like the other smp benchmarks' threads (smp_threads.h:
// the main thread to the first CPU of its mask, worker i to the (i + 1)-th),
// and each reports the CPU it ran on after every rep (getcpu);
// `workers_elsewhere` counts those that ran on another CPU than the main
// thread. They are told to start over pipes, the same for processes and
// threads (a read that blocks leaves an idle CPU halted, which under
// -icount adds nothing to the clock): two pipes whatever the workers, as
// pvk gives a process 16 descriptors. Round r's start is one byte per
// worker in pipe r % 2, and each worker reads the two pipes in turn, so
// none can take a second byte of one round: its next read is from the other
// pipe, which the main thread fills only once every worker has reported
// (has read its byte).
//
// The same static binary runs on Linux (fork, clone, pipes: the Linux ABI).
#include "bench/smp_threads.h"

namespace bench {

using namespace smp;

namespace {

// What a worker sends after each round: one write, smaller than a pipe's
// atomic size, so the reports of concurrent workers never interleave.
struct Report {
  int32_t cpu;  // getcpu at the end of the round
  uint32_t ok;  // every cycle's mmap, writes and munmap went right
};

struct Churn {
  uint64_t pages = 0;
  uint64_t loops = 0;
  unsigned n = 0;  // workers besides the main thread, started so far
  int go[2][2];  // main -> workers, round r in pipe r % 2: 'w' (warm-up), 'g' (a rep's round), 's' (stop)
  int done[2];   // every worker -> main: one Report per round
  unsigned round = 0;  // the main thread's next round
  Thread t[kMaxThreads];   // mode=threads
  int64_t pid[kMaxThreads];  // mode=procs
  unsigned index[kMaxThreads];
  Placement placement;
};
Churn g_ch;

// `loops` cycles of mmap + write + munmap on a range of the worker's own
// (the kernel places each mapping; no two workers' live ranges overlap).
bool churn_cycles(uint64_t pages, uint64_t loops, uint64_t tag) {
  bool ok = true;
  for (uint64_t l = 0; l < loops; ++l) {
    const int64_t a = mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    if (is_err(a)) return false;
    uint64_t* region = reinterpret_cast<uint64_t*>(a);
    for (uint64_t i = 0; i < pages; ++i) poke(region + i * kWordsPerPage, pattern(tag, l + i));
    ok &= peek(region) == pattern(tag, l) &&
          peek(region + (pages - 1) * kWordsPerPage) == pattern(tag, l + pages - 1);
    if (munmap(region, pages * kPage) != 0) return false;
  }
  return ok;
}

int64_t read_full(int fd, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    const int64_t r = read(fd, static_cast<char*>(buf) + got, n - got);
    if (r == -EINTR) continue;
    if (r <= 0) return r;
    got += static_cast<size_t>(r);
  }
  return static_cast<int64_t>(got);
}

// Worker `me` (0-based, besides the main thread): one round per command
// until told to stop.
void churn_worker(unsigned me) {
  place_thread(g_ch.placement, me);
  for (unsigned round = 0;; ++round) {
    char cmd = 0;
    if (read_full(g_ch.go[round & 1][0], &cmd, 1) != 1 || cmd == 's') return;
    const Report rep{cpu_now(), churn_cycles(g_ch.pages, cmd == 'w' ? 1 : g_ch.loops, me + 1) ? 1u : 0u};
    write(g_ch.done[1], &rep, sizeof rep);
  }
}

void churn_thread(void* arg) { churn_worker(*static_cast<unsigned*>(arg)); }

// One round of every worker, the main thread's share included. False (r
// failed) when a worker's round went wrong or its report never came.
bool churn_round(Run& r, char cmd, uint64_t loops, uint64_t* elsewhere) {
  for (unsigned i = 0; i < g_ch.n; ++i) write(g_ch.go[g_ch.round & 1][1], &cmd, 1);
  ++g_ch.round;
  bool ok = churn_cycles(g_ch.pages, loops, 0);
  const int32_t here = cpu_now();
  *elsewhere = 0;
  for (unsigned i = 0; i < g_ch.n; ++i) {
    Report rep{};
    if (read_full(g_ch.done[0], &rep, sizeof rep) != sizeof rep) return r.fail("worker report %u lost", i);
    ok &= rep.ok != 0;
    *elsewhere += rep.cpu >= 0 && rep.cpu != here;
  }
  return ok || r.fail("a cycle's mmap, write check or munmap failed");
}

// Starts the workers: threads, or processes forked from this one. A child
// process runs its rounds, then exits; it never returns here.
bool churn_start(Run& r, bool procs, unsigned k) {
  for (unsigned i = 0; i < k; ++i) {
    g_ch.index[i] = i;
    if (procs) {
      const int64_t pid = fork_or_fail(r);
      if (pid < 0) return false;
      if (pid == 0) {
        churn_worker(i);
        exit_group(0);
      }
      g_ch.pid[i] = pid;
    } else if (const int64_t tid = thread_create(&g_ch.t[i], churn_thread, &g_ch.index[i]); tid < 0) {
      return r.fail("thread_create %u returned %ld", i, tid);
    }
    ++g_ch.n;
  }
  return true;
}

// Stops and reaps the workers; closes the pipes.
void churn_stop(Run& r, bool procs, unsigned pipes) {
  const char stop = 's';
  for (unsigned i = 0; i < g_ch.n; ++i) write(g_ch.go[g_ch.round & 1][1], &stop, 1);
  for (unsigned i = 0; i < g_ch.n; ++i) {
    if (procs) {
      if (const int st = wait_child(r, g_ch.pid[i]); st > 0) r.fail("worker process %u exited with 0x%x", i, st);
    } else if (int64_t e = thread_join(&g_ch.t[i]); e != 0) {
      r.fail("thread_join %u returned %ld", i, e);
    }
  }
  for (unsigned i = 0; i < pipes; ++i) {
    close(g_ch.go[i][0]);
    close(g_ch.go[i][1]);
  }
  close(g_ch.done[0]);
  close(g_ch.done[1]);
  g_ch.n = 0;
}

}  // namespace

void run_mmap_churn(Run& r) {
  const bool procs = r.p("mode") == word_value("procs");
  const uint64_t pages = r.p("pages"), threads = r.p("threads");
  if (!pages_or_fail(r, pages)) return;
  if (threads > kMaxThreads) {
    r.fail("threads must be 0..%lu", kMaxThreads);
    return;
  }
  const uint64_t loops = loops_param(r, pages, 4096, 100);
  r.ops = (1 + threads) * loops;
  g_ch.pages = pages;
  g_ch.loops = loops;
  g_ch.n = 0;
  g_ch.round = 0;
  if (int64_t e = pipe(g_ch.done); e != 0) {
    r.fail("pipe returned %ld", e);
    return;
  }
  unsigned pipes = 0;
  for (; pipes < 2; ++pipes)
    if (int64_t e = pipe(g_ch.go[pipes]); e != 0) {
      r.fail("pipe returned %ld", e);
      break;
    }
  g_ch.placement = threads ? place_main() : Placement{};
  // A page that stays mapped (and written) beside the churned ranges, in
  // every worker's address space (the forked ones inherit it): without it a
  // lone worker's munmap empties the page tables above its range, which pvk
  // frees and the next cycle's fault allocates again (2 table pages a cycle,
  // measured), while several threads of one process keep each other's
  // tables alive, so the figure at one worker would carry a cost the others
  // do not. The crews do the same (smp_threads.cpp, crew_start).
  uint64_t* anchor = map_pages_or_fail(r, 1);
  if (anchor) poke(anchor, 1);
  uint64_t elsewhere = 0;
  // A warm-up round (one cycle each, untimed): every worker has begun on
  // its CPU, and a forked worker has taken its copy-on-write faults on the
  // stack and data it uses, before the first rep.
  if (!r.failed() && churn_start(r, procs, static_cast<unsigned>(threads)) && churn_round(r, 'w', 1, &elsewhere)) {
    for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
      r.start();
      const bool ok = churn_round(r, 'g', loops, &elsewhere);
      r.stop();
      if (!ok) break;
    }
  }
  churn_stop(r, procs, pipes);
  if (anchor) munmap(anchor, kPage);
  unplace_main(g_ch.placement);
  r.extra("workers", 1 + threads);
  r.extra("workers_elsewhere", elsewhere);
}

}  // namespace bench
