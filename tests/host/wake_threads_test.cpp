// Sleeping and waking with no lock in common (kernel/proc/wake.h) and the
// futex wait queue (kernel/proc/futex_queue.h) under real parallelism:
// host threads, each playing a CPU (test::act_as_cpu) with a run queue of
// its own, run a fixed set of processes the way the scheduler does. A
// process that runs either futex-waits on its own word (links itself into
// the one shared bucket, commits to sleep, looks at `woken` once more, and
// is switched out: switch_out decides under the CPU's run-queue lock, and
// the switch completes — on_cpu cleared — only after a delay, so wakers
// meet sleepers still on their CPU) or sets another's word and
// FUTEX_WAKEs it. A further thread plays the timer and signals: it wakes
// processes directly — those a CPU lingers with in the protocol's two
// windows (committed but not yet decided; decided asleep but still on its
// CPU), and random ones — so waiters also leave the queue on their own
// (unlink_unless_woken) while wakers race them. It stops for the last
// quarter, so a lost wake-up is not made up for by a later timer wake.
//
// Whatever the interleaving: no process is ever run by two threads at once,
// none is queued twice (the queue panics) or lost (at the end every
// process is queued exactly once, or asleep and still linked, unwoken), and
// every wake a WAKE counted was received by exactly one waiter. Built with
// ThreadSanitizer (pvk_tsan_host_tests). A waker that skips the on_cpu
// wait, or that claims a committed sleeper without its compare-and-swap,
// fails it.
#include "host_compat.h"

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "cross_cpu_host.h"
#include "kernel/proc/futex_queue.h"
#include "kernel/proc/process.h"
#include "kernel/proc/run_queue.h"
#include "kernel/proc/wake.h"

namespace pvk::proc {
namespace {

// Three CPUs and the timer. More spinning threads than the host has cores
// convoy on a ticket lock (the next in line descheduled while the others
// spin); so here every spin-wait's poll of cross-CPU requests (the lock's,
// and a waker's wait for a sleeper to leave its CPU) yields the host CPU.
constexpr unsigned kCpus = 3;
constexpr unsigned kProcs = 10;
constexpr uint64_t kRuns = 3000;
// The timer stops here: in the last quarter only FUTEX_WAKEs wake, so a
// wake-up the protocol lost is not made up for by a later timer wake, and
// shows at the end (asleep, though woken).
constexpr uint64_t kTimerRuns = kRuns * 3 / 4;

struct Sim {
  uint32_t word = 0;        // the futex word (1: a wake is meant for it)
  FutexWaiter w{};          // its waiter entry while it waits
  bool waiting = false;     // between its link and its return (its own)
  uint64_t wakes_received = 0;
};

struct Shared {
  RunQueue queues[kCpus];
  Process procs[kProcs];
  Sim sim[kProcs];
  FutexBucket bucket;
  std::atomic<int> owner[kProcs];  // -1: off every CPU; else the thread running it
  std::atomic<uint64_t> runs{0};
  std::atomic<uint64_t> wakes_counted{0};  // what WAKEs returned
  std::atomic<uint64_t> queued_by_waker{0};
  std::atomic<uint64_t> still_on_cpu{0};
  std::atomic<bool> timer_done{false};
  // Test bookkeeping: 1 while a CPU lingers with the process committed
  // (Blocked, before its switch decides), 2 while it lingers after the
  // decision with the process still on it (Asleep, registers not saved).
  // The timer aims at these windows.
  std::atomic<uint8_t> window[kProcs];
};

unsigned index_of(const Shared& s, const Process* p) { return static_cast<unsigned>(p - s.procs); }

void put(Shared& s, Process& p, unsigned cpu) {
  s.queues[cpu].lock();
  s.queues[cpu].push(p, static_cast<int16_t>(cpu));
  s.queues[cpu].unlock();
}

// The kernel's wake_up, with this test's enqueue.
bool wake_up_here(Shared& s, Process& p, unsigned cpu) {
  switch (claim_wake(p)) {
    case Claim::NotSleeping: return false;
    case Claim::StillOnCpu: s.still_on_cpu.fetch_add(1); return true;
    case Claim::QueueIt: break;
  }
  wait_until_off_cpu(p);
  s.queued_by_waker.fetch_add(1);
  put(s, p, cpu);
  return true;
}

Process* take(Shared& s, unsigned cpu) {
  for (unsigned n = 0; n < kCpus; ++n) {
    RunQueue& q = s.queues[(cpu + n) % kCpus];
    if (n && !q.size()) continue;
    q.lock();
    Process* p = q.take_first(~uint64_t{0});
    q.unlock();
    if (p) return p;
  }
  return nullptr;
}

// What a process does when it runs: finish a wait it was woken from, then
// wait on its word, or wake another.
void run_step(Shared& s, Process& p, unsigned cpu, std::mt19937& rng) {
  const unsigned i = index_of(s, &p);
  Sim& me = s.sim[i];
  if (me.waiting) {
    // Back from a sleep: a FUTEX_WAKE's (woken), or the timer's or a
    // signal's (not): then it leaves the queue itself, unless a wake came
    // first after all.
    const bool woken = __atomic_load_n(&me.w.woken, __ATOMIC_SEQ_CST) || s.bucket.unlink_unless_woken(me.w);
    if (woken) ++me.wakes_received;
    me.waiting = false;
    __atomic_store_n(&me.word, 0u, __ATOMIC_SEQ_CST);
  }
  if (rng() % 2) {
    // FUTEX_WAIT(word, 0); a word set meanwhile is taken instead (and
    // cleared), as a ring's thread takes its token.
    s.bucket.lock();
    const bool sleep = __atomic_load_n(&me.word, __ATOMIC_SEQ_CST) == 0;
    if (sleep) {
      me.w = FutexWaiter{nullptr, reinterpret_cast<uint64_t>(&me.word), 0, ~0u, &p};
      s.bucket.link(me.w);
      me.waiting = true;
    } else {
      __atomic_store_n(&me.word, 0u, __ATOMIC_SEQ_CST);
    }
    s.bucket.unlock();
    if (!sleep) return;
    commit_to_sleep(p);
    if (__atomic_load_n(&me.w.woken, __ATOMIC_SEQ_CST)) cancel_sleep(p);  // woken already: no sleep
    return;  // the switch decides (switch_out)
  }
  // FUTEX_WAKE of another's word.
  const unsigned t = rng() % kProcs;
  if (t == i) return;
  __atomic_store_n(&s.sim[t].word, 1u, __ATOMIC_SEQ_CST);
  const int n = s.bucket.wake(nullptr, reinterpret_cast<uint64_t>(&s.sim[t].word), 0, 1, ~0u,
                              [&](Process& q) { wake_up_here(s, q, cpu); });
  s.wakes_counted.fetch_add(static_cast<uint64_t>(n));
}

void poll_yielding() { std::this_thread::yield(); }

struct YieldingPolls {
  xcpu::Delivery saved = xcpu::g_delivery;
  YieldingPolls() {
    xcpu::Delivery d = saved;
    d.poll = &poll_yielding;
    xcpu::install(d);
  }
  ~YieldingPolls() { xcpu::install(saved); }
};

TEST(WakeThreads, NoWakeIsLostAndNoProcessRunsTwiceOrIsQueuedTwice) {
  const YieldingPolls polls;
  Shared s;
  for (unsigned i = 0; i < kProcs; ++i) {
    s.owner[i] = -1;
    s.window[i] = 0;
    s.procs[i].pid = static_cast<int>(i + 1);
    s.procs[i].state = ProcState::Runnable;
    put(s, s.procs[i], i % kCpus);
  }
  std::vector<std::thread> threads;
  for (unsigned cpu = 0; cpu < kCpus; ++cpu)
    threads.emplace_back([&s, cpu] {
      test::act_as_cpu(cpu + 1);
      std::mt19937 rng(cpu * 7919 + 1);
      for (unsigned idle = 0; s.runs.load() < kRuns;) {
        Process* p = take(s, cpu);
        if (!p) {
          // Everyone asleep and no timer left to wake them: done.
          if (s.timer_done.load() && ++idle > 500) break;
          std::this_thread::yield();
          continue;
        }
        idle = 0;
        const unsigned i = index_of(s, p);
        RunQueue& mine = s.queues[cpu];
        mine.lock();  // switch_to: on_cpu set under this CPU's queue lock
        __atomic_store_n(&p->on_cpu, static_cast<int16_t>(cpu), __ATOMIC_RELAXED);
        mine.unlock();
        const int was = s.owner[i].exchange(static_cast<int>(cpu));
        EXPECT_EQ(was, -1) << "pid " << p->pid << " run while thread " << was << " ran it";
        EXPECT_EQ(load_state(*p), ProcState::Runnable) << "pid " << p->pid << " run while not runnable";
        s.runs.fetch_add(1);
        run_step(s, *p, cpu, rng);
        // Between a commit and the switch's decision (schedule() looking for
        // work) wakers find it Blocked, still on its CPU: the host thread
        // lingers there, giving its core away, so the others run inside the
        // window even on a busy host.
        if (load_state(*p) == ProcState::Blocked && rng() % 3 == 0) {
          s.window[i] = 1;
          for (unsigned k = 0; k < 3 && load_state(*p) == ProcState::Blocked; ++k) std::this_thread::yield();
          s.window[i] = 0;
        }
        // The switch away: the decision under this CPU's queue lock, the
        // registers saved later (a wake meanwhile finds it Asleep but still
        // on its CPU, and waits).
        mine.lock();
        const bool requeue = switch_out(*p);
        if (!requeue && rng() % 2) {
          // Asleep, still on this CPU: a waker must wait for the clear below
          // (were it to queue it now, another CPU could run it while this
          // one still does).
          s.window[i] = 2;
          for (unsigned k = 0; k < 3; ++k) std::this_thread::yield();
          s.window[i] = 0;
        }
        s.owner[i].store(-1);
        __atomic_store_n(&p->on_cpu, Process::kNoCpu, __ATOMIC_RELEASE);  // finish_switch
        mine.unlock();
        if (requeue) put(s, *p, (cpu + 1) % kCpus);
      }
    });
  // The timer and signals: wake anyone asleep, whatever it waits for.
  std::thread timer([&s] {
    test::act_as_cpu(kCpus + 1);
    std::mt19937 rng(12345);
    while (s.runs.load() < kTimerRuns) {
      for (unsigned i = 0; i < kProcs; ++i)
        if (s.window[i].load()) wake_up_here(s, s.procs[i], 0);
      if (rng() % 2) wake_up_here(s, s.procs[rng() % kProcs], 0);
      std::this_thread::yield();
    }
    s.timer_done = true;
  });
  for (auto& t : threads) t.join();
  timer.join();

  EXPECT_GE(s.runs.load(), kTimerRuns);
  // Both outcomes of a claim happened: woken still on its CPU (it stays
  // runnable by itself), and woken asleep (the waker queues it).
  EXPECT_GT(s.queued_by_waker.load(), 0u);
  EXPECT_GT(s.still_on_cpu.load(), 0u);
  // Every process: on a queue once (runnable), or asleep and still in the
  // bucket, not woken — a woken one left asleep would be a lost wake-up.
  unsigned queued = 0;
  for (RunQueue& q : s.queues) queued += q.size();
  unsigned asleep = 0;
  uint64_t received = 0, pending_wakes = 0;
  for (unsigned i = 0; i < kProcs; ++i) {
    const Process& p = s.procs[i];
    const Sim& m = s.sim[i];
    received += m.wakes_received;
    if (m.waiting && __atomic_load_n(&m.w.woken, __ATOMIC_RELAXED)) ++pending_wakes;  // woken, not yet run
    const ProcState st = load_state(p);
    EXPECT_EQ(p.on_cpu, Process::kNoCpu);
    if (st == ProcState::Asleep) {
      ++asleep;
      EXPECT_TRUE(m.waiting) << "pid " << p.pid;
      EXPECT_FALSE(m.w.woken) << "pid " << p.pid << " woken but left asleep";
      EXPECT_TRUE(s.bucket.linked(m.w)) << "pid " << p.pid << " asleep but in no queue";
    } else {
      EXPECT_EQ(st, ProcState::Runnable) << "pid " << p.pid;
      EXPECT_NE(p.rq_cpu, Process::kNoCpu) << "pid " << p.pid << " runnable but on no queue";
    }
  }
  EXPECT_EQ(queued + asleep, kProcs);
  // Each wake a WAKE counted went to exactly one waiter: received, or
  // waiting to be seen by a waiter that has not run since.
  EXPECT_EQ(received + pending_wakes, s.wakes_counted.load());
  for (RunQueue& q : s.queues) {
    q.lock();
    q.clear();
    q.unlock();
  }
}

// A waiter woken by the timer or a signal, not by a WAKE, leaves the queue
// itself; a WAKE that got there first keeps it counted.
TEST(WakeThreads, UnlinkUnlessWokenLeavesTheQueueOrReportsTheWake) {
  FutexBucket b;
  Process p;
  FutexWaiter a{nullptr, 0x1000, 0, ~0u, &p}, c{nullptr, 0x1000, 0, ~0u, &p};
  b.lock();
  b.link(a);
  b.link(c);
  b.unlock();
  EXPECT_FALSE(b.unlink_unless_woken(a));  // not woken: unlinked now
  int calls = 0;
  EXPECT_EQ(b.wake(nullptr, 0x1000, 0, 5, ~0u, [&](Process&) { ++calls; }), 1);  // only c was left
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(c.woken);
  EXPECT_TRUE(b.unlink_unless_woken(c));  // the wake was its
  EXPECT_EQ(b.wake(nullptr, 0x1000, 0, 5, ~0u, [&](Process&) { ++calls; }), 0);
}

// The handshake's steps on one thread: a wake before the switch decision
// leaves the sleeper to stay runnable itself; one after it is the waker's
// to queue.
TEST(WakeThreads, TheClaimSaysWhoQueues) {
  Process p;
  p.state = ProcState::Runnable;
  EXPECT_EQ(claim_wake(p), Claim::NotSleeping);
  commit_to_sleep(p);
  EXPECT_EQ(claim_wake(p), Claim::StillOnCpu);
  EXPECT_TRUE(switch_out(p));  // woken before the decision: back on a queue by its switch
  commit_to_sleep(p);
  EXPECT_FALSE(switch_out(p));  // asleep: its switch queues nothing
  EXPECT_EQ(load_state(p), ProcState::Asleep);
  EXPECT_EQ(claim_wake(p), Claim::QueueIt);
  EXPECT_EQ(claim_wake(p), Claim::NotSleeping);  // one waker wins
  commit_to_sleep(p);
  cancel_sleep(p);
  EXPECT_EQ(load_state(p), ProcState::Runnable);
  p.state = ProcState::Zombie;
  EXPECT_FALSE(switch_out(p));
  EXPECT_EQ(claim_wake(p), Claim::NotSleeping);
}

// A futex bucket's lock class (the lock-order checker's book,
// base/lib/lock_order.h): taken under the kernel lock (a locked futex call,
// a thread's exit clearing its child-tid word), and a wake queues the
// woken — a run queue's lock — under it; a bucket taken under a run queue,
// an address space or another bucket is a violation.
TEST(WakeThreads, FutexBucketsRankBetweenTheKernelLockAndTheRunQueues) {
  constexpr LockClass kKernel{"kernel", LockRank::Kernel};
  constexpr LockClass kRunQueue{"run_queue", LockRank::RunQueue};
  constexpr LockClass kMm{"address_space", LockRank::Mm};
  const LockClass& futex = FutexBucket::kLockClass;
  EXPECT_STREQ(futex.name, "futex");
  LockOrder held;
  EXPECT_EQ(held.conflict(futex), nullptr);
  held.push(kKernel);
  EXPECT_EQ(held.conflict(futex), nullptr);
  held.push(futex);
  EXPECT_EQ(held.conflict(kRunQueue), nullptr);
  EXPECT_EQ(held.conflict(futex), &futex);  // two buckets at once
  EXPECT_EQ(held.conflict(kKernel), &kKernel);
  held.push(kRunQueue);
  EXPECT_TRUE(held.pop(kRunQueue));
  EXPECT_TRUE(held.pop(futex));
  EXPECT_TRUE(held.pop(kKernel));

  LockOrder wrong;
  wrong.push(kRunQueue);
  EXPECT_EQ(wrong.conflict(futex), &kRunQueue);
  LockOrder under_mm;
  under_mm.push(kMm);
  EXPECT_EQ(under_mm.conflict(futex), &kMm);
}

}  // namespace
}  // namespace pvk::proc
