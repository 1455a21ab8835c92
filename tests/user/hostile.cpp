// hostile: user programs that attack the kernel, run by pvk as
// init ("init=hostile") or through the bench driver ("bench=hostile").
//
//   hostile [timeout=SECONDS] [only=INDEX] [ATTACK...]
//
// (only=INDEX runs the attack at that position of kAttacks, counting from
// 0: a number, so the bench driver's numeric options can name it.)
//
// Each attack runs in its own forked "attack process" under a deadline; the
// attack forks the victims it needs (each with its own deadline) and checks
// how each ended. After the attack process is reaped the runner checks that
// the kernel is unchanged: a canary (a sequence of system calls with known
// results: getpid, a pipe round trip, an anonymous page, a fork + wait) and
// the free-frame count back at its baseline. One record per attack:
//   @pvk {"event":"test","name":...,"pass":true|false,"checks":N,"failed_checks":M,
//         ["first_failure":...],"canary":true|false,"free_frames":F,"baseline":B,...details}
// then {"event":"hostile_done","passed":P,"failed":F,"free_frames_start":..,"free_frames_end":..};
// the exit status is 0 iff every attack passed.
//
// The attacks assert the correct behaviour; several fail on a kernel that
// still has the holes the suite looks for (that is the point). The attacks able to
// take the whole kernel down (compatibility mode, kill of init) run last so
// the others are reported first.
#include "base/console/record.h"
#include "base/layout.h"
#include "hostile.h"

namespace hostile {

// ---------------------------------------------------------------------------
// Results of the current attack: a MAP_SHARED page, so victims and the
// attack process report into the same place and the runner reads it even
// if the attack process dies.

struct Results {
  int64_t checks;
  int64_t failures;
  int64_t last_line;
  char first_failure[240];
  unsigned n_details;
  struct {
    char key[32];
    int64_t value;
    bool is_str;
    char str[64];
  } details[12];
};
Results* g_results;
const char* g_attack = "hostile";

void count_check(int line) {
  ++g_results->checks;
  g_results->last_line = line;
}

void fail(int line, const char* fmt, ...) {
  char msg[sizeof g_results->first_failure];
  int n = pvk::format(msg, sizeof msg, "line %d: ", line);
  va_list ap;
  va_start(ap, fmt);
  pvk::vformat(msg + n, sizeof msg - n, fmt, ap);
  va_end(ap);
  printf("hostile[%ld] %s: FAIL %s\n", getpid(), g_attack, msg);
  if (g_results->failures++ == 0) memcpy(g_results->first_failure, msg, sizeof msg);
}

void detail(const char* key, int64_t value) {
  for (unsigned i = 0; i < g_results->n_details; ++i)
    if (strcmp(g_results->details[i].key, key) == 0) {
      g_results->details[i].value = value;
      return;
    }
  if (g_results->n_details >= 12) return;
  auto& d = g_results->details[g_results->n_details++];
  pvk::format(d.key, sizeof d.key, "%s", key);
  d.value = value;
  d.is_str = false;
}

void detail_str(const char* key, const char* value) {
  if (g_results->n_details >= 12) return;
  auto& d = g_results->details[g_results->n_details++];
  pvk::format(d.key, sizeof d.key, "%s", key);
  pvk::format(d.str, sizeof d.str, "%s", value);
  d.is_str = true;
}

const char* describe(char* buf, size_t cap, const Outcome& o) {
  if (o.timed_out)
    pvk::format(buf, cap, "hung (killed after the deadline)");
  else if (o.status == INT32_MIN)
    pvk::format(buf, cap, "fork/wait failed");
  else if (WIFEXITED(o.status))
    pvk::format(buf, cap, "exited %d", WEXITSTATUS(o.status));
  else if (WIFSIGNALED(o.status))
    pvk::format(buf, cap, "killed by signal %d", WTERMSIG(o.status));
  else
    pvk::format(buf, cap, "wait status 0x%x", o.status);
  return buf;
}

Outcome wait_deadline(int64_t pid, uint64_t deadline_ms) {
  Outcome o;
  const uint64_t t0 = now_ns();
  for (;;) {
    int st = 0;
    const int64_t r = wait4(pid, &st, WNOHANG);
    if (r == pid) {
      o.status = st;
      break;
    }
    if (r != 0) {
      o.status = INT32_MIN;
      break;
    }
    if (now_ns() - t0 > deadline_ms * 1000000ull) {
      o.timed_out = true;
      kill(pid, SIGKILL);
      st = 0;
      o.status = wait4(pid, &st, 0) == pid ? st : INT32_MIN;
      break;
    }
    sched_yield();
  }
  o.ns = now_ns() - t0;
  return o;
}

Outcome wait_victim(int64_t pid) { return wait_deadline(pid, kHangMs); }

Outcome run_victim(void (*fn)(uint64_t), uint64_t arg) {
  const int64_t pid = fork();
  if (pid == 0) {
    fn(arg);
    exit_group(kVictimSurvived);
  }
  if (pid < 0) return Outcome{INT32_MIN, false, 0};
  return wait_victim(pid);
}

bool died_of_one_of(const Outcome& o, std::initializer_list<int> sigs) {
  if (o.timed_out || o.status == INT32_MIN || !WIFSIGNALED(o.status)) return false;
  for (int s : sigs)
    if (WTERMSIG(o.status) == s) return true;
  return false;
}

void expect_signal(int line, const char* what, const Outcome& o, std::initializer_list<int> sigs) {
  count_check(line);
  if (died_of_one_of(o, sigs)) return;
  char how[64], want[48];
  size_t n = 0;
  want[0] = 0;
  for (int s : sigs) n += pvk::format(want + n, n < sizeof want ? sizeof want - n : 0, "%s%d", n ? "/" : "", s);
  fail(line, "%s: %s, want death by signal %s", what, describe(how, sizeof how, o), want);
}

void expect_exit(int line, const char* what, const Outcome& o, int code) {
  count_check(line);
  if (!o.timed_out && o.status != INT32_MIN && WIFEXITED(o.status) && WEXITSTATUS(o.status) == code) return;
  char how[64];
  fail(line, "%s: %s, want exit %d", what, describe(how, sizeof how, o), code);
}

void* map_fixed_shared(uint64_t addr, size_t len, uint64_t prot) {
  const int64_t r = mmap(reinterpret_cast<void*>(addr), len, prot, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED);
  return is_err(r) ? nullptr : reinterpret_cast<void*>(r);
}

// ---------------------------------------------------------------------------
// The kernel canary, run by the runner after each attack process is reaped.

namespace {

bool canary(char* why, size_t cap) {
  static int64_t pid0;
  if (!pid0) pid0 = getpid();
  if (getpid() != pid0) return pvk::format(why, cap, "getpid changed"), false;
  int p[2] = {-1, -1};
  if (pipe(p) != 0) return pvk::format(why, cap, "pipe failed"), false;
  char out[64], in[64];
  for (unsigned i = 0; i < sizeof out; ++i) out[i] = static_cast<char>(i * 7 + 1);
  memset(in, 0, sizeof in);
  const int64_t w = write(p[1], out, sizeof out), r = read(p[0], in, sizeof in);
  close(p[0]);
  close(p[1]);
  if (w != 64 || r != 64 || memcmp(in, out, sizeof in) != 0)
    return pvk::format(why, cap, "pipe round trip: write %ld read %ld", w, r), false;
  auto* page = static_cast<volatile uint64_t*>(map_anon(kPage));
  if (!page) return pvk::format(why, cap, "mmap failed"), false;
  for (unsigned i = 0; i < kPage / 8; ++i) page[i] = i * 0x9E3779B97F4A7C15ull;
  for (unsigned i = 0; i < kPage / 8; ++i)
    if (page[i] != i * 0x9E3779B97F4A7C15ull) return pvk::format(why, cap, "anonymous page reads back wrong"), false;
  munmap(const_cast<uint64_t*>(page), kPage);
  const int64_t child = fork();
  if (child == 0) exit_group(42);
  int st = 0;
  if (child < 0 || wait4(child, &st, 0) != child || st != wait_exited(42))
    return pvk::format(why, cap, "fork + exit(42) + wait4: pid %ld status 0x%x", child, st), false;
  const uint64_t t1 = now_ns(), t2 = now_ns();
  if (!t1 || t2 < t1) return pvk::format(why, cap, "CLOCK_MONOTONIC went backwards"), false;
  return true;
}

uint64_t free_frames() {
  PvkCounters c;
  return read_counters(&c) == 0 ? c.free_frames : 0;
}

unsigned reap_orphans() {
  unsigned n = 0;
  int st;
  while (wait4(-1, &st, WNOHANG) > 0) ++n;
  return n;
}

// An attack's own hang guard (timeout=): well above a victim's (kHangMs).
uint64_t g_timeout_s = 300;
uint64_t g_baseline;

// Runs one attack in its own process; returns true if it passed.
bool run_attack(const Attack& a) {
  printf("hostile: %s ...\n", a.name);
  memset(g_results, 0, sizeof *g_results);
  const uint64_t t0 = now_ns();
  const int64_t pid = fork();
  if (pid == 0) {
    g_attack = a.name;
    a.fn();
    exit_group(g_results->failures ? 1 : 0);
  }
  Outcome o = pid < 0 ? Outcome{INT32_MIN, false, 0} : wait_deadline(pid, g_timeout_s * 1000);
  const unsigned orphans = reap_orphans();
  char why[120] = "";
  const bool canary_ok = canary(why, sizeof why);
  uint64_t frames = free_frames();
  // An attack's victims may still be on their way out (a SIGKILL'd process
  // is reaped by its parent, which already happened): give the kernel a
  // moment before calling a difference a leak.
  for (int i = 0; i < 20 && frames != g_baseline; ++i) {
    sched_yield();
    reap_orphans();
    frames = free_frames();
  }
  const bool frames_ok = frames == g_baseline || g_baseline == 0;
  const bool exited_ok = !o.timed_out && o.status != INT32_MIN && WIFEXITED(o.status) &&
                         (WEXITSTATUS(o.status) == 0 || WEXITSTATUS(o.status) == 1);
  const bool pass = exited_ok && WEXITSTATUS(o.status) == 0 && g_results->failures == 0 && canary_ok && frames_ok;
  {
    pvk::Record r("test");
    r.str("name", a.name).boolean("pass", pass);
    r.u64("checks", static_cast<uint64_t>(g_results->checks)).u64("failed_checks", static_cast<uint64_t>(g_results->failures));
    if (g_results->failures) r.str("first_failure", g_results->first_failure);
    if (!exited_ok) {
      char how[64];
      r.str("attack_process", describe(how, sizeof how, o));
      r.u64("last_check_line", static_cast<uint64_t>(g_results->last_line));
    }
    r.boolean("canary", canary_ok);
    if (!canary_ok) r.str("canary_failure", why);
    r.u64("free_frames", frames).u64("baseline", g_baseline);
    if (orphans) r.u64("orphans", orphans);
    r.u64("ms", (now_ns() - t0) / 1000000);
    for (unsigned i = 0; i < g_results->n_details; ++i) {
      const auto& d = g_results->details[i];
      if (d.is_str)
        r.str(d.key, d.str);
      else
        r.i64(d.key, d.value);
    }
  }
  printf("hostile: [%s] %s%s%s\n", pass ? "ok" : "FAIL", a.name, canary_ok ? "" : " (canary failed)",
         frames_ok ? "" : " (free frames off baseline)");
  if (!frames_ok) g_baseline = frames;  // report each leak once
  return pass;
}

__attribute__((noinline)) void pretouch_stack() {
  volatile char area[96 * 1024];
  for (size_t i = 0; i < sizeof area; i += kPage) area[i] = 0;
  area[sizeof area - 1] = 0;
}

extern "C" char __rodata_end[], _end[];
void touch_data() {
  for (char* p = __rodata_end; p < _end; p += kPage) {
    volatile char* v = p;
    *v = *v;
  }
}

uint64_t g_only = ~0ull;

bool selected(const Attack& a, int argc, char** argv) {
  if (g_only != ~0ull) return &a == &kAttacks[g_only];
  bool any = false;
  for (int i = 1; i < argc; ++i) {
    bool option = false;
    for (const char* c = argv[i]; *c; ++c) option |= *c == '=';
    if (option) continue;
    any = true;
    if (strcmp(argv[i], a.name) == 0) return true;
  }
  return !any;
}

}  // namespace
}  // namespace hostile

using namespace hostile;

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (strncmp(argv[i], "timeout=", 8) == 0 && !parse_u64(argv[i] + 8, &g_timeout_s)) {
      printf("hostile: bad %s\n", argv[i]);
      return 2;
    } else if (strncmp(argv[i], "only=", 5) == 0 && (!parse_u64(argv[i] + 5, &g_only) || g_only >= kAttackCount)) {
      printf("hostile: bad %s (0..%u)\n", argv[i], kAttackCount - 1);
      return 2;
    }
  g_results = static_cast<Results*>(map_anon(kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS));
  if (!g_results) {
    printf("hostile: cannot map the results page\n");
    return 2;
  }
  memset(g_results, 0, sizeof *g_results);
  printf("hostile: pid %ld, ppid %ld, %u attacks\n", getpid(), getppid(), kAttackCount);
  touch_data();
  pretouch_stack();
  warm_root_cache(24);
  char why[120];
  if (!canary(why, sizeof why)) printf("hostile: the canary fails before any attack: %s\n", why);
  g_baseline = free_frames();
  const uint64_t start = g_baseline;

  unsigned passed = 0, failed = 0;
  for (unsigned k = 0; k < kAttackCount; ++k) {
    if (!selected(kAttacks[k], argc, argv)) continue;
    if (run_attack(kAttacks[k]))
      ++passed;
    else
      ++failed;
  }
  reap_orphans();
  const uint64_t end = free_frames();
  pvk::Record("hostile_done")
      .u64("passed", passed)
      .u64("failed", failed)
      .u64("free_frames_start", start)
      .u64("free_frames_end", end);
  printf("hostile: %u passed, %u failed\n", passed, failed);
  return failed || end != start ? 1 : 0;
}
