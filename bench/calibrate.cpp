// calibrate: each event the cost model prices (tools/bench's cost model,
// docs/benchmarks.md "Projected time"), timed alone, for `pvk calibrate`.
// One record per event (`event=K`, the index into kEvents below): per_op is
// the ns of one event in this boot's timing mode, and the record's counter
// fields are what `count` events moved, so the host can take out whatever
// else each one involves (a probe under Xen makes a hypercall, an IPI an
// interrupt on the target). Each rep times `count` events and `2 x count`
// and keeps the difference, so what a call costs around its events (the
// probe system call, the counter reads, mapping the probe page) cancels.
// What interrupts did does not: a tick that lands in the `n` sample and not
// in the `2 x n` one takes its events (under Xen, the hypercall re-arming
// the one-shot timer; natively, its return to user mode) off the
// difference, so a counter can come out below the events the probe made.
// "baseline_interrupts" (the interrupts the `n` sample of the reported rep
// took) bounds how far.
//
// An event this machine cannot time (hypercalls natively, an IPI with one
// CPU online, Xen refusing the ptwr assist) gets a record with
// "timed":0 and the errno the kernel gave ("errno":95 is EOPNOTSUPP); the
// host leaves it out of the profile it writes.
#include "bench/bench.h"

namespace bench {
namespace {

// The user-mode kinds: not kernel probes (SYS_pvk_probe) but loops here.
constexpr uint64_t kUserSyscall = ~uint64_t{0};

struct Event {
  const char* name;
  uint64_t probe;  // PvkProbe, or kUserSyscall
};

// Index = the record's `event`; the host's table (tools/bench/src/calibration.cpp,
// calibration_events()) lists the same names in the same order (a host test
// reads this one).
constexpr Event kEvents[] = {
    {"work", PROBE_work},
    {"syscall", kUserSyscall},
    {"exception", PROBE_exception},
    {"invlpg", PROBE_invlpg},
    {"cr3_reload", PROBE_cr3_reload},
    {"clear", PROBE_clear},
    {"copy", PROBE_copy},
    {"ipi", PROBE_ipi},
    {"hypercall", PROBE_hypercall},
    {"multicall", PROBE_multicall},
    {"mmu_update", PROBE_mmu_update},
    {"ptwr", PROBE_ptwr},
    {"walk", PROBE_walk},
};
constexpr uint64_t kNumEvents = sizeof kEvents / sizeof kEvents[0];

// A counter's place in Counters::v (base/counters.inc's order).
enum CounterIndex : unsigned {
#define PVK_MMU_COUNTER(name) kCounter_##name,
#define PVK_MM_COUNTER(name) kCounter_##name,
#define PVK_CPU_COUNTER(name) kCounter_##name,
#include "base/counters.inc"
};

struct Sample {
  int64_t rc = 0;  // 0, or the probe's negative errno
  uint64_t ns = 0;
  Counters moved;
};

// `movq (%rax), %rax` from the probe page: kProbeLoadBytes long, the one
// instruction the kernel steps over when an armed probe fault returns.
inline void probe_load() {
  uint64_t v = kProbeFaultAddress;
  asm volatile("movq (%%rax), %%rax" : "+a"(v) : : "memory");
}

Sample measure(const Event& e, uint64_t n) {
  Sample s;
  if (e.probe == kUserSyscall || e.probe == PROBE_exception) {
    if (e.probe == PROBE_exception) {
      uint64_t unused = 0;
      if ((s.rc = pvk_probe(PROBE_exception, n, &unused)) < 0) return s;
    }
    const Counters c0 = read_all_counters();
    const uint64_t t0 = now_ns();
    if (e.probe == kUserSyscall)
      for (uint64_t i = 0; i < n; ++i) getppid();
    else
      for (uint64_t i = 0; i < n; ++i) probe_load();
    const uint64_t t1 = now_ns();
    s.moved = delta(read_all_counters(), c0);
    s.ns = t1 - t0;
    return s;
  }
  const Counters c0 = read_all_counters();
  s.rc = pvk_probe(e.probe, n, &s.ns);
  s.moved = delta(read_all_counters(), c0);
  return s;
}

// SYS_pvk_probe's refusals (base/abi.h): every one in its own words, or the
// record fails.
bool hostile_arguments_refused(Run& r) {
  uint64_t ns = 0;
  struct Case {
    uint64_t kind, count;
    uint64_t* out;
    int64_t want;
    const char* what;
  } cases[] = {
      {PROBE_kinds, 1, &ns, -EINVAL, "an unknown kind"},
      {~uint64_t{0}, 1, &ns, -EINVAL, "kind ~0"},
      {PROBE_work, 0, &ns, -EINVAL, "count 0"},
      {PROBE_work, kMaxProbeCount + 1, &ns, -EINVAL, "count past kMaxProbeCount"},
      {PROBE_work, ~uint64_t{0}, &ns, -EINVAL, "count ~0"},
      {PROBE_work, 1, reinterpret_cast<uint64_t*>(0xffff800000001000ull), -EFAULT, "a kernel pointer"},
      {PROBE_work, 1, reinterpret_cast<uint64_t*>(0x8000000000000000ull), -EFAULT, "a non-canonical pointer"},
      {PROBE_work, 1, nullptr, -EFAULT, "a null pointer"},
  };
  for (const Case& c : cases)
    if (const int64_t got = pvk_probe(c.kind, c.count, c.out); got != c.want)
      return r.fail("SYS_pvk_probe with %s returned %ld, want %ld", c.what, got, c.want);
  return true;
}

}  // namespace

void run_calibrate(Run& r) {
  const uint64_t event = r.p("event");
  const uint64_t n = r.p("count");
  if (event >= kNumEvents) {
    r.fail("event %lu: there are %lu (0..%lu)", event, kNumEvents, kNumEvents - 1);
    return;
  }
  if (n == 0 || 2 * n > kMaxProbeCount) {
    r.fail("count must be 1..%lu", kMaxProbeCount / 2);
    return;
  }
  if (!hostile_arguments_refused(r)) return;
  const Event& e = kEvents[event];
  r.ops = n;
  // One untimed sample first. The first run of a probe's code pays for what
  // later runs do not (QEMU translating it, cold caches and TLB entries);
  // in the first rep's `n` sample that cost came off the difference, and in
  // a one-rep wall-time run most events came out at 0 ns natively. A
  // refusal here comes again in the first rep, which reports it.
  measure(e, 2 * n);
  uint64_t baseline_interrupts[kMaxReps] = {};
  for (unsigned rep = 0; rep < r.reps; ++rep) {
    const Sample once = measure(e, n);
    const Sample twice = once.rc < 0 ? once : measure(e, 2 * n);
    if (once.rc < 0 || twice.rc < 0) {
      // Not timed here: said in the record, never a zero.
      const int64_t rc = once.rc < 0 ? once.rc : twice.rc;
      printf("bench: calibrate: %s not timed (errno %ld)\n", e.name, -rc);
      r.extra("timed", 0);
      r.extra("errno", static_cast<uint64_t>(-rc));
      r.reps = 0;
      r.ns.n = 0;
      return;
    }
    // The difference of the two: `n` events and nothing else.
    r.ns.add(twice.ns > once.ns ? twice.ns - once.ns : 0);
    r.cycles.add(0);
    baseline_interrupts[r.ns.n - 1] = once.moved.v[kCounter_interrupt_entries];
    Counters& d = r.deltas[r.ns.n - 1];
    for (unsigned i = 0; i < kNumCounters; ++i)
      d.v[i] = twice.moved.v[i] > once.moved.v[i] ? twice.moved.v[i] - once.moved.v[i] : 0;
    d.free_frames = twice.moved.free_frames;
  }
  r.extra("timed", 1);
  // Of the rep whose counters the record carries (the driver's median).
  if (r.ns.n) r.extra("baseline_interrupts", baseline_interrupts[r.ns.median_index()]);
  printf("bench: calibrate: %s timed over %lu + %lu events\n", e.name, n, 2 * n);
}

}  // namespace bench
