/* The boot test's init: runs each program named on its command line in
 * turn (fork, then execve with a fixed, empty environment, so the host
 * run and pvk's see the same), prints its exit status, and exits non-zero
 * if any failed. What it prints names programs only by their file name:
 * on the host they are files of a build directory, on pvk of /bin. */
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int run(const char *path) {
  char name[256];
  snprintf(name, sizeof name, "%s", path);
  const char *base = basename(name);
  printf("== %s\n", base);
  fflush(stdout); /* before fork, or the child would print it again */
  const pid_t pid = fork();
  if (pid < 0) return perror("fork"), 1;
  if (pid == 0) {
    char *const argv[] = {(char *)base, NULL};
    char *const envp[] = {NULL};
    execve(path, argv, envp);
    printf("execve %s failed\n", base);
    _exit(127);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid) return perror("waitpid"), 1;
  if (WIFSIGNALED(status)) {
    printf("== %s: killed by signal %d\n", base, WTERMSIG(status));
    return 1;
  }
  printf("== %s: exit %d\n", base, WEXITSTATUS(status));
  return WEXITSTATUS(status) != 0;
}

int main(int argc, char **argv) {
  int failed = 0;
  for (int i = 1; i < argc; ++i) failed += run(argv[i]);
  printf("glibc suite: %d of %d programs failed\n", failed, argc - 1);
  return failed != 0;
}
