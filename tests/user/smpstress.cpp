// smpstress: a seeded random mix of pvk's system calls on every CPU at
// once, each result checked against what it must be (init=smpstress).
//
//   smpstress [seed=S] [ops=N] [workers=N] [files=0|1]
//   init=smpstress init_args=seed=S,ops=N
//
// One worker process per CPU of the affinity mask (at most 8, or
// `workers`), each with two threads: one pinned to the worker's CPU, one
// free to move. Each thread makes N operations (a count, never a time
// bound) drawn from its own generator, seeded from S, the worker and the
// thread: anonymous mmap, partial munmap, mprotect (a store into the
// read-only part must fault), touching and rewriting memory, brk, fork
// (the child checks its copy) and fork-then-SIGKILL, a thread started and
// joined, pipes, futex wake and timed waits, a signal to itself, sched_yield,
// nanosleep, the id calls, clock_gettime, and files in /tmp when a root file
// system is mounted (smpstress_ops.cpp has the checks). The choices replay
// from the seed; in virtual time (pvk run --icount) so do the counts.
//
// Ends with one record, printed by the starting process after every
// worker is reaped:
//   {"event":"smpstress","seed":S,"ops_per_thread":N,"workers":W,
//    "threads":T,"ops":..,"mmap":..,...,"mmap_bad":..,...,"failed_checks":..,
//    "segv_expected":..,"workers_ok":..,"files":bool,
//    "free_frames_start":..,"free_frames_end":..,"pass":bool}
// and a line naming the seed, the worker and the operation of the first
// failed check (rerun with that seed). pass: every worker exited 0 with
// both threads finished, no failed check, the free frames back at their
// baseline. Exits 0 iff pass.
#include "base/console/record.h"
#include "base/lib/format.h"
#include "bench/libc/files.h"
#include "cpu_pinning.h"
#include "smpstress.h"

namespace smpstress {
namespace {

bool arg(const char* a, const char* key, uint64_t* out) {
  const size_t n = strlen(key);
  return strncmp(a, key, n) == 0 && a[n] == '=' && parse_u64(a + n + 1, out);
}

uint64_t free_frames() {
  PvkCounters c;
  return read_counters(&c) == 0 ? c.free_frames : 0;
}

using usertest::nth_cpu;

// Can this boot write files in /tmp (a root file system)? Asked once,
// before the workers start.
bool tmp_writable() {
  const int64_t fd = open("/tmp/smpstress.probe", O_CREAT | O_RDWR, 0600);
  if (fd < 0) return false;
  close(static_cast<int>(fd));
  return unlink("/tmp/smpstress.probe") == 0;
}

[[noreturn]] void worker(unsigned w, const Config& cfg, SharedPage* shared, uint64_t mask) {
  install_handlers();
  Ctx ctx[kThreadsPerWorker] = {};
  Thread th[kThreadsPerWorker];
  bool ok = true;
  for (unsigned i = 0; i < kThreadsPerWorker; ++i) {
    Ctx& c = ctx[i];
    c.worker = w;
    c.thread = i;
    c.rng = mix(cfg.seed ^ mix(0x5353000000000000ull + w * 16 + i));
    c.tally = &shared->t[w][i];
    c.cfg = &cfg;
    // Thread 0 inherits the worker's one CPU; thread 1 the whole mask.
    const uint64_t m = i == 0 ? nth_cpu(mask, w) : mask;
    sched_setaffinity(0, sizeof m, &m);
    ok &= thread_create(&th[i], run_thread, &c) > 0;
  }
  const uint64_t home = nth_cpu(mask, w);
  sched_setaffinity(0, sizeof home, &home);
  for (unsigned i = 0; i < kThreadsPerWorker; ++i) ok &= thread_join(&th[i]) == 0;
  for (unsigned i = 0; i < kThreadsPerWorker; ++i) ok &= shared->t[w][i].finished == 1;
  exit_group(ok ? 0 : 1);
}

}  // namespace
}  // namespace smpstress

int main(int argc, char** argv) {
  using namespace smpstress;
  Config cfg;
  bool want_files = true;
  for (int i = 1; i < argc; ++i) {
    uint64_t v = 0;
    if (arg(argv[i], "seed", &v)) cfg.seed = v;
    else if (arg(argv[i], "ops", &v)) cfg.ops = v;
    else if (arg(argv[i], "workers", &v) && v > 0) cfg.workers = static_cast<unsigned>(v);
    else if (arg(argv[i], "files", &v)) want_files = v != 0;
    else {
      printf("smpstress: unknown argument '%s' (seed=S ops=N workers=N files=0|1)\n", argv[i]);
      return 2;
    }
  }
  const uint64_t mask = usertest::cpus_mask();
  if (!cfg.workers) cfg.workers = static_cast<unsigned>(__builtin_popcountll(mask));
  if (cfg.workers > kMaxWorkers) cfg.workers = kMaxWorkers;
  cfg.files = want_files && tmp_writable();
  printf("smpstress: seed %lu: %u workers x %u threads x %lu operations%s\n", cfg.seed, cfg.workers,
         kThreadsPerWorker, cfg.ops, cfg.files ? " (with /tmp files)" : "");
  auto* shared = static_cast<SharedPage*>(map_anon(kSharedBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  if (!shared) return 1;
  memset(shared, 0, kSharedBytes);
  // A dead process's root may stay in the kernel's root cache (kept frames):
  // fill the cache first, so the baseline does not move when roots get cached.
  warm_root_cache(20);
  const uint64_t frames_start = free_frames();

  int64_t pids[kMaxWorkers];
  for (unsigned w = 0; w < cfg.workers; ++w) {
    pids[w] = fork();
    if (pids[w] == 0) worker(w, cfg, shared, mask);
  }
  unsigned workers_ok = 0;
  int first_bad_status = 0;
  for (unsigned w = 0; w < cfg.workers; ++w) {
    int st = -1;
    if (pids[w] > 0 && wait4(pids[w], &st, 0) == pids[w] && st == wait_exited(0)) ++workers_ok;
    else if (!first_bad_status) first_bad_status = st ? st : -1;
  }
  // Every process is reaped; a thread's last frames go once it has left its
  // CPU, so let the count settle before comparing.
  uint64_t frames_end = free_frames();
  for (int i = 0; i < 50 && frames_end != frames_start; ++i) {
    sched_yield();
    frames_end = free_frames();
  }

  uint64_t done[kOps] = {}, bad[kOps] = {}, segv = 0, total = 0, failed = 0;
  for (unsigned w = 0; w < cfg.workers; ++w)
    for (unsigned i = 0; i < kThreadsPerWorker; ++i) {
      const Tally& t = shared->t[w][i];
      for (unsigned k = 0; k < kOps; ++k) done[k] += t.done[k], bad[k] += t.bad[k], total += t.done[k];
      for (unsigned k = 0; k < kOps; ++k) failed += t.bad[k];
      segv += t.segv_expected;
      if (t.first_bad_op)
        printf("smpstress: FAIL: seed %lu worker %u thread %u operation %lu (%s): check at smpstress_ops.cpp:%u\n",
               cfg.seed, w, i, t.first_bad_op - 1, kOpNames[t.first_bad_kind], t.first_bad_line);
    }
  const bool pass = workers_ok == cfg.workers && failed == 0 && frames_end == frames_start;
  {
    char storage[2048];
    pvk::Record r("smpstress", storage, sizeof storage);
    r.u64("seed", cfg.seed).u64("ops_per_thread", cfg.ops).u64("workers", cfg.workers);
    r.u64("threads", cfg.workers * kThreadsPerWorker).u64("ops", total);
    for (unsigned k = 0; k < kOps; ++k) r.u64(kOpNames[k], done[k]);
    char key[32];
    for (unsigned k = 0; k < kOps; ++k) {
      pvk::format(key, sizeof key, "%s_bad", kOpNames[k]);
      r.u64(key, bad[k]);
    }
    r.u64("failed_checks", failed).u64("segv_expected", segv).u64("workers_ok", workers_ok);
    r.i64("first_bad_status", first_bad_status).boolean("files", cfg.files);
    r.u64("free_frames_start", frames_start).u64("free_frames_end", frames_end).boolean("pass", pass);
  }
  printf("smpstress: seed %lu: %lu operations, %lu failed checks, %u/%u workers ok, frames %lu -> %lu: %s\n",
         cfg.seed, total, failed, workers_ok, cfg.workers, frames_start, frames_end, pass ? "pass" : "FAIL");
  munmap(shared, kSharedBytes);
  return pass ? 0 : 1;
}
