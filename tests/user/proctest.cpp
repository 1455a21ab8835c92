// proctest: the process-model tests, run by pvk as init ("init=proctest").
//
//   proctest [--host] [timeout=SECONDS] [TEST...]
//
// (_fail, _crash and _hang are not run unless named: they check that the
// runner reports a failing, crashing and hanging test.)
// Runs every sub-test (or the named ones) in its own forked child, so a crash
// in one is reported, not fatal; see harness.h for the records. Ends with
//   @pvk {"event":"user_tests","passed":N,"failed":M,"free_frames_start":..,"free_frames_end":..}
// and exits 0 iff every test passed. --host: running on Linux (the build
// host), where pvk's own calls answer -ENOSYS; the suite checks the same
// Linux semantics pvk implements, so it must pass there too.
#include "base/console/record.h"
#include "harness.h"

namespace proctest {

Options g_opt;

const Test kTests[] = {
    {"fork_cow", test_fork_cow},
    {"fork_tree", test_fork_tree},
    {"fork_exec", test_fork_exec},
    {"mprotect_segv", test_mprotect_segv},
    {"sigfpe", test_sigfpe},
    {"unhandled_signals", test_unhandled_signals},
    {"kill_handler", test_kill_handler},
    {"pipes", test_pipes},
    {"pipe_full_writers", test_pipe_full_writers},
    {"zero_page", test_zero_page},
    {"mmap_shared", test_mmap_shared},
    {"munmap", test_munmap},
    {"efault", test_efault},
    {"bad_args", test_bad_args},
    {"misc", test_misc},
    {"own_calls", test_own_calls},
    {"bash_calls", test_bash_calls},
    {"kernel_isolation", test_kernel_isolation},
    {"ptshare_both_write", test_ptshare_both_write},
    {"ptshare_child_exits", test_ptshare_child_exits},
    {"ptshare_chain", test_ptshare_chain},
    {"ptshare_mprotect", test_ptshare_mprotect},
    {"ptshare_read_into", test_ptshare_read_into},
    {"ptshare_munmap", test_ptshare_munmap},
    {"threads_shared", test_threads_shared},
    {"threads_futex", test_threads_futex},
    {"threads_signals", test_threads_signals},
    {"threads_exit", test_threads_exit},
    {"threads_fork", test_threads_fork},
    {"threads_exec", test_threads_exec},
    {"threads_hostile", test_threads_hostile},
    {"threads_churn", test_threads_churn},
    {"tlb_mprotect", test_tlb_mprotect},
    {"tlb_cow_fork", test_tlb_cow_fork},
    {"tlb_munmap", test_tlb_munmap},
    {"tlb_lazy", test_tlb_lazy},
    {"fault_race", test_fault_race},
    // Lifetimes across sleeps and timed sleeps (tests/user/test_lifetimes.cpp).
    {"lifetime_pipe_close", test_lifetime_pipe_close},
    {"lifetime_pipe_dup2", test_lifetime_pipe_dup2},
    {"lifetime_pipe_write", test_lifetime_pipe_write},
    {"futex_timed_progress", test_futex_timed_progress, false, true},
    {"futex_timeouts", test_futex_timeouts},
    {"exec_race", test_exec_race},
    {"affinity", test_affinity},
    // FP/SIMD state (tests/user/test_fpu.cpp).
    {"fpu_switch", test_fpu_switch},
    {"fpu_signal", test_fpu_signal},
    {"fpu_fork", test_fpu_fork},
    {"fpu_exec", test_fpu_exec},
    {"fpu_sigreturn_forged", test_fpu_sigreturn_forged},
    // Timing in wall time, meaningful only with processes on two CPUs: run
    // when named (tests/boot/smp_boot_test.cpp's SmpTlb boots name them).
    {"sigkick_tgkill", test_sigkick_tgkill, true},
    {"sigkick_exit_group", test_sigkick_exit_group, true},
    // The unlocked mm calls raced by threads and processes pinned to
    // different CPUs: run when named (tests/boot/smp_stress_boot_test.cpp),
    // since with one CPU they only repeat what test_mm and test_tlb check.
    {"mm_race_threads", test_mm_race_threads, true},
    {"mm_race_procs", test_mm_race_procs, true},
    // Pipe reads and writes without the kernel lock, their descriptors
    // closed and dup2'd under them from another CPU (test_pipe_race.cpp).
    {"pipe_race_threads", test_pipe_race_threads, true},
    // The harness's own checks: each must be reported as a failure.
    {"_fail", [] { CHECK_EQ(1 + 1, 3); }, true},
    {"_crash", [] { poke(0); }, true},
    {"_hang", [] { for (;;) sched_yield(); }, true},
};
const unsigned kTestCount = sizeof kTests / sizeof kTests[0];

namespace {

// State of the current process (copied into helpers by fork).
const char* g_test_name = "proctest";
int g_failures = 0;
int g_checks = 0;
bool g_is_helper = false;
char g_first_failure[200];

struct Detail {
  const char* key;
  const char* str;  // nullptr: numeric; else points at text
  int64_t value;
  char text[96];
};
Detail g_details[16];
unsigned g_detail_count = 0;

}  // namespace

// A MAP_SHARED page the runner maps before forking a test: [0] is the line
// of the latest check any process of the test started.
volatile uint64_t* g_progress;

// Where set_failure_sink() says: the first failure of any process of the
// test that has one (shared memory, so helpers' failures reach the record).
namespace {
volatile char* g_failure_sink;
size_t g_failure_sink_size;
}  // namespace

void set_failure_sink(volatile char* buf, size_t size) {
  g_failure_sink = buf;
  g_failure_sink_size = size;
  if (buf && size) buf[0] = '\0';
}

void count_check(int line) {
  ++g_checks;
  if (g_progress) g_progress[0] = static_cast<uint64_t>(line);
}
int failures() { return g_failures; }
int checks() { return g_checks; }

void check_failed(int line, const char* expr, bool has_values, int64_t got, int64_t want) {
  char msg[sizeof g_first_failure];
  if (has_values)
    pvk::format(msg, sizeof msg, "line %d: %s (got %ld = 0x%lx, want %ld = 0x%lx)", line, expr, got,
                static_cast<uint64_t>(got), want, static_cast<uint64_t>(want));
  else
    pvk::format(msg, sizeof msg, "line %d: %s", line, expr);
  printf("proctest[%ld] %s%s: FAIL %s\n", getpid(), g_test_name, g_is_helper ? " (helper)" : "", msg);
  if (g_failures++ == 0) memcpy(g_first_failure, msg, sizeof msg);
  if (g_failure_sink && g_failure_sink_size && !g_failure_sink[0]) {
    char line[sizeof msg + 48];
    pvk::format(line, sizeof line, "pid %ld%s: %s", getpid(), g_is_helper ? " (helper)" : "", msg);
    const size_t n = strlen(line) < g_failure_sink_size - 1 ? strlen(line) : g_failure_sink_size - 1;
    for (size_t i = 0; i < n; ++i) g_failure_sink[i] = line[i];
    g_failure_sink[n] = '\0';
  }
}

void detail(const char* key, int64_t value) {
  if (g_detail_count >= sizeof g_details / sizeof g_details[0]) return;
  Detail& d = g_details[g_detail_count++];
  d.key = key;
  d.str = nullptr;
  d.value = value;
}

void detail_str(const char* key, const char* value) {  // copied: value may be a local
  if (g_detail_count >= sizeof g_details / sizeof g_details[0]) return;
  Detail& d = g_details[g_detail_count++];
  d.key = key;
  pvk::format(d.text, sizeof d.text, "%s", value);
  d.str = d.text;
}

int64_t fork_helper() {
  int64_t pid = fork();
  if (pid == 0) {
    g_failures = 0;
    g_is_helper = true;
  }
  return pid;
}

void helper_exit() { exit_group(g_failures ? 1 : 0); }

int wait_for(int64_t pid) {
  int status = 0;
  int64_t r = wait4(pid, &status, 0);
  if (r != pid) {
    printf("proctest[%ld] %s: wait4(%ld) returned %ld\n", getpid(), g_test_name, pid, r);
    return INT32_MIN;
  }
  return status;
}

int wait_or_kill(int64_t pid, uint64_t seconds, int line) {
  const uint64_t t0 = now_ns();
  int status = 0;
  for (;;) {
    const int64_t r = wait4(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r != 0) {
      check_failed(line, "wait4(pid, WNOHANG) failed", true, r, pid);
      return INT32_MIN;
    }
    if (now_ns() - t0 > seconds * 1000000000ull) break;
    sched_yield();
  }
  check_failed(line, "the process did not exit in time (killed with SIGKILL)", true, static_cast<int64_t>(seconds),
               0);
  kill(pid, SIGKILL);
  return wait_for(pid);
}

int wait_status_of(void (*fn)(void*), void* arg) {
  int64_t pid = fork_helper();
  if (pid < 0) return static_cast<int>(pid);
  if (pid == 0) {
    fn(arg);
    helper_exit();
  }
  return wait_for(pid);
}

void send_byte(int fd, char c) {
  if (write(fd, &c, 1) != 1) printf("proctest[%ld] %s: send_byte failed\n", getpid(), g_test_name);
}

char recv_byte(int fd) {
  char c = 0;
  if (read(fd, &c, 1) != 1) return 0;
  return c;
}

namespace {

// The test process: run one test, emit its record, exit 0 (pass) / 1 (fail).
[[noreturn]] void run_in_test_process(const Test& t) {
  g_test_name = t.name;
  g_failures = 0;
  g_checks = 0;
  g_detail_count = 0;
  g_first_failure[0] = '\0';
  const uint64_t t0 = now_ns();
  t.fn();
  if (g_is_helper) {
    // A helper fell out of its test function: a bug in the test itself.
    printf("proctest[%ld] %s: helper returned into the runner\n", getpid(), t.name);
    exit_group(98);
  }
  const uint64_t ns = now_ns() - t0;
  {
    pvk::Record r("test");
    r.str("name", t.name).boolean("pass", g_failures == 0).u64("checks", static_cast<uint64_t>(g_checks));
    r.u64("failed_checks", static_cast<uint64_t>(g_failures)).u64("ns", ns);
    if (g_failures) r.str("first_failure", g_first_failure);
    for (unsigned i = 0; i < g_detail_count; ++i) {
      if (g_details[i].str)
        r.str(g_details[i].key, g_details[i].str);
      else
        r.i64(g_details[i].key, g_details[i].value);
    }
  }
  exit_group(g_failures ? 1 : 0);
}

// A test's hang guard (timeout=), never a speed bound: under TCG without
// -icount the guest's clock is the host's, and two vCPUs on a loaded host
// can take a hundred times their idle time (fork_tree: 65 ms idle, over
// 20 s with six vCPU threads and three busy loops on two cores).
uint64_t g_timeout_ns = 120ull * 1000000000ull;

// Zombies of processes reparented to us (pvk: init adopts orphans).
unsigned reap_orphans() {
  unsigned n = 0;
  int st;
  while (wait4(-1, &st, WNOHANG) > 0) ++n;
  return n;
}

// Forks the test process and waits for it, polling so a hung test is killed
// after g_timeout_ns. Returns true if it passed.
bool run_test(const Test& t) {
  printf("proctest: %s ...\n", t.name);
  const uint64_t t0 = now_ns();
  if (g_progress) g_progress[0] = 0;
  int64_t pid = fork();
  if (pid == 0) run_in_test_process(t);
  if (pid < 0) {
    pvk::Record("test").str("name", t.name).boolean("pass", false).str("why", "fork failed").i64("errno", -pid);
    printf("proctest: [FAIL] %s: fork returned %ld\n", t.name, pid);
    return false;
  }
  int status = 0;
  bool timed_out = false;
  int64_t r;
  for (;;) {
    r = wait4(pid, &status, WNOHANG);
    if (r != 0) break;
    const uint64_t now = now_ns();
    if (now && now - t0 > g_timeout_ns) {
      timed_out = true;
      kill(pid, SIGKILL);
      r = wait4(pid, &status, 0);
      break;
    }
    if (t.runner_sleeps) {
      // Asleep between looks: a runner always runnable would hide a kernel
      // that lets a waiting thread hold every other CPU up (the waiter
      // would always have the runner to switch to).
      const Timespec poll{0, 1000000};
      if (nanosleep(&poll, nullptr) != 0) sched_yield();
    } else {
      sched_yield();
    }
  }
  if (r == -EINVAL) r = wait4(pid, &status, 0);  // no WNOHANG: wait without a watchdog
  const uint64_t ms = (now_ns() - t0) / 1000000;
  if (r != pid) {
    pvk::Record("test").str("name", t.name).boolean("pass", false).str("why", "wait4 failed").i64("result", r);
    printf("proctest: [FAIL] %s: wait4 returned %ld\n", t.name, r);
    return false;
  }
  const bool exited = WIFEXITED(status);
  const int code = WEXITSTATUS(status);
  if (timed_out || !exited || (code != 0 && code != 1)) {
    // The test process did not get to emit its record: emit it here.
    pvk::Record rec("test");
    rec.str("name", t.name).boolean("pass", false).i64("wait_status", status);
    if (timed_out)
      rec.boolean("timeout", true).u64("timeout_s", g_timeout_ns / 1000000000ull);
    else
      rec.boolean("crashed", true);
    if (WIFSIGNALED(status)) rec.i64("signal", WTERMSIG(status));
    if (exited) rec.i64("exit_code", code);
    if (g_progress && g_progress[0]) rec.u64("last_check_line", g_progress[0]);
  }
  const bool pass = exited && code == 0 && !timed_out;
  const char* how = timed_out ? " (timed out, killed)" : WIFSIGNALED(status) ? " (killed by a signal)" : "";
  printf("proctest: [%s] %s%s, %lu ms\n", pass ? "ok" : "FAIL", t.name, how, ms);
  if (!pass && g_progress && g_progress[0])
    printf("proctest: %s: the last check started was at line %lu\n", t.name, g_progress[0]);
  reap_orphans();
  return pass;
}

// Touch the stack the runner may use, so its first use during the tests
// does not count as a leak.
__attribute__((noinline)) void pretouch_stack() {
  volatile char area[64 * 1024];
  for (size_t i = 0; i < sizeof area; i += kPage) area[i] = 0;
  area[sizeof area - 1] = 0;
}

constexpr int kWarmUpProcesses = 40;

bool selected(const Test& t, int argc, char** argv) {
  bool any_name = false;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-' || strncmp(argv[i], "timeout=", 8) == 0) continue;
    any_name = true;
    if (strcmp(argv[i], t.name) == 0) return true;
  }
  return !any_name && !t.hidden;
}

}  // namespace
}  // namespace proctest

using namespace proctest;

int main(int argc, char** argv, char** envp) {
  for (int i = 1; i < argc; ++i) {
    uint64_t s;
    if (strcmp(argv[i], "--host") == 0)
      g_opt.host = true;
    else if (strncmp(argv[i], "timeout=", 8) == 0 && parse_u64(argv[i] + 8, &s) && s > 0)
      g_timeout_ns = s * 1000000000ull;
  }
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-' || strncmp(argv[i], "timeout=", 8) == 0) continue;
    bool known = false;
    for (unsigned k = 0; k < kTestCount; ++k) known |= strcmp(argv[i], kTests[k].name) == 0;
    if (!known) {
      printf("proctest: no test named '%s'\n", argv[i]);
      pvk::Record("user_tests").u64("passed", 0).u64("failed", 1).str("error", "unknown test name");
      return 2;
    }
  }
  printf("proctest: pid %ld, ppid %ld%s\n", getpid(), getppid(), g_opt.host ? ", on the host (Linux)" : "");

  g_progress = static_cast<volatile uint64_t*>(map_anon(kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  if (g_progress) g_progress[0] = 0;  // populated before any fork

  PvkCounters c;
  const bool have_counters = read_counters(&c) == 0;
  const uint64_t free_at_entry = c.free_frames;

  // Warm up what the runner's stack and the kernel's bounded caches hold
  // once used (pgd_cache=on keeps freed roots): as many processes alive at
  // once as the busiest test has (fork_tree: 31), then take the baseline.
  pretouch_stack();
  warm_root_cache(kWarmUpProcesses);
  read_counters(&c);
  const uint64_t free_start = c.free_frames;

  unsigned passed = 0, failed = 0;
  for (unsigned k = 0; k < kTestCount; ++k) {
    if (!selected(kTests[k], argc, argv)) continue;
    if (run_test(kTests[k]))
      ++passed;
    else
      ++failed;
  }

  // Leak check: every test process has exited and been reaped; orphans that
  // are still running get a moment to finish.
  unsigned orphans = reap_orphans();
  bool orphans_running = false;
  for (int i = 0; i < 100; ++i) {
    int st;
    int64_t r = wait4(-1, &st, WNOHANG);
    orphans_running = r == 0;
    if (r == -ECHILD) break;
    if (r > 0) ++orphans;
    sched_yield();
  }
  read_counters(&c);
  const uint64_t free_end = c.free_frames;
  {
    const bool pass = have_counters ? free_end == free_start : g_opt.host;
    pvk::Record r("test");
    r.str("name", "leak").boolean("pass", pass).boolean("counters", have_counters);
    r.u64("free_frames_entry", free_at_entry).u64("free_frames_start", free_start).u64("free_frames_end", free_end);
    r.i64("leaked_frames", static_cast<int64_t>(free_start) - static_cast<int64_t>(free_end));
    r.u64("orphans_reaped", orphans);
    // A test's helper that outlived it (and holds frames) is the test's bug.
    if (orphans_running) r.boolean("orphans_running", true);
    if (pass)
      ++passed;
    else
      ++failed;
    printf("proctest: [%s] leak: %lu free frames at start, %lu at end%s\n", pass ? "ok" : "FAIL", free_start,
           free_end, have_counters ? "" : " (no counters)");
  }
  pvk::Record("user_tests")
      .u64("passed", passed)
      .u64("failed", failed)
      .u64("free_frames_start", free_start)
      .u64("free_frames_end", free_end);
  printf("proctest: %u passed, %u failed\n", passed, failed);
  return failed ? 1 : 0;
}
