// affinity: sched_setaffinity, sched_getaffinity and getcpu, as Linux has
// them (the same checks run on the build host with --host).
//  - the caller's mask holds the CPU it runs on; pinned to each CPU of it
//    in turn, the caller is on that CPU when the call returns (getcpu),
//    and so are a child it forks and a thread it starts (both inherit it);
//  - refused: a mask with none of the CPUs that run processes (EINVAL), a
//    get into less than a word (EINVAL), a thread that does not exist
//    (ESRCH), bad pointers (EFAULT); the mask is unchanged after each.
#include "bench/libc/thread.h"
#include "harness.h"

namespace proctest {
namespace {

constexpr uint64_t kKernelAddr = 0xffff888000000000ull;
constexpr unsigned kMaxPinned = 4;  // CPUs tried in turn (a longer list costs boot time, proves nothing more)

int64_t cpu_now() {
  uint32_t cpu = 0;
  const int64_t r = getcpu(&cpu, nullptr);
  return r == 0 ? static_cast<int64_t>(cpu) : r;
}

uint64_t mask_now() {
  uint64_t words[16] = {};  // Linux may report a mask wider than one word
  const int64_t r = sched_getaffinity(0, sizeof words, words);
  CHECK(r >= 8 && r % 8 == 0);
  return words[0];
}

volatile int64_t g_thread_cpu = -2;
volatile uint64_t g_thread_mask = 0;

void report_cpu(void*) {
  g_thread_cpu = cpu_now();
  g_thread_mask = mask_now();
}

}  // namespace

void test_affinity() {
  const uint64_t all = mask_now();
  CHECK(all != 0);
  const int64_t first_cpu = cpu_now();
  CHECK(first_cpu >= 0 && first_cpu < 64);
  if (first_cpu >= 0 && first_cpu < 64) CHECK(all >> first_cpu & 1);
  detail("cpus", __builtin_popcountll(all));

  unsigned pinned = 0;
  uint64_t last = all;
  for (unsigned c = 0; c < 64 && pinned < kMaxPinned; ++c) {
    if (!(all >> c & 1)) continue;
    ++pinned;
    const uint64_t one = uint64_t{1} << c;
    last = one;
    CHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    CHECK_EQ(cpu_now(), static_cast<int64_t>(c));
    CHECK_EQ(mask_now(), one);
    const int64_t pid = fork_helper();
    if (pid == 0) {
      CHECK_EQ(mask_now(), one);
      CHECK_EQ(cpu_now(), static_cast<int64_t>(c));
      helper_exit();
    }
    CHECK(pid > 0);
    if (pid > 0) CHECK_HELPER_OK(pid);
    g_thread_cpu = -2;
    Thread t{};
    CHECK(thread_create(&t, report_cpu, nullptr) > 0);
    CHECK_EQ(thread_join(&t), 0);
    CHECK_EQ(g_thread_cpu, static_cast<int64_t>(c));
    CHECK_EQ(g_thread_mask, one);
  }
  detail("pinned", pinned);

  // Refusals, each leaving the mask as it was.
  const uint64_t none = 0;
  CHECK_EQ(sched_setaffinity(0, sizeof none, &none), -EINVAL);
  if (all != ~uint64_t{0}) {
    const uint64_t offline = ~all;
    CHECK_EQ(sched_setaffinity(0, sizeof offline, &offline), -EINVAL);
  }
  uint64_t word = 0;
  CHECK_EQ(sched_getaffinity(0, 4, &word), -EINVAL);
  CHECK_EQ(sched_getaffinity(0, 12, &word), -EINVAL);
  CHECK_EQ(sched_setaffinity(0x7ffffff0, sizeof all, &all), -ESRCH);
  CHECK_EQ(sched_getaffinity(0x7ffffff0, sizeof word, &word), -ESRCH);
  CHECK_EQ(sched_setaffinity(0, sizeof all, reinterpret_cast<const uint64_t*>(kKernelAddr)), -EFAULT);
  CHECK_EQ(sched_setaffinity(0, sizeof all, nullptr), -EFAULT);
  CHECK_EQ(sched_getaffinity(0, sizeof word, reinterpret_cast<uint64_t*>(kKernelAddr)), -EFAULT);
  CHECK_EQ(getcpu(reinterpret_cast<uint32_t*>(kKernelAddr), nullptr), -EFAULT);
  CHECK_EQ(getcpu(nullptr, reinterpret_cast<uint32_t*>(kKernelAddr)), -EFAULT);
  CHECK_EQ(getcpu(nullptr, nullptr), 0);
  CHECK_EQ(mask_now(), last);

  CHECK_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  CHECK_EQ(mask_now(), all);
}

}  // namespace proctest
