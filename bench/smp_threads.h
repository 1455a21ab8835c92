// The SMP benchmarks' shared machinery (smp_shootdown.cpp, smp_scaling.cpp):
// where the threads run (Placement) and a crew of background threads that
// keep the address space live on other CPUs while the timed operation runs.
//
// The background threads (bench/libc/thread.h) are started before the first
// rep and run until the parameter set ends; the main thread waits until each
// has begun its loop, so their CPUs hold the address space live while the
// timed operation runs. They call sched_yield every few thousand accesses:
// while pvk runs every thread on the boot CPU (one vCPU, or before the
// scheduler runs threads on the others) the timed thread then gets the CPU
// back within a fraction of a slice instead of after each spinner's whole
// 10 ms slice; on a CPU of its own, a yield with nothing else to run returns
// at once. `thread_touches` (extra field) counts the accesses the threads
// made during the parameter set: how much they ran.
//
// With more than one CPU, the threads are pinned (sched_setaffinity; see
// Placement below), and each proves where it runs (getcpu) before the
// first rep; `threads_elsewhere` (extra field) counts those that run on
// another CPU than the timed thread. Before every rep the timed thread
// also waits until each has made progress since the last, so a thread
// that a rep's figure counts as running elsewhere really ran there.
#pragma once

#include "bench/bench.h"
#include "bench/libc/thread.h"

namespace bench::smp {

constexpr uint64_t kWordsPerPage = kPage / 8;
constexpr uint64_t kMaxThreads = 15;  // pvk: 64 process slots; threads take them too
constexpr uint64_t kYieldEvery = 4096;

// CPU placement. A new thread may stay on its creator's CPU (measured on
// Linux, K = 1, 1 page: the reader ran one pass in the whole set), or
// land wherever a scheduler's interleaving puts it that time (pvk under
// Xen, before pinning: munmap_threads with a reader made 0 shootdowns in
// one boot and 100 in another of the same machine), so the threads are
// pinned, on Linux and pvk alike: the main thread to CPU 0, thread i to
// CPU (i + 1) mod the CPUs it may use, the main thread's mask restored at
// the end of the set. Linux x86-64 system call numbers; the mask is one
// 64-bit word (CPUs 0..63).
struct Placement {
  uint64_t saved = 0;  // the main thread's mask before the set (0: not pinned)
  unsigned cpus = 1;   // CPUs in it
};

// The CPU the caller runs on (getcpu), -1 if it cannot say.
int32_t cpu_now();

// Pins the main thread to the first CPU of its mask (more than one CPU only).
Placement place_main();
// In thread `index` (0-based): its CPU, the (index + 1)-th of the mask, round robin.
void place_thread(const Placement& p, unsigned index);
void unplace_main(const Placement& p);

enum class Work {
  Read,   // load one word of each page of the shared region, round and round
  Write,  // store to the thread's own page (other memory of the process)
};

struct Crew;

struct Worker {
  Crew* crew = nullptr;
  Thread thread{};
  uint64_t* own = nullptr;  // Work::Write: this thread's page
  volatile uint64_t touches = 0;
  volatile int32_t cpu = -1;  // where it runs (getcpu), once in its loop
  uint64_t seen = 0;          // touches at the timed thread's last crew_sync
};

// K background threads running one kind of work until stopped.
struct Crew {
  Work work = Work::Read;
  uint64_t* region = nullptr;  // Work::Read
  uint64_t pages = 0;
  volatile uint32_t stop = 0;
  volatile uint32_t running = 0;  // threads that have begun their loop
  Worker w[kMaxThreads];
  unsigned n = 0;
  uint64_t* own_pages = nullptr;  // one page per thread (Work::Write)
  uint64_t own_count = 0;
  Placement placement;
};

// Starts k threads; false (r failed) if one could not be created.
bool crew_start(Run& r, Crew& c, unsigned k);
// Before a rep: returns once every thread has made progress since the
// last call (or since it started).
void crew_sync(Crew& c);
// Stops and joins the threads; reports their accesses.
void crew_stop(Run& r, Crew& c);

// loops= as given, or (0) about budget / pages, from 1 to cap; the record
// shows the count used, and each loop is one op.
uint64_t loops_param(Run& r, uint64_t pages, uint64_t budget, uint64_t cap);

}  // namespace bench::smp
