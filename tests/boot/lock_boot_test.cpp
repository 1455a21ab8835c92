// Lock statistics at --smp 2 (virtual time, so every count repeats): the
// calls that change one address space run under its lock alone. A thread
// mprotects, munmaps or faults while another thread of its process runs
// on the other CPU, and the benchmark's record must show none of those
// operations, nor the other thread's sched_yield, nor a tick from user
// mode, taking the kernel lock; nor do the futex calls of a ring of
// threads passing a token. The shutdown `locks` record names every
// class, and its counts add up with the records'.
#include <set>

#include "boot_support.hpp"

namespace pvk::boot_test {
namespace {

struct LockCase {
  Platform platform;
  std::string params;
};

void PrintTo(const LockCase& c, std::ostream* out) { *out << platform_name(c.platform) << " " << c.params; }

class Locks : public ::testing::TestWithParam<LockCase> {};

RunResult boot_locks(const LockCase& c, const std::string& bench, unsigned smp = 2) {
  RunOptions options;
  options.icount = "shift=0,sleep=off";
  options.platform = c.platform;
  options.kernel = PVK_KERNEL_PATH;
  options.params = c.params + " bench=" + bench;
  options.xen_cache_dir = PVK_XEN_CACHE_DIR;
  options.smp = smp;
  RunResult r = run_kernel(options);
  EXPECT_TRUE(no_frame_leak(r)) << transcript(r);
  return r;
}

// The last record of benchmark `bench` (with `threads` workers besides the
// main thread, where given), or null.
const json* bench_record(const RunResult& r, const std::string& bench, int threads = -1) {
  const json* found = nullptr;
  for (const json& rec : r.records)
    if (rec.value("bench", "") == bench && (threads < 0 || rec.value("threads", 0) == threads)) found = &rec;
  return found;
}

// bench_record that must be there with at least `min_ops` ops: `out` is the
// record, the failure says which of the two was missing.
::testing::AssertionResult ran_bench(const RunResult& r, const std::string& bench, uint64_t min_ops,
                                     const json*& out, int threads = -1) {
  out = bench_record(r, bench, threads);
  if (!out) return ::testing::AssertionFailure() << "no " << bench << " record" << transcript(r);
  if (out->value("ops", uint64_t{0}) < min_ops)
    return ::testing::AssertionFailure() << bench << ": fewer than " << min_ops << " ops\n" << out->dump();
  return ::testing::AssertionSuccess();
}

// Interrupts from user mode a record counts that are not flush IPIs: the
// ticks (shown beside a failed count: they take the kernel lock only for a
// due timed sleep or a deliverable signal).
uint64_t ticks_of(const json& rec) {
  return rec.value("interrupt_entries", uint64_t{0}) - rec.value("ipis_taken", uint64_t{0});
}

// Calls check(bench, record) for each benchmark record that carries lock
// counts; returns how many there were.
template <class Check>
unsigned for_each_bench_record(const RunResult& r, Check check) {
  unsigned seen = 0;
  for (const json& rec : r.records) {
    const std::string bench = rec.value("bench", "");
    if (bench.empty() || !rec.contains("lock_kernel_acquired")) continue;
    ++seen;
    check(bench, rec);
  }
  return seen;
}

TEST_P(Locks, MmCallsAndFaultsTakeNoKernelLock) {
  const RunResult r = boot_locks(GetParam(),
                                 "mprotect_threads:pages=4:threads=1:loops=200:reps=1,"
                                 "munmap_threads:pages=4:threads=1:loops=200:reps=1,"
                                 "fault_threads:pages=256:threads=1:reps=1");
  ASSERT_TRUE(r.pass) << transcript(r);
  const unsigned seen = for_each_bench_record(r, [&](const std::string& bench, const json& rec) {
    const uint64_t ops = rec.value("ops", uint64_t{0});
    const uint64_t kernel = rec.value("lock_kernel_acquired", uint64_t{~0ull});
    const uint64_t space = rec.value("lock_address_space_acquired", uint64_t{0});
    ASSERT_GE(ops, 200u) << rec.dump();
    // The mm calls per op: mprotect_threads two mprotects, munmap_threads
    // an mmap and a munmap (and a fault per page), fault_threads none (a
    // fault per op).
    const uint64_t calls = bench == "fault_threads" ? 0 : 2;
    const uint64_t faults = rec.value("page_faults", uint64_t{0});
    EXPECT_GE(faults + calls * ops, ops) << rec.dump();
    // Nor does the crew's sched_yield (the run queues have locks of their
    // own), nor an idle CPU's search for work, nor a tick from user mode:
    // what may still take the kernel lock is the benchmark's own few locked
    // calls around its loop (4 at most today, whatever the ticks: under Xen
    // with shootdown=hypercall a record spans about 100). Under the kernel
    // lock each mm call, fault, yield and tick would have added one per op.
    EXPECT_LE(kernel, 8u) << bench << ": mm calls, faults, yields or ticks (" << ticks_of(rec)
                          << ") took the kernel lock\n"
                          << rec.dump();
    EXPECT_GE(space, ops) << bench << ": each op takes its space's lock\n" << rec.dump();
    // Under Xen's hypercall shootdown, one MMUEXT_*_MULTI per shootdown
    // whatever its pages (4 here): each op is a round of Xen's flush IPIs.
    if (GetParam().params.find("shootdown=hypercall") != std::string::npos)
      EXPECT_LE(rec.value("tlb_flush_multi", uint64_t{~0ull}), rec.value("shootdowns", uint64_t{0}))
          << bench << ": a shootdown sent more than one flush op\n" << rec.dump();
  });
  EXPECT_EQ(seen, 3u) << transcript(r);
  // The shutdown records: one per class, and the space lock's total covers
  // what the benchmarks counted.
  std::set<std::string> classes;
  for (const json& rec : r.records)
    if (rec.value("event", "") == "locks") {
      classes.insert(rec.value("class", ""));
      EXPECT_LE(rec.value("contended", uint64_t{0}), rec.value("acquired", uint64_t{0})) << rec.dump();
      // The crews' yields (crew_sync) took the run queues' own locks. Within
      // a timed loop on one CPU the crew need not run at all: nothing there
      // yields, and a tick takes the CPU only from a thread that has run
      // for a while.
      if (rec.value("class", "") == "run_queue") EXPECT_GT(rec.value("acquired", uint64_t{0}), 0u) << rec.dump();
    }
  for (const char* c :
       {"kernel", "run_queue", "address_space", "file_pages", "file_maps", "frames", "futex", "pipe", "fd_table"})
    EXPECT_TRUE(classes.count(c)) << "no locks record for " << c << "\n" << transcript(r);
}

// A token passed round a futex ring of two threads on two CPUs
// (ctx_threads): per hop a FUTEX_WAKE, mostly a FUTEX_WAIT that sleeps,
// and a wake-up that queues the sleeper on the other CPU. The futex calls run
// without the kernel lock (their hash buckets' locks and the wake-up
// protocol of kernel/proc/wake.h); under it they took it three times per
// hop. What may still take it: the benchmark's own few locked calls around
// its loop.
TEST_P(Locks, FutexRingTakesNoKernelLock) {
  const RunResult r = boot_locks(GetParam(), "ctx_threads:threads=1:iters=500:reps=1");
  ASSERT_TRUE(r.pass) << transcript(r);
  const json* found = nullptr;
  ASSERT_TRUE(ran_bench(r, "ctx_threads", 1000, found, 1));
  const json& m = *found;
  const uint64_t ops = m.value("ops", uint64_t{0});
  EXPECT_LE(m.value("lock_kernel_acquired", uint64_t{~0ull}), 8u)
      << "futex calls, their wake-ups or ticks (" << ticks_of(m) << ") took the kernel lock\n" << m.dump();
  // Each hop's wake takes the word's bucket lock, and so does each wait
  // that sleeps; a wait that finds its word already set (the other CPU
  // passed the token first: how often depends on how the two vCPUs
  // interleave, which any change in a call's length moves) makes no call.
  EXPECT_GE(m.value("lock_futex_acquired", uint64_t{0}), ops) << m.dump();
}

// lat_pipe between two processes on two CPUs: per round trip two writes
// and two reads of one byte, and two sleeps and wake-ups. They run without
// the kernel lock: the descriptor under its table's lock, the bytes and
// the wait queues under the pipe's (kernel/proc/pipe.h). Under the kernel
// lock each of the four calls took it (and each sleep passed it on). What
// may still take it: the benchmark's own few locked calls around its loop.
TEST_P(Locks, PipeRoundTripTakesNoKernelLock) {
  const RunResult r = boot_locks(GetParam(), "lat_pipe:iters=500:reps=1");
  ASSERT_TRUE(r.pass) << transcript(r);
  const json* found = nullptr;
  ASSERT_TRUE(ran_bench(r, "lat_pipe", 500, found));
  const json& m = *found;
  const uint64_t ops = m.value("ops", uint64_t{0});
  EXPECT_LE(m.value("lock_kernel_acquired", uint64_t{~0ull}), 8u)
      << "pipe reads, writes, their wake-ups or ticks (" << ticks_of(m) << ") took the kernel lock\n" << m.dump();
  // Each read and write takes its pipe's lock (a sleeper again on waking)
  // and its table's lock for the lookup.
  EXPECT_GE(m.value("lock_pipe_acquired", uint64_t{0}), 4 * ops) << m.dump();
  EXPECT_GE(m.value("lock_fd_table_acquired", uint64_t{0}), 4 * ops) << m.dump();
}

// Two processes mmapping, touching and munmapping on two CPUs share no
// lock: each CPU's frames come from and go back to its own magazine
// (base/frames/frame_magazines.cpp), so the frames lock is taken only to
// refill or drain a batch (without magazines: twice per page, 6,400 times
// here) and never waited for.
TEST_P(Locks, TwoProcessesChurningShareNoFramesLock) {
  const RunResult r = boot_locks(GetParam(), "mmap_churn:mode=procs:threads=1:reps=1");
  ASSERT_TRUE(r.pass) << transcript(r);
  const json* found = nullptr;
  ASSERT_TRUE(ran_bench(r, "mmap_churn", 200, found));
  const json& m = *found;
  const uint64_t ops = m.value("ops", uint64_t{0});
  EXPECT_EQ(m.value("lock_frames_contended", uint64_t{~0ull}), 0u) << m.dump();
  EXPECT_EQ(m.value("lock_address_space_contended", uint64_t{~0ull}), 0u) << m.dump();
  // A cycle frees its 16 pages and the next takes them back: a refill now
  // and then, far from one acquisition per frame.
  EXPECT_LE(m.value("lock_frames_acquired", uint64_t{~0ull}), ops / 4) << m.dump();
}

// One CPU: a lock is an inline owner mark and a count (base/lib/spinlock.h),
// and the frames go to and from the bitmap directly. Each fresh page's
// fault still counts its address-space lock and its frames lock once, and
// nothing is ever contended or waited for; a one-CPU lock that stopped
// counting, or took a ticket path that found itself waiting, fails here.
TEST_P(Locks, OneCpuLocksAreCountedMarks) {
  const RunResult r = boot_locks(GetParam(), "fault_write:pages=256:reps=1,forkwait:reps=1", /*smp=*/1);
  ASSERT_TRUE(r.pass) << transcript(r);
  const unsigned seen = for_each_bench_record(r, [&](const std::string& bench, const json& rec) {
    const uint64_t ops = rec.value("ops", uint64_t{0});
    ASSERT_GT(ops, 0u) << rec.dump();
    for (const char* c : {"kernel", "run_queue", "address_space", "spaces", "file_pages", "file_maps", "frames", "futex"}) {
      const std::string k = std::string("lock_") + c;
      EXPECT_EQ(rec.value(k + "_contended", uint64_t{~0ull}), 0u) << bench << " " << c << "\n" << rec.dump();
      EXPECT_EQ(rec.value(k + "_spins", uint64_t{~0ull}), 0u) << bench << " " << c << "\n" << rec.dump();
    }
    if (bench == "fault_write") {
      // A fault per page (and one of the benchmark's own), each under its
      // space's lock once.
      const uint64_t faults = rec.value("page_faults", uint64_t{0});
      EXPECT_GE(faults, ops) << rec.dump();
      EXPECT_LE(faults, ops + 8) << rec.dump();
      EXPECT_EQ(rec.value("lock_address_space_acquired", uint64_t{0}), faults) << rec.dump();
      EXPECT_GE(rec.value("lock_frames_acquired", uint64_t{0}), ops) << rec.dump();
      EXPECT_LE(rec.value("lock_frames_acquired", uint64_t{~0ull}), ops + 16) << rec.dump();
    } else {
      // fork and exit each take the kernel lock (and the run queue's at
      // each switch): counted on one CPU as on several.
      EXPECT_GE(rec.value("lock_kernel_acquired", uint64_t{0}), ops) << rec.dump();
      EXPECT_GE(rec.value("lock_run_queue_acquired", uint64_t{0}), ops) << rec.dump();
      EXPECT_GE(rec.value("lock_frames_acquired", uint64_t{0}), ops) << rec.dump();
    }
  });
  EXPECT_EQ(seen, 2u) << transcript(r);
}

// With ptshare=on a space's lock does not cover its L1 tables (a fork's
// sibling writes them too): mm calls keep the kernel lock, once per call.
TEST_P(Locks, SharedPageTablesKeepTheKernelLock) {
  LockCase c = GetParam();
  c.params += " ptshare=on";
  const RunResult r = boot_locks(c, "mprotect_threads:pages=4:threads=0:loops=100:reps=1");
  ASSERT_TRUE(r.pass) << transcript(r);
  const json* found = bench_record(r, "mprotect_threads");
  ASSERT_NE(found, nullptr) << transcript(r);
  const json& m = *found;
  EXPECT_GE(m.value("lock_kernel_acquired", uint64_t{0}), 2 * m.value("ops", uint64_t{~0ull})) << m.dump();
}

}  // namespace

// unhook and auto keep their unhooked tables per CPU (a section's own):
// their mm calls and faults take no kernel lock either.
class LocksTableBackends : public Locks {};
TEST_P(LocksTableBackends, MmCallsAndFaultsTakeNoKernelLock) {
  const RunResult r = boot_locks(GetParam(),
                                 "mprotect_threads:pages=64:threads=1:loops=200:reps=1,"
                                 "fault_threads:pages=256:threads=1:reps=1");
  ASSERT_TRUE(r.pass) << transcript(r);
  const unsigned seen = for_each_bench_record(r, [&](const std::string&, const json& rec) {
    const uint64_t ops = rec.value("ops", uint64_t{0});
    ASSERT_GE(ops, 200u) << rec.dump();
    // The benchmark's own few locked calls; no tick from user mode (see above).
    EXPECT_LE(rec.value("lock_kernel_acquired", uint64_t{~0ull}), 8u) << "ticks " << ticks_of(rec) << "\n"
                                                                       << rec.dump();
  });
  EXPECT_EQ(seen, 2u) << transcript(r);
  // mprotect of 64 pages unhooks (unhook always, auto above its calibrated
  // break-even): the tables were really taken out while the other CPU ran.
  bool unhooked = false;
  for (const json& rec : r.records)
    if (rec.value("bench", "") == "mprotect_threads") unhooked = rec.value("unhooks", uint64_t{0}) > 0;
  EXPECT_TRUE(unhooked || GetParam().params.find("auto") != std::string::npos) << transcript(r);
}

INSTANTIATE_TEST_SUITE_P(Locks, LocksTableBackends,
                         ::testing::Values(LockCase{Platform::xen, "mmu=unhook"}, LockCase{Platform::xen, "mmu=auto"}),
                         [](const ::testing::TestParamInfo<LockCase>& i) {
                           return std::string(i.param.params.find("auto") != std::string::npos ? "auto" : "unhook");
                         });

INSTANTIATE_TEST_SUITE_P(Locks, Locks,
                         ::testing::Values(LockCase{Platform::native, "mmu=native"},
                                           LockCase{Platform::xen, "mmu=batched shootdown=hypercall"},
                                           LockCase{Platform::xen, "mmu=batched shootdown=ipi"}),
                         [](const ::testing::TestParamInfo<LockCase>& i) {
                           const std::string& p = i.param.params;
                           return std::string(platform_name(i.param.platform)) +
                                  (p.find("ipi") != std::string::npos         ? "_ipi"
                                   : p.find("hypercall") != std::string::npos ? "_hypercall"
                                                                              : "");
                         });

}  // namespace pvk::boot_test
