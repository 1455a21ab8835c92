// threads_*: clone'd threads, futex, per-thread FS base, thread exit and
// exit_group, fork and faults in a thread, hostile thread arguments.
#include "bench/libc/thread.h"
#include "harness.h"

namespace proctest {
namespace {

constexpr uint64_t kKernelAddr = 0xffff800000000000ull;
constexpr uint64_t kNonCanonical = 0x0000800000000000ull;

// Busy for about ms milliseconds, yielding (there is no nanosleep).
void pause_ms(uint64_t ms) {
  const uint64_t t0 = now_ns();
  while (now_ns() - t0 < ms * 1000000) sched_yield();
}

// --- threads_shared --------------------------------------------------------

constexpr unsigned kThreads = 4;
constexpr unsigned kWordsPerThread = 512;
constexpr unsigned kIncrements = 200;

struct SharedWork {
  uint64_t* region;  // kThreads * kWordsPerThread words, one slice per thread
  Mutex lock;
  volatile uint64_t counter;
  volatile int64_t tid[kThreads];
  volatile int64_t pid_seen[kThreads];
  volatile uint64_t fs_self_ok[kThreads];
};
SharedWork g_work;

struct WorkerArg {
  unsigned index;
};
WorkerArg g_args[kThreads];

void worker(void* p) {
  const unsigned i = static_cast<WorkerArg*>(p)->index;
  ThreadSelf* self = thread_self();
  // %fs:0 is this thread's own block (CLONE_SETTLS), holding its own arg.
  g_work.fs_self_ok[i] = self->self == self && self->arg == p;
  g_work.tid[i] = gettid();
  g_work.pid_seen[i] = getpid();
  for (unsigned w = 0; w < kWordsPerThread; ++w) {
    g_work.region[i * kWordsPerThread + w] = pattern(i + 1, w);
    if (w % 64 == 0) sched_yield();
  }
  for (unsigned n = 0; n < kIncrements; ++n) {
    mutex_lock(&g_work.lock);
    const uint64_t v = g_work.counter;
    if (n % 16 == 0) sched_yield();  // hold the lock across a switch: others must wait on the futex
    g_work.counter = v + 1;
    mutex_unlock(&g_work.lock);
  }
  // A switch to another thread and back keeps this thread's FS base.
  sched_yield();
  g_work.fs_self_ok[i] = g_work.fs_self_ok[i] && thread_self() == self;
}

}  // namespace

// K threads write their slices of one region and bump a mutex-guarded
// counter; after joining them the main thread sees every write and every
// increment. Each saw the process' pid, its own tid and its own TLS.
void test_threads_shared() {
  g_work.region = static_cast<uint64_t*>(map_anon(kThreads * kWordsPerThread * 8));
  CHECK(g_work.region != nullptr);
  if (!g_work.region) return;
  Thread threads[kThreads];
  for (unsigned i = 0; i < kThreads; ++i) {
    g_args[i].index = i;
    const int64_t tid = thread_create(&threads[i], worker, &g_args[i]);
    CHECK(tid > 0);
    CHECK_EQ(threads[i].tid == tid || threads[i].tid == 0, true);  // CLONE_PARENT_SETTID (or already exited)
  }
  for (unsigned i = 0; i < kThreads; ++i) {
    CHECK_EQ(thread_join(&threads[i]), 0);
    CHECK_EQ(threads[i].tid, 0);  // CLONE_CHILD_CLEARTID
  }
  const int64_t pid = getpid();
  CHECK_EQ(gettid(), pid);  // the main thread's id is the process'
  unsigned bad_words = 0;
  for (unsigned i = 0; i < kThreads; ++i) {
    CHECK_EQ(g_work.pid_seen[i], pid);
    CHECK(g_work.tid[i] > 0 && g_work.tid[i] != pid);
    for (unsigned j = 0; j < i; ++j) CHECK(g_work.tid[i] != g_work.tid[j]);
    CHECK_EQ(g_work.fs_self_ok[i], 1);
    for (unsigned w = 0; w < kWordsPerThread; ++w)
      if (g_work.region[i * kWordsPerThread + w] != pattern(i + 1, w)) ++bad_words;
  }
  CHECK_EQ(bad_words, 0);
  CHECK_EQ(g_work.counter, kThreads * kIncrements);
  detail("threads", kThreads);
  detail("counter", static_cast<int64_t>(g_work.counter));
}

// --- threads_futex ---------------------------------------------------------

namespace {

struct FutexWaiters {
  volatile uint32_t word;
  volatile uint32_t ready;
  volatile int64_t result[3];
};
FutexWaiters g_fw;

struct WaiterArg {
  unsigned index;
};
WaiterArg g_waiter_args[3];

void futex_waiter(void* p) {
  const unsigned i = static_cast<WaiterArg*>(p)->index;
  __atomic_add_fetch(&g_fw.ready, 1u, __ATOMIC_SEQ_CST);
  g_fw.result[i] = futex(&g_fw.word, FUTEX_WAIT, 0);
}

// The _BITSET forms take a sixth argument, the bitset.
int64_t futex_bitset(volatile uint32_t* uaddr, uint64_t op, uint32_t val, const Timespec* timeout, uint32_t bitset) {
  return syscall6(SYS_futex, u(uaddr), op, val, u(timeout), 0, bitset);
}

// A CLOCK_MONOTONIC time ns from now, as FUTEX_WAIT_BITSET's absolute timeout.
Timespec monotonic_in(uint64_t ns) {
  const uint64_t at = now_ns() + ns;
  return Timespec{static_cast<int64_t>(at / 1000000000), static_cast<int64_t>(at % 1000000000)};
}

// FUTEX_WAIT_BITSET and FUTEX_WAKE_BITSET as glibc's threads use them
// (pthread_join waits with FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME).
void check_futex_bitsets() {
  volatile uint32_t word = 5;
  constexpr uint32_t kAny = FUTEX_BITSET_MATCH_ANY;
  CHECK_EQ(futex_bitset(&word, FUTEX_WAIT_BITSET, 4, nullptr, kAny), -EAGAIN);
  CHECK_EQ(futex_bitset(&word, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, 4, nullptr, kAny), -EAGAIN);
  CHECK_EQ(futex_bitset(&word, FUTEX_WAIT_BITSET, 5, nullptr, 0), -EINVAL);  // an empty bitset
  CHECK_EQ(futex_bitset(&word, FUTEX_WAKE_BITSET, 1, nullptr, 0), -EINVAL);
  CHECK_EQ(futex_bitset(&word, FUTEX_WAKE_BITSET, 1, nullptr, kAny), 0);     // nobody waits
  // FUTEX_CLOCK_REALTIME belongs to the absolute-timeout calls only.
  CHECK_EQ(futex(&word, FUTEX_WAIT | FUTEX_CLOCK_REALTIME, 5), -ENOSYS);
  CHECK_EQ(futex(&word, FUTEX_WAKE | FUTEX_CLOCK_REALTIME, 1), -ENOSYS);
  // The timeout is an absolute CLOCK_MONOTONIC time: one already past
  // expires at once, one 20 ms ahead after at least 20 ms.
  const Timespec past{0, 1};
  CHECK_EQ(futex_bitset(&word, FUTEX_WAIT_BITSET, 5, &past, kAny), -ETIMEDOUT);
  const uint64_t t0 = now_ns();
  const Timespec soon = monotonic_in(20 * 1000 * 1000);
  CHECK_EQ(futex_bitset(&word, FUTEX_WAIT_BITSET, 5, &soon, kAny), -ETIMEDOUT);
  CHECK(now_ns() - t0 >= 20 * 1000 * 1000);
  const Timespec bad{0, 1000 * 1000 * 1000};
  CHECK_EQ(futex_bitset(&word, FUTEX_WAIT_BITSET, 5, &bad, kAny), -EINVAL);
}

}  // namespace

// FUTEX_WAIT's refusals (EAGAIN, EFAULT, EINVAL), unknown operations
// (ENOSYS), a timeout, FUTEX_WAKE's counts with three sleepers, and the
// _BITSET forms.
void test_threads_futex() {
  check_futex_bitsets();
  volatile uint32_t word = 5;
  CHECK_EQ(futex(&word, FUTEX_WAIT, 4), -EAGAIN);
  CHECK_EQ(futex(&word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 4), -EAGAIN);
  auto* unaligned = reinterpret_cast<volatile uint32_t*>(reinterpret_cast<uintptr_t>(&word) + 1);
  CHECK_EQ(futex(unaligned, FUTEX_WAIT, 5), -EINVAL);
  CHECK_EQ(futex(unaligned, FUTEX_WAKE, 1), -EINVAL);
  // Not readable user memory: a page unmapped again, and a kernel address.
  auto* gone = static_cast<uint32_t*>(map_anon(kPage));
  CHECK(gone != nullptr);
  CHECK_EQ(munmap(gone, kPage), 0);
  CHECK_EQ(futex(gone, FUTEX_WAIT, 0), -EFAULT);
  auto* kernel = reinterpret_cast<volatile uint32_t*>(kKernelAddr);
  CHECK_EQ(futex(kernel, FUTEX_WAIT, 0), -EFAULT);
  CHECK_EQ(futex(kernel, FUTEX_WAKE, 1), -EFAULT);
  CHECK_EQ(futex(&word, 99, 0), -ENOSYS);
  CHECK_EQ(futex(&word, FUTEX_WAKE, 1), 0);  // nobody waits
  // A relative timeout: ETIMEDOUT after at least that long; a bad one is EINVAL.
  Timespec ts{0, 20 * 1000 * 1000};
  const uint64_t t0 = now_ns();
  CHECK_EQ(futex(&word, FUTEX_WAIT, 5, &ts), -ETIMEDOUT);
  CHECK(now_ns() - t0 >= 20 * 1000 * 1000);
  Timespec bad{0, 1000 * 1000 * 1000};
  CHECK_EQ(futex(&word, FUTEX_WAIT, 5, &bad), -EINVAL);
  CHECK_EQ(futex(&word, FUTEX_WAIT, 5, reinterpret_cast<const Timespec*>(kKernelAddr)), -EFAULT);

  // Three sleepers: WAKE 2 wakes two, WAKE 5 the last one, WAKE 1 nobody.
  Thread threads[3];
  for (unsigned i = 0; i < 3; ++i) {
    g_waiter_args[i].index = i;
    g_fw.result[i] = 1;
    const int64_t tid = thread_create(&threads[i], futex_waiter, &g_waiter_args[i]);
    CHECK(tid > 0);
    if (tid <= 0) exit_group(1);  // (out of memory under fail=): no sleepers to count
  }
  while (__atomic_load_n(&g_fw.ready, __ATOMIC_SEQ_CST) < 3) sched_yield();
  pause_ms(50);  // from the count to the futex call is a few instructions
  CHECK_EQ(futex(&g_fw.word, FUTEX_WAKE, 2), 2);
  // As on Linux, a private wake does not reach a shared waiter.
  CHECK_EQ(futex(&g_fw.word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 5), 0);
  // A FUTEX_WAIT waiter matches any bitset.
  CHECK_EQ(futex_bitset(&g_fw.word, FUTEX_WAKE_BITSET, 5, nullptr, 0x10), 1);
  CHECK_EQ(futex(&g_fw.word, FUTEX_WAKE, 1), 0);
  for (unsigned i = 0; i < 3; ++i) {
    CHECK_EQ(thread_join(&threads[i]), 0);
    CHECK_EQ(g_fw.result[i], 0);
  }
}

// --- threads_signals -------------------------------------------------------

namespace {

volatile int64_t g_handler_tid;
volatile int g_handler_sig;
volatile uint32_t g_block_word;
volatile int64_t g_block_result;
volatile int64_t g_blocker_tid;

void record_handler(int sig) {
  g_handler_tid = gettid();
  g_handler_sig = sig;
}

// The first run (in the main thread) sends SIGUSR1 to the process again
// while the main thread blocks it (as every handler blocks its signal):
// the signal must go to the other thread. The main thread stays in the
// handler until it has (on Linux the signal is pending for the whole
// process, and the main thread could take it itself once unblocked).
volatile int g_nested;
volatile int64_t g_outer_tid, g_inner_tid;
void nested_handler(int) {
  if (g_nested++ == 0) {
    g_outer_tid = gettid();
    kill(getpid(), SIGUSR1);
    const uint64_t t0 = now_ns();
    while (!g_inner_tid && now_ns() - t0 < 30000000000ull) sched_yield();  // a hang guard
  } else {
    g_inner_tid = gettid();
  }
}

void futex_blocker(void*) {
  g_blocker_tid = gettid();
  g_block_result = futex(&g_block_word, FUTEX_WAIT, 0);
}

struct SegvThread {
  JmpBuf jmp;
  volatile int64_t tid;
  volatile int escaped;
};
SegvThread g_segv;

void segv_handler(int sig) {
  g_handler_tid = gettid();
  g_handler_sig = sig;
  pvk_longjmp(&g_segv.jmp, 1);
}

void faulting_thread(void*) {
  g_segv.tid = gettid();
  if (pvk_setjmp(&g_segv.jmp) == 0) {
    poke(0);
    return;
  }
  g_segv.escaped = 1;
}

}  // namespace

// tgkill reaches the named thread: it leaves FUTEX_WAIT with EINTR and
// runs the handler itself. A fault in a thread runs the SIGSEGV handler in
// that thread. kill() reaches the process; tgkill with a wrong group or a
// gone thread is ESRCH.
void test_threads_signals() {
  CHECK_EQ(sigaction(SIGUSR1, record_handler), 0);
  Thread t;
  const int64_t created = thread_create(&t, futex_blocker, nullptr);
  CHECK(created > 0);
  if (created <= 0) return;
  while (!g_blocker_tid) sched_yield();
  pause_ms(30);  // let it reach FUTEX_WAIT
  const int64_t blocker = g_blocker_tid;
  CHECK_EQ(tgkill(getpid(), blocker, SIGUSR1), 0);
  CHECK_EQ(thread_join(&t), 0);
  CHECK_EQ(g_block_result, -EINTR);
  CHECK_EQ(g_handler_tid, blocker);
  CHECK_EQ(g_handler_sig, SIGUSR1);
  CHECK_EQ(tgkill(getpid(), blocker, 0), -ESRCH);  // it has exited
  CHECK_EQ(tgkill(getpid() + 100000, gettid(), 0), -ESRCH);
  CHECK_EQ(tgkill(0, gettid(), 0), -EINVAL);
  CHECK_EQ(tgkill(getpid(), gettid(), 1000), -EINVAL);

  // A process-directed signal, handled by its one remaining thread.
  g_handler_tid = 0;
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);
  CHECK_EQ(g_handler_tid, gettid());

  // ... and by a thread that does not block it when the main thread does.
  CHECK_EQ(sigaction(SIGUSR1, nested_handler), 0);
  g_blocker_tid = 0;
  g_block_result = 1;
  const int64_t second = thread_create(&t, futex_blocker, nullptr);
  CHECK(second > 0);
  if (second <= 0) return;
  while (!g_blocker_tid) sched_yield();
  pause_ms(30);
  CHECK_EQ(kill(getpid(), SIGUSR1), 0);
  CHECK_EQ(thread_join(&t), 0);
  CHECK_EQ(g_nested, 2);
  CHECK_EQ(g_outer_tid, gettid());
  CHECK_EQ(g_inner_tid, second);
  CHECK_EQ(g_block_result, -EINTR);

  // A fault in a thread: that thread's handler.
  CHECK_EQ(sigaction(SIGSEGV, segv_handler, kSaNodefer), 0);
  g_handler_tid = 0;
  CHECK(thread_create(&t, faulting_thread, nullptr) > 0);
  CHECK_EQ(thread_join(&t), 0);
  CHECK_EQ(g_segv.escaped, 1);
  CHECK_EQ(g_handler_sig, SIGSEGV);
  CHECK_EQ(g_handler_tid, g_segv.tid);
  CHECK(g_segv.tid != getpid());
}

// --- threads_exit ----------------------------------------------------------

namespace {

volatile uint32_t g_never;
volatile int g_spinning;

void spinner(void*) {
  __atomic_add_fetch(&g_spinning, 1, __ATOMIC_SEQ_CST);
  for (;;) sched_yield();
}
void sleeper(void*) {
  __atomic_add_fetch(&g_spinning, 1, __ATOMIC_SEQ_CST);
  for (;;) futex(&g_never, FUTEX_WAIT, 0);
}
void group_exiter(void*) {
  while (__atomic_load_n(&g_spinning, __ATOMIC_SEQ_CST) < 2) sched_yield();
  pause_ms(20);
  exit_group(7);
}

void exit_group_helper(void*) {
  Thread a, b, c;
  if (thread_create(&a, spinner, nullptr) <= 0 || thread_create(&b, sleeper, nullptr) <= 0 ||
      thread_create(&c, group_exiter, nullptr) <= 0)
    exit_group(98);
  for (;;) futex(&g_never, FUTEX_WAIT, 0);  // the main thread sleeps too
}

int g_pipe[2];

void outliving_thread(void*) {
  pause_ms(30);  // the leader exits meanwhile
  send_byte(g_pipe[1], 'T');
  thread_exit(5);
}

void leader_exits_helper(void*) {
  Thread t;
  if (thread_create(&t, outliving_thread, nullptr) <= 0) exit_group(99);
  thread_exit(3);  // only the leader: the thread runs on
}

}  // namespace

// exit_group from a thread ends every thread, blocked or running, and the
// parent sees its status. A leader's exit leaves the other threads running;
// the process ends with the last of them and (as Linux does) reports that
// last thread's status.
void test_threads_exit() {
  const int st = wait_status_of(exit_group_helper, nullptr);
  CHECK_EQ(st, wait_exited(7));
  CHECK_EQ(pipe(g_pipe), 0);
  const int64_t pid = fork();
  if (pid == 0) leader_exits_helper(nullptr);
  close(g_pipe[1]);
  CHECK_EQ(recv_byte(g_pipe[0]), 'T');
  CHECK_EQ(WAIT_OR_KILL(pid, 10), wait_exited(5));
  close(g_pipe[0]);
}

// --- threads_fork ----------------------------------------------------------

namespace {

volatile uint64_t g_cow_word = 1234;
volatile int64_t g_fork_child_status;
volatile int64_t g_main_tid;

void forking_thread(void*) {
  const int64_t pid = fork();
  if (pid == 0) {
    // One thread: the caller. The process' other thread is not here.
    bool ok = getpid() == gettid() && tgkill(getpid(), g_main_tid, 0) == -ESRCH;
    g_cow_word = 99;  // its own copy
    ok = ok && g_cow_word == 99;
    exit_group(ok ? 42 : 1);
  }
  int status = 0;
  g_fork_child_status = wait4(pid, &status, 0) == pid ? status : -1;
}

}  // namespace

// fork from a thread: the child has that one thread, its own copy of the
// memory, and is the process' child (wait4 from the thread reaps it).
void test_threads_fork() {
  g_main_tid = gettid();
  Thread t;
  CHECK(thread_create(&t, forking_thread, nullptr) > 0);
  CHECK_EQ(thread_join(&t), 0);
  CHECK_EQ(g_fork_child_status, wait_exited(42));
  CHECK_EQ(g_cow_word, 1234);
}

// --- threads_exec ----------------------------------------------------------

namespace {

constexpr int kExecCode = 61;
int g_exec_pipe[2];
volatile uint64_t g_spins;
volatile int64_t g_enoent;

void counting_spinner(void*) {
  for (;;) {
    g_spins = g_spins + 1;
    sched_yield();
  }
}

void execing_thread(void*) {
  // An unknown program: ENOENT, and the other threads carry on.
  g_enoent = execve("no-such-program", nullptr, nullptr);
  // The other threads carry on: the spinner's count moves (waited for as
  // progress, not for a time a busy host may not give it).
  const uint64_t before = g_spins, t0 = now_ns();
  while (g_spins == before && now_ns() - t0 < 5000000000ull) sched_yield();
  if (g_enoent != -ENOENT || g_spins == before) exit_group(2);
  char fd_arg[16], code_arg[8];
  pvk::format(fd_arg, sizeof fd_arg, "%d", g_exec_pipe[1]);
  pvk::format(code_arg, sizeof code_arg, "%d", kExecCode);
  const char* argv[] = {"cowchild", "alpha", "beta gamma", "0", fd_arg, code_arg, nullptr};
  const char* envp[] = {"PVK_TEST=cowchild", "SECOND=2", nullptr};
  execve("cowchild", argv, envp);
  exit_group(3);  // only if execve failed
}

void exec_from_thread_helper(void*) {
  sigaction(SIGPIPE, SIG_IGN);  // cowchild checks an ignored signal stays ignored
  Thread a, b, c;
  if (thread_create(&a, counting_spinner, nullptr) <= 0 || thread_create(&b, sleeper, nullptr) <= 0 ||
      thread_create(&c, execing_thread, nullptr) <= 0)
    exit_group(98);
  for (;;) futex(&g_never, FUTEX_WAIT, 0);  // the leader sleeps: exec must end it too
}

}  // namespace

// execve from a thread that is not the leader: the other threads (running,
// sleeping, the leader) end, the new image runs as the process with the
// process' pid, and its exit status is the parent's. An unknown program
// first: ENOENT, with the other threads untouched.
void test_threads_exec() {
  CHECK_EQ(pipe(g_exec_pipe), 0);
  const int64_t pid = fork();
  if (pid == 0) {
    close(g_exec_pipe[0]);
    exec_from_thread_helper(nullptr);
  }
  CHECK(pid > 0);
  close(g_exec_pipe[1]);
  char msg[128];
  const int64_t n = pid > 0 ? read_full(g_exec_pipe[0], msg, sizeof msg - 1) : 0;
  msg[n > 0 ? n : 0] = '\0';
  if (n > 0 && msg[n - 1] == '\n') msg[n - 1] = '\0';
  detail_str("cowchild_says", msg);
  char want[64];
  pvk::format(want, sizeof want, "pid=%ld ok", pid);
  CHECK(strcmp(msg, want) == 0);  // the process' pid, and cowchild's checks passed
  if (pid > 0) CHECK_EQ(WAIT_OR_KILL(pid, 10), wait_exited(kExecCode));
  close(g_exec_pipe[0]);
}

// --- threads_hostile -------------------------------------------------------

namespace {
// Its exit's CLONE_CHILD_CLEARTID write goes to a kernel address: refused
// quietly, the thread ends as any other.
void bad_tid_word_thread(void*) { set_tid_address(reinterpret_cast<int32_t*>(kKernelAddr)); }
}  // namespace

// Thread calls with bad arguments fail cleanly; the FS base is checked.
void test_threads_hostile() {
  // Linux's own flag rules.
  CHECK_EQ(clone(CLONE_THREAD, nullptr, nullptr, nullptr, 0), -EINVAL);
  CHECK_EQ(clone(CLONE_SIGHAND, nullptr, nullptr, nullptr, 0), -EINVAL);
  CHECK_EQ(clone(CLONE_THREAD | CLONE_SIGHAND, nullptr, nullptr, nullptr, 0), -EINVAL);
  // A kernel or non-canonical TLS base.
  auto* stack = static_cast<uint8_t*>(map_anon(4 * kPage));
  CHECK(stack != nullptr);
  CHECK_EQ(clone(kCloneThreadFlags, stack + 4 * kPage, nullptr, nullptr, kKernelAddr), -EPERM);
  CHECK_EQ(clone(kCloneThreadFlags, stack + 4 * kPage, nullptr, nullptr, kNonCanonical), -EPERM);
  if (!g_opt.host) {
    // pvk refuses what Linux would start and then kill: a thread on a
    // kernel stack, and one whose tid would go to kernel memory.
    CHECK_EQ(clone(kCloneThreadFlags & ~CLONE_SETTLS, reinterpret_cast<void*>(kKernelAddr), nullptr, nullptr, 0),
             -EINVAL);
    CHECK_EQ(clone(kCloneThreadFlags & ~CLONE_SETTLS, stack + 4 * kPage, reinterpret_cast<int32_t*>(kKernelAddr),
                   nullptr, 0),
             -EFAULT);
    // Flags pvk cannot honour: a shared space outside a thread group.
    CHECK_EQ(clone(CLONE_VM | CLONE_VFORK, nullptr, nullptr, nullptr, 0), -EINVAL);
  }
  munmap(stack, 4 * kPage);
  // arch_prctl: no kernel or non-canonical FS base; GET_FS to a kernel
  // address is EFAULT; unknown codes EINVAL. A good base reads back.
  CHECK_EQ(arch_prctl(ARCH_SET_FS, kKernelAddr), -EPERM);
  CHECK_EQ(arch_prctl(ARCH_SET_FS, kNonCanonical), -EPERM);
  CHECK_EQ(arch_prctl(ARCH_SET_FS, ~uint64_t{0}), -EPERM);
  CHECK_EQ(arch_prctl(ARCH_GET_FS, kKernelAddr), -EFAULT);
  CHECK_EQ(arch_prctl(0x9999, 0), -EINVAL);
  static uint64_t tls_block[4];
  tls_block[0] = reinterpret_cast<uint64_t>(tls_block);
  CHECK_EQ(arch_prctl(ARCH_SET_FS, reinterpret_cast<uint64_t>(tls_block)), 0);
  uint64_t got = 0;
  CHECK_EQ(arch_prctl(ARCH_GET_FS, reinterpret_cast<uint64_t>(&got)), 0);
  CHECK_EQ(got, reinterpret_cast<uint64_t>(tls_block));
  uint64_t via_fs;
  asm volatile("mov %%fs:0, %0" : "=r"(via_fs));
  CHECK_EQ(via_fs, reinterpret_cast<uint64_t>(tls_block));
  CHECK_EQ(set_tid_address(nullptr), gettid());

  Thread t;
  const int64_t tid = thread_create(&t, bad_tid_word_thread, nullptr);
  CHECK(tid > 0);
  if (tid <= 0) return;
  const uint64_t t0 = now_ns();
  while (tgkill(getpid(), tid, 0) == 0 && now_ns() - t0 < 30000000000ull) sched_yield();  // a hang guard
  CHECK_EQ(tgkill(getpid(), tid, 0), -ESRCH);  // it has exited
  CHECK_EQ(t.tid, tid);                        // and its word was never the one cleared
  CHECK_EQ(munmap(t.stack, t.stack_size), 0);
}

// --- threads_churn ---------------------------------------------------------

namespace {
void nothing(void*) {}
}  // namespace

// Many more threads than process slots, created and joined in waves: slots
// and stacks come back, and the free frames return to where they were.
void test_threads_churn() {
  constexpr unsigned kWave = 8, kWaves = 20;
  unsigned created = 0;
  // The first wave also builds the page tables the stacks' range needs,
  // which outlive the stacks: the baseline is taken after it.
  PvkCounters before;
  bool counters = false;
  for (unsigned w = 0; w < kWaves; ++w) {
    if (w == 1) counters = read_counters(&before) == 0;
    Thread t[kWave];
    for (auto& th : t) created += thread_create(&th, nothing, nullptr) > 0;
    for (auto& th : t) CHECK_EQ(thread_join(&th), 0);
  }
  CHECK_EQ(created, kWave * kWaves);
  detail("threads_created", created);
  if (counters) {
    PvkCounters after;
    CHECK_EQ(read_counters(&after), 0);
    detail("free_frames_before", static_cast<int64_t>(before.free_frames));
    detail("free_frames_after", static_cast<int64_t>(after.free_frames));
    CHECK_EQ(after.free_frames, before.free_frames);
  }
}

}  // namespace proctest
