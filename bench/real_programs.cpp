// Benchmarks that exec programs nobody here wrote: Debian's busybox-static
// and bash-static, from the root filesystem pvk bench packs for every boot
// (and puts in the initramfs of a Linux boot, at the same paths: see
// docs/benchmarks.md "Real programs").
//
//   shell_exec   lmbench's "shell" process benchmark, the case seed 001 names
//                (system(): a shell started to start something else): fork,
//                the child execs `/bin/sh -c /bin/kbworker`, the parent waits.
//   bash_exec    fork + exec of bash-static (a 2.3 MB image) running `:`:
//                exec's cost in mapping a large program.
//   sh_script    busybox sh runs /bin/workload.sh: pipelines, subshells,
//                command substitution, a loop; its output goes to /dev/null.
//
// The child reports a failed exec in its exit status (kExecFailed + errno),
// so a boot without the programs fails the item with the path and errno
// rather than timing nothing.
#include "bench/bench.h"
#include "base/lib/format.h"

namespace bench {
namespace {

// Above what shells exit with (126, 127, 128 + a signal).
constexpr int kExecFailed = 200;

// fork + exec(path, argv) + wait, `iters` times per rep.
void time_exec_loop(Run& r, const char* path, const char* const* argv) {
  const uint64_t n = r.p("iters");
  r.ops = n;
  for (unsigned rep = 0; rep < r.reps && !r.failed(); ++rep) {
    r.start();
    for (uint64_t i = 0; i < n; ++i) {
      const int64_t pid = fork();
      if (pid == 0) {
        const int64_t rc = execve(path, argv, pvk_environ);
        exit_group(kExecFailed + static_cast<int>(-rc < 55 ? -rc : 55));
      }
      if (pid < 0) {
        r.fail("fork returned %ld", pid);
        break;
      }
      int st = 0;
      const int64_t got = wait4(pid, &st, 0);
      if (got != pid || st != 0) {
        const int code = (st >> 8) & 0xff;
        if (got == pid && (st & 0x7f) == 0 && code >= kExecFailed)
          r.fail("exec of %s failed with errno %d (the root filesystem pvk bench packs holds it)", path,
                 code - kExecFailed);
        else
          r.fail("%s: wait4(%ld) returned %ld, status 0x%x", path, pid, got, st);
        break;
      }
    }
    r.stop();
  }
}

// Where the programs are: / on pvk and on a Linux booted by pvk bench; on
// the build host, the copy the build stages (PVK_BENCH_ROOT, set by the
// host smoke test), so that run execs the same files. The scripts read the
// same variable, and the children inherit it.
const char* programs_root() {
  constexpr char kName[] = "PVK_BENCH_ROOT=";
  for (char** e = pvk_environ; e && *e; ++e) {
    unsigned i = 0;
    while (kName[i] && (*e)[i] == kName[i]) ++i;
    if (!kName[i]) return *e + i;
  }
  return "";
}

// root + path in `buf`.
const char* in_root(char* buf, unsigned size, const char* path) {
  pvk::format(buf, size, "%s%s", programs_root(), path);
  return buf;
}

}  // namespace

void run_shell_exec(Run& r) {
  char sh[256], worker[256];
  const char* argv[] = {"sh", "-c", in_root(worker, sizeof worker, "/bin/kbworker"), nullptr};
  time_exec_loop(r, in_root(sh, sizeof sh, "/bin/sh"), argv);
}

void run_bash_exec(Run& r) {
  char bash[256];
  const char* argv[] = {"bash", "-c", ":", nullptr};
  time_exec_loop(r, in_root(bash, sizeof bash, "/bin/bash"), argv);
}

void run_sh_script(Run& r) {
  char sh[256], script[256];
  const char* argv[] = {"sh", in_root(script, sizeof script, "/bin/workload.sh"), nullptr};
  time_exec_loop(r, in_root(sh, sizeof sh, "/bin/sh"), argv);
}

}  // namespace bench
