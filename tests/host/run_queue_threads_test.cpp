// The per-CPU run queues under real parallelism: host threads, each
// playing a CPU (test::act_as_cpu) with a queue of its own, hand a fixed
// set of processes around the way the scheduler does — each thread takes
// from its own queue first and pulls from the others' when it is empty
// (one queue locked at a time), "runs" what it took, and queues it again
// on a queue of its choosing. Whatever the interleaving: no process is
// ever taken by two threads at once (each carries an owner word checked
// with an atomic exchange), none is lost or queued twice (the queue's own
// check panics), and every run is counted once. Affinity is honoured: a
// process pinned to one CPU is only ever taken by that CPU's thread.
// Built with ThreadSanitizer (pvk_tsan_host_tests), so a race on a queue's
// links fails the test too.
#include "host_compat.h"

#include <atomic>
#include <thread>
#include <vector>

#include "base/lib/lock_stats.h"
#include "cross_cpu_host.h"
#include "kernel/proc/process.h"
#include "kernel/proc/run_queue.h"

namespace pvk::proc {
namespace {

constexpr unsigned kCpus = 4;
constexpr unsigned kProcs = 24;
constexpr unsigned kRunsPerCpu = 3000;

struct Shared {
  RunQueue queues[kCpus];
  Process procs[kProcs];
  std::atomic<int> owner[kProcs];  // -1: queued; else the thread running it
  std::atomic<uint64_t> runs{0};
  std::atomic<uint64_t> pinned_elsewhere{0};
};

unsigned index_of(const Shared& s, const Process* p) { return static_cast<unsigned>(p - s.procs); }

// Own queue first, then the others', one lock at a time (take_work's order).
Process* take(Shared& s, unsigned cpu) {
  const uint64_t bit = uint64_t{1} << cpu;
  for (unsigned n = 0; n < kCpus; ++n) {
    RunQueue& q = s.queues[(cpu + n) % kCpus];
    if (n && !q.size()) continue;
    q.lock();
    Process* p = q.take_first(bit);
    q.unlock();
    if (p) return p;
  }
  return nullptr;
}

void put(Shared& s, Process& p, unsigned cpu) {
  s.queues[cpu].lock();
  s.queues[cpu].push(p, static_cast<int16_t>(cpu));
  s.queues[cpu].unlock();
}

TEST(RunQueueThreads, EveryProcessRunsOnOneCpuAtATimeAndNoneIsLost) {
  Shared s;
  for (unsigned i = 0; i < kProcs; ++i) {
    s.owner[i] = -1;
    s.procs[i].pid = static_cast<int>(i + 1);
    // Every fourth process is pinned to one CPU; the rest may run anywhere.
    s.procs[i].affinity = i % 4 == 0 ? uint64_t{1} << (i / 4 % kCpus) : ~uint64_t{0};
    put(s, s.procs[i], i % kCpus);
  }
  const LockCounts before = lock_counts(LockStat::run_queue);
  std::vector<std::thread> threads;
  for (unsigned cpu = 0; cpu < kCpus; ++cpu)
    threads.emplace_back([&s, cpu] {
      test::act_as_cpu(cpu + 1);
      unsigned next_cpu = cpu;
      for (unsigned done = 0; done < kRunsPerCpu;) {
        Process* p = take(s, cpu);
        if (!p) {
          std::this_thread::yield();
          continue;
        }
        const unsigned i = index_of(s, p);
        const int was = s.owner[i].exchange(static_cast<int>(cpu));
        EXPECT_EQ(was, -1) << "pid " << p->pid << " taken while thread " << was << " ran it";
        if (!(p->affinity >> cpu & 1)) s.pinned_elsewhere.fetch_add(1);
        s.runs.fetch_add(1);
        ++done;
        s.owner[i].store(-1);
        // Back on a queue it may run on: round-robin over the CPUs, so
        // work keeps moving between queues.
        next_cpu = (next_cpu + 1) % kCpus;
        const unsigned to = (p->affinity >> next_cpu & 1) ? next_cpu : static_cast<unsigned>(__builtin_ctzll(p->affinity));
        put(s, *p, to);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(s.runs.load(), uint64_t{kCpus} * kRunsPerCpu);
  EXPECT_EQ(s.pinned_elsewhere.load(), 0u);
  // Every process is queued again exactly once at the end.
  unsigned queued = 0;
  for (RunQueue& q : s.queues) queued += q.size();
  EXPECT_EQ(queued, kProcs);
  for (RunQueue& q : s.queues) {
    q.lock();
    while (Process* p = q.take_first(~uint64_t{0})) EXPECT_EQ(p->rq_cpu, Process::kNoCpu);
    q.unlock();
  }
  const LockCounts after = lock_counts(LockStat::run_queue);
  EXPECT_GE(after.acquired - before.acquired, 2 * uint64_t{kCpus} * kRunsPerCpu);
}

TEST(RunQueueThreads, TakeFirstSkipsWhatMayNotRunHereAndKeepsTheOrder) {
  RunQueue q;
  Process a, b, c;
  a.affinity = 0b10, b.affinity = 0b01, c.affinity = 0b11;
  q.lock();
  q.push(a, 0), q.push(b, 0), q.push(c, 0);
  EXPECT_EQ(q.take_first(0b01), &b);  // a may not run on CPU 0
  EXPECT_EQ(q.take_first(0b01), &c);
  EXPECT_EQ(q.take_first(0b01), nullptr);
  EXPECT_TRUE(q.remove(a));
  EXPECT_FALSE(q.remove(a));
  EXPECT_EQ(q.size(), 0u);
  q.unlock();
}

}  // namespace
}  // namespace pvk::proc
