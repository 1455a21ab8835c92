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

}  // namespace

void run_shell_exec(Run& r) {
  const char* argv[] = {"sh", "-c", "/bin/kbworker", nullptr};
  time_exec_loop(r, "/bin/sh", argv);
}

void run_bash_exec(Run& r) {
  const char* argv[] = {"bash", "-c", ":", nullptr};
  time_exec_loop(r, "/bin/bash", argv);
}

void run_sh_script(Run& r) {
  const char* argv[] = {"sh", "/bin/workload.sh", nullptr};
  time_exec_loop(r, "/bin/sh", argv);
}

}  // namespace bench
