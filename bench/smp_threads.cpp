// The SMP benchmarks' threads: placement and the background crew (smp_threads.h).
#include "bench/smp_threads.h"

namespace bench::smp {

int32_t cpu_now() {
  uint32_t cpu = 0;
  return getcpu(&cpu, nullptr) == 0 ? static_cast<int32_t>(cpu) : -1;
}

namespace {

unsigned nth_cpu(uint64_t mask, unsigned n) {
  for (unsigned c = 0, seen = 0; c < 64; ++c)
    if (mask >> c & 1) {
      if (seen == n) return c;
      ++seen;
    }
  return 0;
}

int64_t pin_self(unsigned cpu) {
  const uint64_t mask = 1ull << cpu;
  return sched_setaffinity(0, sizeof mask, &mask);
}

}  // namespace

// Pins the main thread to the first CPU of its mask (more than one CPU only).
Placement place_main() {
  Placement p;
  uint64_t mask = 0;
  if (sched_getaffinity(0, sizeof mask, &mask) <= 0 || mask == 0) return p;
  p.cpus = static_cast<unsigned>(__builtin_popcountll(mask));
  if (p.cpus > 1 && pin_self(nth_cpu(mask, 0)) == 0) p.saved = mask;
  return p;
}

// In thread `index` (0-based): its CPU, the (index + 1)-th of the mask, round robin.
void place_thread(const Placement& p, unsigned index) {
  if (p.saved) pin_self(nth_cpu(p.saved, (index + 1) % p.cpus));
}

void unplace_main(const Placement& p) {
  if (p.saved) sched_setaffinity(0, sizeof p.saved, &p.saved);
}

namespace {

void crew_loop(void* arg) {
  Worker* me = static_cast<Worker*>(arg);
  Crew* c = me->crew;
  place_thread(c->placement, static_cast<unsigned>(me - c->w));
  me->cpu = cpu_now();
  __atomic_add_fetch(&c->running, 1u, __ATOMIC_ACQ_REL);
  uint64_t n = 0, i = 0;
  while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
    for (uint64_t k = 0; k < kYieldEvery; ++k) {
      if (c->work == Work::Read) {
        (void)peek(c->region + i * kWordsPerPage);
        if (++i == c->pages) i = 0;
      } else {
        poke(me->own, n + k);
      }
    }
    n += kYieldEvery;
    me->touches = n;
    sched_yield();
  }
}

}  // namespace


// Starts k threads; false (r failed) if one could not be created.
bool crew_start(Run& r, Crew& c, unsigned k) {
  if (k > kMaxThreads) return r.fail("threads must be 0..%lu", kMaxThreads);
  c.stop = 0;
  c.running = 0;
  c.n = 0;
  c.placement = k ? place_main() : Placement{};
  // Every set maps (and writes) the threads' pages for the most threads,
  // whatever k: the same mappings around the timed ones at every k, so
  // that page tables the timed operation empties are not freed and
  // reallocated at k = 0 only (pvk frees an emptied table at munmap).
  c.own_pages = map_pages_or_fail(r, kMaxThreads);
  if (!c.own_pages) return false;
  c.own_count = kMaxThreads;
  for (uint64_t i = 0; i < kMaxThreads; ++i) poke(c.own_pages + i * kWordsPerPage, i);
  for (unsigned t = 0; t < k; ++t) {
    Worker& w = c.w[t];
    w = Worker{};
    w.crew = &c;
    if (c.own_pages) w.own = c.own_pages + t * kWordsPerPage;
    const int64_t tid = thread_create(&w.thread, crew_loop, &w);
    if (tid < 0) return r.fail("thread_create %u returned %ld", t, tid);
    ++c.n;
  }
  // Every thread in its loop, and past its first pass (a thread placed on
  // an idle CPU may take milliseconds to get going there: measured on
  // Linux with -smp 2 under -icount, a reader that made one pass in a
  // whole 3 ms parameter set), before the first rep.
  while (__atomic_load_n(&c.running, __ATOMIC_ACQUIRE) < c.n) sched_yield();
  for (unsigned t = 0; t < c.n; ++t)
    while (c.w[t].touches < 2 * kYieldEvery) sched_yield();
  const int32_t here = cpu_now();
  uint64_t elsewhere = 0;
  for (unsigned t = 0; t < c.n; ++t) elsewhere += c.w[t].cpu >= 0 && c.w[t].cpu != here;
  r.extra("threads_elsewhere", elsewhere);
  for (unsigned t = 0; t < c.n; ++t) c.w[t].seen = c.w[t].touches;
  return true;
}

// Before a rep: returns once every thread has made progress since the
// last call. Yielding, not spinning: a thread that shares this CPU (more
// threads than CPUs) runs only when this one lets it.
void crew_sync(Crew& c) {
  for (unsigned t = 0; t < c.n; ++t) {
    while (c.w[t].touches == c.w[t].seen) sched_yield();
    c.w[t].seen = c.w[t].touches;
  }
}

// Stops and joins the threads; reports their accesses.
void crew_stop(Run& r, Crew& c) {
  __atomic_store_n(&c.stop, 1u, __ATOMIC_RELEASE);
  uint64_t touches = 0;
  for (unsigned t = 0; t < c.n; ++t) {
    if (int64_t e = thread_join(&c.w[t].thread); e != 0) r.fail("thread_join %u returned %ld", t, e);
    touches += c.w[t].touches;
  }
  if (c.own_pages) munmap(c.own_pages, c.own_count * kPage);
  c.own_pages = nullptr;
  c.n = 0;
  unplace_main(c.placement);
  c.placement = Placement{};
  r.extra("thread_touches", touches);
}

// loops= as given, or (0) about budget / pages, from 1 to cap; the record
// shows the count used, and each loop is one op.
uint64_t loops_param(Run& r, uint64_t pages, uint64_t budget, uint64_t cap) {
  uint64_t loops = r.p("loops");
  if (loops == 0) {
    loops = budget / pages;
    if (loops < 1) loops = 1;
    if (loops > cap) loops = cap;
  }
  r.set_p("loops", loops);
  r.ops = loops;
  return loops;
}

}  // namespace bench::smp
