// The frame allocator's magazines under real parallelism: host threads,
// each playing a CPU of its own (test::act_as_cpu), allocate and free at
// once, passing some frames to each other so a frame is often freed on
// another CPU than the one that took it, and running the pool dry so
// refills drain the others' magazines. No frame is handed out to two
// holders, no free of a held frame is refused, and the free count is exact
// at the end. Built with ThreadSanitizer from the allocator's own sources
// (pvk_tsan_host_tests, tests/host/CMakeLists.txt), so a data race between
// a magazine's owner and a CPU draining it fails the test too.
#include "host_compat.h"

#include <atomic>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "base/frames/frame_allocator.h"
#include "cross_cpu_host.h"

namespace pvk {
namespace {

TEST(FrameMagazinesThreads, CpusAllocatingAndFreeingAtOnceLoseNothing) {
  // Few threads and rounds: a lock waiter spins without yielding, so on a
  // busy host a waiter may spin away the time slice its holder needs.
  constexpr unsigned kThreads = 3;
  constexpr uint64_t kFrames = 256;  // fewer than the threads may want at once
  constexpr unsigned kRounds = 300;
  std::vector<uint64_t> storage(FrameAllocator::storage_words_for(kFrames));
  static FrameAllocator fa;  // (its magazines: too big for a thread's stack)
  fa.init(storage.data(), kFrames);
  ASSERT_FALSE(fa.add_free_range(Pfn{0}, kFrames).is_error());

  std::vector<std::atomic<int>> holders(kFrames);
  std::atomic<uint64_t> twice{0}, refused{0}, empty{0};
  std::mutex passed_lock;
  std::vector<Pfn> passed;  // frames one CPU took and another frees
  std::atomic<unsigned> ready{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      test::act_as_cpu(t + 1);
      std::mt19937 rng(t);
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      std::vector<Pfn> held;
      auto give_back = [&](Pfn p) {
        holders[raw(p)].fetch_sub(1);
        if (fa.try_free(p).is_error()) ++refused;
      };
      for (unsigned round = 0; round < kRounds; ++round) {
        const unsigned want = 1 + rng() % 120;
        while (held.size() < want) {
          auto f = fa.try_alloc();
          if (f.is_error()) {
            ++empty;
            break;
          }
          if (holders[raw(f.value())].fetch_add(1) != 0) ++twice;
          held.push_back(f.value());
        }
        // A few to another CPU, the rest back from this one; take what
        // others passed on.
        std::vector<Pfn> theirs;
        {
          std::lock_guard<std::mutex> g(passed_lock);
          theirs.swap(passed);
          for (unsigned i = 0; i < 3 && !held.empty(); ++i) {
            passed.push_back(held.back());
            held.pop_back();
          }
        }
        for (Pfn p : theirs) give_back(p);
        const size_t keep = rng() % 8;
        while (held.size() > keep) {
          give_back(held.back());
          held.pop_back();
        }
      }
      for (Pfn p : held) give_back(p);
    });
  for (auto& th : threads) th.join();
  for (Pfn p : passed) {
    holders[raw(p)].fetch_sub(1);
    if (fa.try_free(p).is_error()) ++refused;
  }
  EXPECT_EQ(twice.load(), 0u) << "a frame handed out while another CPU held it";
  EXPECT_EQ(refused.load(), 0u) << "a free of a held frame refused";
  EXPECT_GT(empty.load(), 0u) << "the pool never ran dry: the steal path was not exercised";
  EXPECT_EQ(fa.free_count(), kFrames);
  for (uint64_t p = 0; p < kFrames; ++p) EXPECT_TRUE(fa.is_free(Pfn{p})) << p;
  fa.drain_magazines();
  EXPECT_EQ(fa.free_count(), kFrames);
}

}  // namespace
}  // namespace pvk
