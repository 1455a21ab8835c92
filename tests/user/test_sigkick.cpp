// sigkick_*: how long a thread that runs in user mode on another CPU, making
// no system calls, goes on running after a signal was sent to it.
// Nothing in its own code enters the kernel, so unless the sender
// interrupts its CPU (pvk's signal kick, kernel/proc/process.cpp; Linux's
// kick_process) it notices the signal only at that CPU's next timer tick:
//  - sigkick_tgkill: the main thread tgkills the spinning thread with a
//    handled signal and waits for the handler;
//  - sigkick_exit_group: a process whose thread spins on another CPU calls
//    exit_group.
// The spinner stamps the TSC on every turn of its loop, so its last stamp
// before the handler (or its death) says until when it ran user code; the
// figure of a try is that stamp minus the TSC when the signal had been sent
// (tgkill returned; exit_group called). It counts only time the spinner's
// CPU ran its code, so a host that leaves a QEMU vCPU thread unscheduled for
// a while (TCG in wall time) lengthens it little: an interrupt waiting is
// taken before any more user code.
// Each try first waits until the spinner runs on another CPU at the same
// time as the sender (its stamp moves while the sender spins): a "crossed"
// try. Other threads (the proctest runner polls) may hold that CPU at
// times, and on one CPU it never happens: such tries wait for nothing (the
// spinner runs on for nothing when the signal finds it switched out).
// Without a kick a crossed try runs on until the spinner's CPU's next tick,
// at a phase that varies from try to try: half a tick on average (less
// when a tick switched the spinner out just before the send, or the host
// held its vCPU past its tick: such tries run on for nothing either way).
// With the kick, microseconds, but the sender's vCPU may be held by the
// host between its stamp and the kick (exit_group) and lengthen one try.
// So the tries go on until kTries crossed (or kMaxTries in all), and the
// median of the crossed ones must be below a tick/4; judged from
// kMinCrossed crossed tries on (fewer tell little). Without the kick, the
// median of 7 tries uniform over a tick is below a quarter of it with a
// chance of 7 %, of 3 tries 16 % (the boot test's kick count is what
// fails for sure without kicks).
// They run only when named (proctest.cpp): the SmpTlb boots, with processes
// on two CPUs, name them and check the crossed count and the kicks sent
// (tests/boot/smp_boot_test.cpp): otherwise the test proved nothing.
#include "base/lib/median.h"
#include "bench/libc/thread.h"
#include "harness.h"

namespace proctest {
namespace {

constexpr unsigned kTries = 7;      // crossed tries wanted
constexpr unsigned kMaxTries = 14;  // tries in all
constexpr unsigned kMinCrossed = 3;
// pvk's timer tick (kTimeSliceNs, kernel/main.cpp; Linux's is no longer).
constexpr uint64_t kTickNs = 10'000'000;
constexpr uint64_t kBoundNs = kTickNs / 4;
// How long a try looks for the spinner running beside the sender: the
// proctest runner takes turns on the CPUs, and a loaded host runs each vCPU
// a fraction of the time. On one CPU it never finds it: kMaxTries of this.
constexpr uint64_t kCrossWaitNs = 20 * kTickNs;
// The sender's window for seeing the spinner's stamp move.
constexpr uint64_t kWindowNs = 50'000;
constexpr uint64_t kWaitNs = 2'000'000'000;  // bound of the wait for a handler (TCG under Xen is slow)
constexpr uint64_t kFailed = ~uint64_t{0};

inline uint64_t rdtsc() {
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t{hi} << 32) | lo;
}

// TSC cycles per microsecond, measured against CLOCK_MONOTONIC (the same
// on pvk, whose clock reads the TSC, and on Linux).
uint64_t g_cycles_per_us = 1;
void calibrate_tsc() {
  const uint64_t n0 = now_ns(), c0 = rdtsc();
  while (now_ns() - n0 < 20'000'000) {
  }
  const uint64_t us = (now_ns() - n0) / 1000;
  g_cycles_per_us = us ? (rdtsc() - c0) / us : 1;
  if (!g_cycles_per_us) g_cycles_per_us = 1;
}
uint64_t cycles_to_ns(uint64_t cycles) { return cycles * 1000 / g_cycles_per_us; }
uint64_t ns_to_cycles(uint64_t ns) { return ns * g_cycles_per_us / 1000; }

// Shared with a helper process (sigkick_exit_group), so MAP_SHARED.
struct Spin {
  volatile uint64_t last_tsc;             // the spinner's latest stamp
  volatile uint64_t last_before_handler;  // its last stamp before the handler ran (it goes on after)
  volatile uint32_t handled;              // the handler ran
  volatile uint64_t sent_tsc;             // sigkick_exit_group: when exit_group was called
  volatile int64_t tid;
};
Spin* g_spin;

// In user mode only: no system call once it runs.
void spinner(void*) {
  g_spin->tid = gettid();
  for (;;) g_spin->last_tsc = rdtsc();
}

void note_handler(int) {
  g_spin->last_before_handler = g_spin->last_tsc;
  g_spin->handled = 1;
}

// Starts the spinner and waits until it runs; its tid, or 0.
int64_t start_spinner(Thread* t) {
  g_spin->tid = 0;
  if (thread_create(t, spinner, nullptr) <= 0) return 0;
  const uint64_t t0 = now_ns();
  while (!g_spin->tid && now_ns() - t0 < kWaitNs) sched_yield();  // on one CPU, its turn
  return g_spin->tid;
}

// Spins (no system call) until the spinner's stamp moves during a short
// window of this thread's: both are on a CPU now, two different ones. The
// window may stretch in wall time while the host runs the other vCPU's
// thread instead of this one (they need not run at the same time), but not
// far: the longer it is, the likelier a tick in it switched the spinner
// out (the runner takes its turn) or, on one CPU, this thread out and the
// spinner in. False after kCrossWaitNs without a crossing.
bool wait_until_crossed() {
  const uint64_t t0 = rdtsc(), window = ns_to_cycles(kWindowNs), budget = ns_to_cycles(kCrossWaitNs);
  while (rdtsc() - t0 < budget) {
    const uint64_t start = rdtsc(), seen = g_spin->last_tsc;
    while (rdtsc() - start < window) {
    }
    const bool moved = g_spin->last_tsc != seen;
    if (moved && rdtsc() - start < ns_to_cycles(kTickNs / 4)) return true;
  }
  return false;
}

// One try: a handled signal to the spinner, then (on this CPU, without a
// system call) the wait for its handler. The TSC cycles the spinner ran on
// after tgkill returned, or kFailed.
uint64_t signal_run_on(int64_t tid) {
  Spin& s = *g_spin;
  s.handled = 0;
  if (tgkill(getpid(), tid, SIGUSR1) != 0) return kFailed;
  const uint64_t sent = rdtsc(), bound = ns_to_cycles(kWaitNs);
  while (!s.handled)
    if (rdtsc() - sent > bound) return kFailed;
  const uint64_t last = s.last_before_handler;
  return last > sent ? last - sent : 0;
}


// The crossed tries' figures (ns, sorted here) in the record; the mean of
// all but the longest judged (see the top of the file).
void judge(uint64_t* ns, unsigned crossed) {
  detail("crossed", crossed);
  detail("bound_ns", static_cast<int64_t>(kBoundNs));
  if (!crossed) return;
  detail("median_ns", static_cast<int64_t>(::pvk::sort_and_median(ns, crossed)));
  detail("max_ns", static_cast<int64_t>(ns[crossed - 1]));
  if (crossed < kMinCrossed) return;
  uint64_t sum = 0;
  for (unsigned i = 0; i + 1 < crossed; ++i) sum += ns[i];
  const uint64_t mean = sum / (crossed - 1);
  detail("trimmed_mean_ns", static_cast<int64_t>(mean));
  // The median: a host that holds a vCPU thread for milliseconds spoils a
  // try or two, not half of them.
  CHECK(::pvk::sort_and_median(ns, crossed) < kBoundNs);
}

Spin* map_spin() { return static_cast<Spin*>(map_anon(4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS)); }

// The helper process of one sigkick_exit_group try: the spinner, then
// exit_group once it runs beside this thread. Its exit status says whether
// it did (1) or not (2), 3 that the spinner did not start.
[[noreturn]] void exit_group_try() {
  Thread t;
  if (!start_spinner(&t)) exit_group(3);
  const bool crossed = wait_until_crossed();
  g_spin->sent_tsc = rdtsc();
  exit_group(crossed ? 1 : 2);
}

}  // namespace

void test_sigkick_tgkill() {
  g_spin = map_spin();
  CHECK(g_spin != nullptr);
  if (!g_spin) return;
  calibrate_tsc();
  CHECK_EQ(sigaction(SIGUSR1, note_handler), 0);
  Thread t;
  const int64_t tid = start_spinner(&t);
  CHECK(tid > 0);
  if (tid <= 0) return;
  uint64_t ns[kTries];
  unsigned crossed = 0;
  for (unsigned i = 0; i < kMaxTries && crossed < kTries; ++i) {
    const bool crossing = wait_until_crossed();
    const uint64_t cycles = signal_run_on(tid);
    CHECK(cycles != kFailed);
    if (crossing && cycles != kFailed) ns[crossed++] = cycles_to_ns(cycles);
  }
  judge(ns, crossed);
  // The spinner never leaves its loop: the test process' exit_group ends it.
}

void test_sigkick_exit_group() {
  g_spin = map_spin();
  CHECK(g_spin != nullptr);
  if (!g_spin) return;
  calibrate_tsc();
  uint64_t ns[kTries];
  unsigned crossed = 0;
  for (unsigned i = 0; i < kMaxTries && crossed < kTries; ++i) {
    g_spin->last_tsc = 0;
    g_spin->sent_tsc = 0;
    const int64_t pid = fork_helper();
    if (pid == 0) exit_group_try();
    CHECK(pid > 0);
    if (pid <= 0) return;
    // Blocked, not polling: one thread less to take turns on the CPUs. The
    // spinner dies at its CPU's tick at the latest.
    const int st = wait_for(pid);
    CHECK(st == ::pvk::abi::wait_exited(1) || st == ::pvk::abi::wait_exited(2));
    const uint64_t sent = g_spin->sent_tsc, last = g_spin->last_tsc;
    CHECK(sent != 0);
    if (st == ::pvk::abi::wait_exited(1)) ns[crossed++] = last > sent ? cycles_to_ns(last - sent) : 0;
  }
  judge(ns, crossed);
}

}  // namespace proctest
