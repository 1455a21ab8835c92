// Seed 002: mprotect (N present pages RW -> RO -> RW in a loop) and
// kernbench (concurrent compile-like jobs: fork, exec, pipe reads, faults,
// mprotect, exit) at half, optimal and maximal load.
#include "bench/bench.h"
#include "bench/kbjob.h"
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

  time_mprotect_cycles(r, region, len, loops);
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
// kernbench: `jobs` jobs per rep (the same work at every load), run by `procs`
// concurrent workers (the load), each running its share one after another; a
// job forks, the child execs `kbworker pages bytes` (bench/kbworker.cpp, a
// little like one compiler run) with a pipe as its stdin, the worker writes
// the job's source (source_kb KiB) into the pipe and waits for it. One rep =
// the whole mix, from the first fork to the last worker reaped.
//
// Seed 002 ran kernbench at its three loads: half (make -j ncpus/2), optimal
// (-j 4 x ncpus) and maximal (-j unbounded), and saw pte_flags cost up to 13 %
// only at maximal load. On this 1-vCPU guest (the defaults, jobs=8): half =
// procs=1 (one job at a time: half a CPU cannot be asked for), optimal =
// procs=4, maximal = procs=8 = jobs (an unbounded make starts every job it
// has at once). procs is at most 20: each worker has its job and the job's
// child alive at once, and pvk has 64 process slots. kernbench runs 3 reps
// unless reps= says otherwise: it is the heaviest benchmark of the default
// matrix, booted with four switches on every backend.

namespace {

// One worker process: `jobs` x (pipe, fork, exec kbworker, write the source,
// wait). Exit status 0 if every job's kbworker exited 0; otherwise 10 + the
// failing step.
[[noreturn]] void worker(uint64_t jobs, uint64_t pages, uint64_t bytes) {
  char pages_arg[24], bytes_arg[24];
  pvk::format(pages_arg, sizeof pages_arg, "%lu", pages);
  pvk::format(bytes_arg, sizeof bytes_arg, "%lu", bytes);
  const char* argv[] = {"kbworker", pages_arg, bytes_arg, nullptr};
  static char source[4096];
  for (uint64_t j = 0; j < jobs; ++j) {
    int fds[2];
    if (pipe(fds) != 0) exit_group(11);
    const int64_t pid = fork();
    if (pid < 0) exit_group(11);
    if (pid == 0) {
      if (dup2(fds[0], 0) != 0) exit_group(12);
      close(fds[0]);
      close(fds[1]);
      execve(kbworker_path(), argv, pvk_environ);
      exit_group(12);  // exec failed
    }
    close(fds[0]);
    for (uint64_t done = 0; done < bytes;) {
      const uint64_t n = bytes - done < sizeof source ? bytes - done : sizeof source;
      for (uint64_t k = 0; k < n; ++k) source[k] = source_byte(done + k);
      if (write_all(fds[1], source, n) != static_cast<int64_t>(n)) exit_group(15);
      done += n;
    }
    close(fds[1]);
    int st = 0;
    if (wait4(pid, &st, 0) != pid) exit_group(13);
    if (st != 0) exit_group(st == wait_exited(12) ? 12 : 14);
  }
  exit_group(0);
}

}  // namespace

void run_kernbench(Run& r) {
  const uint64_t procs = r.p("procs"), jobs = r.p("jobs"), pages = r.p("pages"), bytes = r.p("source_kb") * 1024;
  r.ops = jobs;
  if (procs < 1 || procs > 20) {
    r.fail("procs must be 1..20 (each worker has a kbworker and its child)");
    return;
  }
  if (jobs < procs) {
    r.fail("jobs must be at least procs (every worker runs one or more)");
    return;
  }
  if (pages < 1) {
    r.fail("pages must be at least 1");
    return;
  }
  if (!r.reps_explicit) r.reps = 3;
  kbworker_path();
  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    unsigned started = 0;
    r.start();
    for (; started < procs; ++started) {
      const int64_t pid = fork();
      // The jobs shared out: the first jobs % procs workers run one more.
      if (pid == 0) worker(jobs / procs + (started < jobs % procs ? 1 : 0), pages, bytes);
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
             code == 12   ? "exec of kbworker failed"
             : code == 14 ? "kbworker failed"
             : code == 15 ? "writing the source failed"
                          : "pipe/fork/wait failed");
    }
  }
}

}  // namespace bench
