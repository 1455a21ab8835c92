// Programs as items (program_items.h).
#include "bench/program_items.h"

#include "bench/bench.h"
#include "bench/record_line.h"
#include "base/lib/format.h"

namespace bench {
namespace {

struct ProgramItem {
  const char* name;
  const char* keys;  // "seed, iters, ...": the options it takes
};
const ProgramItem kProgramItems[] = {
#define PVK_PROGRAM(name, ...) {#name, #__VA_ARGS__},
#include "bench/benches.inc"
};

// Whether `arg` ("k=v") names one of p's keys.
bool known_key(const ProgramItem& p, const char* arg) {
  const char* k = p.keys;
  while (*k) {
    size_t kl = 0;
    while (k[kl] && k[kl] != ',') ++kl;
    if (strncmp(arg, k, kl) == 0 && arg[kl] == '=') return true;
    k += kl;
    while (*k == ',' || *k == ' ') ++k;
  }
  return false;
}

void run(const ProgramItem& p, const char* item, const char* opts) {
  // "k=v:k=v" -> argv {"NAME", "k=v", "k=v"}; each key must be one of p.keys.
  static char store[512];
  const char* argv[12] = {p.name};
  unsigned argc = 1;
  size_t n = 0;
  while (*opts) {
    if (argc + 1 >= sizeof argv / sizeof argv[0]) return item_error(item, "too many options");
    char* arg = store + n;
    while (*opts && *opts != ':' && n + 1 < sizeof store) store[n++] = *opts++;
    store[n++] = 0;
    if (*opts == ':') ++opts;
    const bool known = known_key(p, arg);
    uint64_t v;
    const char* eq = arg;
    while (*eq && *eq != '=') ++eq;
    if (!known || !*eq || !parse_u64(eq + 1, &v)) {
      char why[96];
      pvk::format(why, sizeof why, "'%s' has no parameter '%s' (or its value is not a number)", p.name, arg);
      return item_error(item, why);
    }
    argv[argc++] = arg;
  }
  argv[argc] = nullptr;
  printf("bench: %s: running the %s program\n", item, p.name);
  const Counters before = read_all_counters();
  const uint64_t t0 = now_ns();
  const int64_t pid = fork();
  if (pid == 0) {
    const char* envp[] = {nullptr};
    const int64_t r = execve(p.name, argv, envp);
    printf("bench: execve(%s) failed: %ld\n", p.name, r);
    exit_group(127);
  }
  int status = 0;
  const bool reaped = pid > 0 && wait4(pid, &status, 0) == pid;
  const uint64_t ns = now_ns() - t0;
  reap_leftovers();
  const Counters after = read_all_counters();
  const bool leak = g_have_counters && after.free_frames != before.free_frames;
  const bool pass = reaped && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !leak;
  {
    Line l("bench", p.name);
    l.str("args", item).u64("ns", ns);
    if (WIFEXITED(status)) l.u64("exit_code", static_cast<uint64_t>(WEXITSTATUS(status)));
    if (WIFSIGNALED(status)) l.u64("signal", static_cast<uint64_t>(WTERMSIG(status)));
    if (g_have_counters) l.u64("free_frames_before", before.free_frames).u64("free_frames_after", after.free_frames);
    l.boolean("pass", pass);
    if (!pass)
      l.str("error", !reaped ? "fork/wait failed" : leak ? "frame leak" : "the program failed (see its records)");
  }
  count_record(pass);
  printf("bench: %s: %s\n", item, pass ? "pass" : "FAIL");
}

}  // namespace

bool run_program_item(const char* name, const char* item, const char* opts) {
  for (const ProgramItem& p : kProgramItems)
    if (strcmp(p.name, name) == 0) {
      run(p, item, opts);
      return true;
    }
  return false;
}

unsigned reap_leftovers() {
  unsigned n = 0;
  int st;
  while (wait4(-1, &st, WNOHANG) > 0) ++n;
  return n;
}

}  // namespace bench
