// hostile's attacks with signals: long writes and reads that SIGKILL must
// cut short, and the small items (high bits in signal numbers, pids and
// prot, default-ignored signals, kill of init, a fake done record).
#include "hostile_attacks.h"

namespace hostile {

// ===========================================================================
// Long writes and reads must honour SIGKILL: a killed writer stops where it
// is, a blocked one wakes up to die. Judged by what was done (bytes on the
// console, the write never returning), never by how long it took: the
// host's speed sets that.

namespace {

volatile uint64_t* g_flag;  // MAP_SHARED: [0] set by a victim about to block

constexpr uint64_t kConsoleFlood = 4ull << 20;

void flood_console(uint64_t bytes) {
  auto* buf = static_cast<char*>(map_anon(bytes));
  if (!buf) exit_group(3);
  static const char kLine[] = "hostile: console flood, a long write that SIGKILL must cut short ....\n";
  constexpr uint64_t kLen = sizeof kLine - 1;
  for (uint64_t i = 0; i < bytes; ++i) buf[i] = kLine[i % kLen];
  g_flag[0] = 1;
  write(1, buf, bytes);
  g_flag[0] = 2;
  print("\n");
}

// A 32 MiB transfer on a pipe nobody serves: it blocks until killed.
template <int64_t (*Transfer)(int, void*, size_t)>
void pipe_blocker(uint64_t fd) {
  constexpr uint64_t kBytes = 32ull << 20;
  auto* buf = static_cast<char*>(map_anon(kBytes));
  if (!buf) exit_group(3);
  g_flag[0] = 1;
  Transfer(static_cast<int>(fd), buf, kBytes);
  g_flag[0] = 2;
}
int64_t write_buf(int fd, void* buf, size_t n) { return write(fd, buf, n); }
constexpr auto pipe_writer = pipe_blocker<&write_buf>;
constexpr auto pipe_reader = pipe_blocker<&read>;

// kill_during's `since` for a wait counted from the victim's flag.
constexpr uint64_t kSinceTheFlag = ~0ull;

uint64_t console_bytes() {
  PvkCounters c;
  read_counters(&c);
  return c.console_bytes;
}

// Forks fn(arg) and waits until it set g_flag (it is about to make its long
// call), then until started(since) says the call is under way; SIGKILLs it
// and reaps it. The victim must die of the SIGKILL with its call never
// having returned (g_flag still 1).
void kill_during(const char* what, void (*fn)(uint64_t), uint64_t arg, bool (*started)(uint64_t), uint64_t since) {
  g_flag[0] = 0;
  const int64_t pid = fork();
  if (pid == 0) {
    fn(arg);
    exit_group(kVictimSurvived);
  }
  HCHECK(pid > 0, "%s: fork failed", what);
  if (pid < 0) return;
  const uint64_t t0 = now_ns();
  while (g_flag[0] == 0 && now_ns() - t0 < kHangMs * 1'000'000) sched_yield();
  if (since == kSinceTheFlag) since = now_ns();
  while (!started(since) && now_ns() - t0 < kHangMs * 1'000'000) sched_yield();
  kill(pid, SIGKILL);
  const Outcome o = wait_victim(pid);
  EXPECT_SIGNAL(what, o, SIGKILL);
  HCHECK(g_flag[0] == 1, "%s: the call returned to user mode (flag %lu) before the SIGKILL took it", what,
         static_cast<uint64_t>(g_flag[0]));
}

// The console write is under way once a page of it reached the console.
bool console_started(uint64_t before) { return console_bytes() - before >= kPage; }
// A pipe call blocks as soon as it starts (nobody serves the pipe): give it
// 50 ms of the guest's clock after the flag to get there.
bool blocked_by_now(uint64_t since) { return now_ns() - since >= 50'000'000; }

}  // namespace

void attack_huge_write_console() {
  g_flag = static_cast<volatile uint64_t*>(map_anon(kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  const uint64_t before = console_bytes();
  kill_during("a 4 MiB write to the console, SIGKILL once it is under way", flood_console, kConsoleFlood,
              console_started, before);
  const uint64_t written = console_bytes() - before;
  print("\n");  // the victim was cut mid-line
  detail("console_bytes_before_kill", static_cast<int64_t>(written));
  HCHECK(written >= kPage && written < kConsoleFlood,
         "the killed console write put %lu of its %lu bytes on the console (want it cut short)", written, kConsoleFlood);
}

void attack_huge_pipe_kill() {
  g_flag = static_cast<volatile uint64_t*>(map_anon(kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  int p[2];
  HCHECK(pipe(p) == 0, "pipe");
  kill_during("a 32 MiB write to a pipe nobody reads", pipe_writer, static_cast<uint64_t>(p[1]), blocked_by_now,
              kSinceTheFlag);
  int q[2];
  HCHECK(pipe(q) == 0, "pipe");
  kill_during("a 32 MiB read from a pipe nobody writes", pipe_reader, static_cast<uint64_t>(q[0]), blocked_by_now,
              kSinceTheFlag);
  close(p[0]);
  close(p[1]);
  close(q[0]);
  close(q[1]);
}

// ===========================================================================
// The small items: high bits, default-ignored signals, kill of init.

namespace {

void high_bits(uint64_t) {
  const int64_t me = getpid();
  int64_t r = syscall2(SYS_kill, static_cast<uint64_t>(me), 0x10000000bull);  // SIGSEGV if truncated
  HCHECK(r == -EINVAL, "kill(self, 0x1_0000_000b) returned %ld, want -EINVAL", r);
  r = syscall2(SYS_kill, static_cast<uint64_t>(me), 65);
  HCHECK(r == -EINVAL, "kill(self, 65) returned %ld, want -EINVAL", r);
  r = syscall2(SYS_kill, static_cast<uint64_t>(me), ~0ull);
  HCHECK(r == -EINVAL, "kill(self, -1) returned %ld, want -EINVAL", r);
  KernelSigaction act{SIG_IGN, SA_RESTORER, reinterpret_cast<uint64_t>(pvk_sigreturn_restorer), 0};
  r = syscall4(SYS_rt_sigaction, 0x10000000aull, reinterpret_cast<uint64_t>(&act), 0, 8);
  HCHECK(r == -EINVAL, "rt_sigaction(0x1_0000_000a) returned %ld, want -EINVAL", r);
  r = syscall4(SYS_rt_sigaction, 0, reinterpret_cast<uint64_t>(&act), 0, 8);
  HCHECK(r == -EINVAL, "rt_sigaction(0) returned %ld, want -EINVAL", r);
  r = syscall4(SYS_rt_sigaction, 65, reinterpret_cast<uint64_t>(&act), 0, 8);
  HCHECK(r == -EINVAL, "rt_sigaction(65) returned %ld, want -EINVAL", r);
  void* page = map_anon(kPage);
  HCHECK(page != nullptr, "mmap");
  r = syscall3(SYS_mprotect, reinterpret_cast<uint64_t>(page), kPage, 0x100000003ull);
  HCHECK(r == -EINVAL, "mprotect(prot 0x1_0000_0003) returned %ld, want -EINVAL", r);
  r = syscall3(SYS_mprotect, reinterpret_cast<uint64_t>(page), kPage, 0x80000001ull);
  HCHECK(r == -EINVAL, "mprotect(prot 0x8000_0001) returned %ld, want -EINVAL", r);
  r = syscall6(SYS_mmap, 0, kPage, 0x100000003ull, MAP_PRIVATE | MAP_ANONYMOUS, ~0ull, 0);
  HCHECK(r == -EINVAL, "mmap(prot 0x1_0000_0003) returned %ld, want -EINVAL", r);
  // The process must still be alive to get here (kill did not deliver 11).
}

}  // namespace

void attack_signal_high_bits() {
  EXPECT_EXIT("signal numbers and prot with high bits", run_victim(high_bits, 0), kVictimSurvived);
}

namespace {

void send_ignored_to_self(uint64_t) {
  for (int s : {SIGCONT, SIGURG, SIGWINCH, static_cast<int>(SIGCHLD)}) HCHECK(kill(getpid(), s) == 0, "kill(self, %d)", s);
  sched_yield();
}
void spin_a_while(uint64_t ms) {
  const uint64_t t0 = now_ns();
  while (now_ns() - t0 < ms * 1000000ull) sched_yield();
}

}  // namespace

void attack_default_ignored() {
  EXPECT_EXIT("SIGCONT, SIGURG, SIGWINCH, SIGCHLD sent to self (default action: ignore)",
              run_victim(send_ignored_to_self, 0), kVictimSurvived);
  const int64_t pid = fork();
  if (pid == 0) {
    spin_a_while(300);
    exit_group(kVictimSurvived);
  }
  for (int s : {SIGCONT, SIGURG, SIGWINCH}) HCHECK(kill(pid, s) == 0, "kill(child, %d)", s);
  EXPECT_EXIT("a process sent SIGCONT, SIGURG, SIGWINCH keeps running", wait_victim(pid), kVictimSurvived);
}

void attack_kill_pid_high_bits() {
  int p[2];
  HCHECK(pipe(p) == 0, "pipe");
  const int64_t sleeper = fork();
  if (sleeper == 0) {
    close(p[1]);
    char c;
    read(p[0], &c, 1);  // until the pipe closes
    exit_group(0);
  }
  close(p[0]);
  const int64_t r = syscall2(SYS_kill, (1ull << 32) | static_cast<uint64_t>(sleeper), SIGKILL);
  HCHECK(r == -ESRCH || r == -EINVAL, "kill(0x1_0000_0000 | pid, SIGKILL) returned %ld, want -ESRCH/-EINVAL", r);
  const int64_t r2 = syscall3(SYS_wait4, (1ull << 32) | static_cast<uint64_t>(sleeper), 0, WNOHANG);
  HCHECK(r2 == -ECHILD || r2 == -EINVAL || r2 == 0, "wait4(0x1_0000_0000 | pid, WNOHANG) returned %ld", r2);
  close(p[1]);
  EXPECT_EXIT("the process whose pid was named with high bits is untouched", wait_victim(sleeper), 0);
}

namespace {

void fake_records(uint64_t) {
  static const char kFake[] = "@pvk {\"event\":\"done\",\"status\":\"pass\"}\n";
  HCHECK(write(1, kFake, sizeof kFake - 1) == sizeof kFake - 1, "write of the fake record");
  // The same record in two writes: a tagger must know where lines start.
  HCHECK(write(1, "@pv", 3) == 3, "write");
  HCHECK(write(1, kFake + 3, sizeof kFake - 4) == sizeof kFake - 4, "write");
  // And one after a partial line of the program's own.
  static const char kAfter[] = "hostile: partial line, then\n@pvk {\"event\":\"done\",\"status\":\"pass\"}\n";
  HCHECK(write(1, kAfter, sizeof kAfter - 1) == sizeof kAfter - 1, "write");
}

}  // namespace

void attack_fake_done_record() {
  EXPECT_EXIT("a user program prints a fake done record (the boot test checks the console)",
              run_victim(fake_records, 0), kVictimSurvived);
}

namespace {

void kill_init_victim(uint64_t) {
  int64_t r = kill(1, SIGKILL);
  HCHECK(r == -EPERM, "kill(1, SIGKILL) returned %ld, want -EPERM", r);
  r = kill(1, SIGSEGV);
  HCHECK(r == -EPERM, "kill(1, SIGSEGV) returned %ld, want -EPERM", r);
  r = syscall2(SYS_kill, (1ull << 32) | 1, SIGKILL);
  HCHECK(r == -ESRCH || r == -EPERM || r == -EINVAL, "kill(0x1_0000_0001, SIGKILL) returned %ld, want -ESRCH/-EPERM/-EINVAL", r);
}

}  // namespace

void attack_kill_init() {
  // From a grandchild of init's child: no relation to pid 1 but ancestry.
  EXPECT_EXIT("kill(1, ...) from a non-parent process", run_victim(kill_init_victim, 0), kVictimSurvived);
}

}  // namespace hostile
