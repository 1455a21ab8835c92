// Seed 002: mprotect (N present pages RW -> RO -> RW in a loop) and
// kernbench (a maximal-load mix of concurrent fork/exec/fault/mprotect/exit).
#include "bench/bench.h"
#include "base/lib/format.h"

namespace bench {

// ---------------------------------------------------------------------------
// cpa: set_memory_wc then set_memory_wb over N kernel pages (seed 002's
// CPA path), timed by the kernel around the two calls alone (SYS_pvk_cpa
// also maps and unmaps the pages, which the rep's bracket includes: its
// counter deltas count that too). per_op is set_memory_wc's time, the
// second quantity set_memory_wb's.

void run_cpa(Run& r) {
  const uint64_t pages = r.p("pages");
  PvkCounters c{};
  const uint64_t khz = read_counters(&c) == 0 ? c.tsc_khz : 0;
  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    uint64_t ns[2] = {};
    r.start();
    const int64_t e = pvk_cpa(pages, ns);
    r.stop();
    r.start2();
    r.stop2();
    if (e != 0) {
      r.fail("pvk_cpa(%lu) returned %ld", pages, e);
      break;
    }
    // The kernel's own figures replace the bracket's.
    r.ns.v[r.ns.n - 1] = ns[0];
    r.cycles.v[r.cycles.n - 1] = ns[0] * khz / 1000000;
    r.ns2.v[r.ns2.n - 1] = ns[1];
    r.cycles2.v[r.cycles2.n - 1] = ns[1] * khz / 1000000;
  }
  if (r.ns.n) {
    r.extra("wc_ns_per_page", r.ns.median() / pages);
    r.extra("wb_ns_per_page", r.ns2.median() / pages);
  }
}

// mprotect

void run_mprotect(Run& r) {
  const uint64_t pages = r.p("pages");
  uint64_t loops = r.p("loops");
  if (pages == 0) {
    r.fail("pages must be at least 1");
    return;
  }
  if (loops == 0) {
    loops = 65536 / pages;
    if (loops < 1) loops = 1;
    if (loops > 1000) loops = 1000;
    if (!r.reps_explicit && pages > 16384) r.reps = 3;
  }
  r.ops = loops;
  r.set_p("loops", loops);  // the record shows the count used
  uint64_t* region = map_pages_or_fail(r, pages);
  if (!region) return;
  const uint64_t len = pages * kPage;
  for (uint64_t i = 0; i < pages; ++i) poke(region + i * (kPage / 8), pattern(3, i));

  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    int64_t e1 = 0, e2 = 0;
    r.start();
    for (uint64_t l = 0; l < loops; ++l) {
      e1 |= mprotect(region, len, PROT_READ);
      e2 |= mprotect(region, len, PROT_READ | PROT_WRITE);
    }
    r.stop();
    if (e1 || e2) r.fail("mprotect failed (%ld, %ld)", e1, e2);
  }
  // The data survived and the region is writable again.
  for (uint64_t i = 0; i < pages && !r.failed(); i += (pages > 64 ? pages / 64 : 1)) {
    uint64_t* w = region + i * (kPage / 8);
    if (peek(w) != pattern(3, i)) r.fail("page %lu lost its data", i);
    poke(w, 0);
  }
  if (r.ns.n) r.extra("per_page", r.ns.median() / r.ops / pages);
  if (int64_t e = munmap(region, len); e != 0) r.fail("munmap returned %ld", e);
}

// ---------------------------------------------------------------------------
// kernbench: procs workers run at once; each runs jobs jobs one after the
// other; a job forks, the child execs kbworker (bench/kbworker.cpp), the
// worker waits for it. One rep = the whole mix, from the first fork to the
// last worker reaped.

namespace {

// kbworker's path: on pvk the embedded program's name; on Linux the file
// next to the driver (dirname(argv[0])/kbworker).
char g_worker_path[256];

const char* worker_path() {
  if (g_worker_path[0]) return g_worker_path;
  const char* slash = nullptr;
  for (const char* s = g_argv0; *s; ++s)
    if (*s == '/') slash = s;
  if (!slash) {
    pvk::format(g_worker_path, sizeof g_worker_path, "kbworker");
  } else {
    const int dir = static_cast<int>(slash - g_argv0);
    pvk::format(g_worker_path, sizeof g_worker_path, "%.*s/kbworker", dir, g_argv0);
  }
  return g_worker_path;
}

// One worker process: jobs x (fork, exec kbworker, wait). Exit status 0 if
// every job's kbworker exited 0; otherwise 10 + the failing step.
[[noreturn]] void worker(uint64_t jobs, uint64_t pages) {
  char pages_arg[24];
  pvk::format(pages_arg, sizeof pages_arg, "%lu", pages);
  const char* argv[] = {"kbworker", pages_arg, nullptr};
  for (uint64_t j = 0; j < jobs; ++j) {
    const int64_t pid = fork();
    if (pid < 0) exit_group(11);
    if (pid == 0) {
      execve(g_worker_path, argv, pvk_environ);
      exit_group(12);  // exec failed
    }
    int st = 0;
    if (wait4(pid, &st, 0) != pid) exit_group(13);
    if (st != 0) exit_group(st == wait_exited(12) ? 12 : 14);
  }
  exit_group(0);
}

}  // namespace

void run_kernbench(Run& r) {
  const uint64_t procs = r.p("procs"), jobs = r.p("jobs"), pages = r.p("pages");
  r.ops = procs * jobs;
  if (procs < 1 || procs > 20) {
    r.fail("procs must be 1..20 (each worker has a kbworker and its child)");
    return;
  }
  if (jobs < 1) {
    r.fail("jobs must be at least 1");
    return;
  }
  worker_path();
  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    unsigned started = 0;
    r.start();
    for (; started < procs; ++started) {
      const int64_t pid = fork();
      if (pid == 0) worker(jobs, pages);
      if (pid < 0) {
        r.fail("fork of worker %u returned %ld", started, pid);
        break;
      }
    }
    unsigned bad = 0;
    int bad_status = 0;
    for (unsigned k = 0; k < started; ++k) {
      int st = 0;
      int64_t got;
      do {
        got = wait4(-1, &st, 0);
      } while (got == -EINTR);
      if (got <= 0) {
        r.fail("wait4 returned %ld", got);
        break;
      }
      if (st != 0 && bad++ == 0) bad_status = st;
    }
    r.stop();
    if (bad) {
      const int code = WIFEXITED(bad_status) ? WEXITSTATUS(bad_status) : -1;
      r.fail("%u worker(s) failed, first status 0x%x (%s)", bad, bad_status,
             code == 12 ? "exec of kbworker failed" : code == 14 ? "kbworker failed" : "fork/wait failed");
    }
  }
}

}  // namespace bench
