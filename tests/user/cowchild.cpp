// cowchild: execve'd by proctest's fork_exec test.
//
//   cowchild alpha "beta gamma" ADDR FD CODE     (environment: PVK_TEST=cowchild SECOND=2)
//
// Checks that it got exactly these arguments and environment, that its
// globals are fresh (initialised .data, zeroed .bss: nothing of the caller's
// image survived), that ADDR (a region the caller had mapped) is not mapped
// here, that SIGUSR1 (caught by the caller) is back to SIG_DFL and SIGPIPE
// (ignored by the caller) still ignored. Writes "pid=N ok\n" (or
// "pid=N FAIL <what>\n") to the inherited pipe FD and exits with CODE if
// everything held, 1 otherwise.
#include "bench/libc/user.h"
#include "base/lib/format.h"

using namespace pvk::user;

namespace {

int g_initialised = 12345;           // .data
const char g_rodata[] = "cowchild";  // .rodata
uint64_t g_zeroed[2048];             // .bss, 16 KiB

char g_first[96];
int g_failures = 0;

void fail(const char* what) {
  printf("cowchild: FAIL %s\n", what);
  if (g_failures++ == 0) pvk::format(g_first, sizeof g_first, "%s", what);
}

#define EXPECT(cond) \
  do {               \
    if (!(cond)) fail(#cond); \
  } while (0)

bool streq(const char* a, const char* b) { return a && b && strcmp(a, b) == 0; }

}  // namespace

int main(int argc, char** argv, char** envp) {
  EXPECT(argc == 6);
  if (argc != 6) {
    printf("cowchild: argc %d\n", argc);
    return 1;
  }
  EXPECT(streq(argv[0], "cowchild"));
  EXPECT(streq(argv[1], "alpha"));
  EXPECT(streq(argv[2], "beta gamma"));
  EXPECT(argv[6] == nullptr);
  EXPECT(envp == pvk_environ);
  EXPECT(streq(envp[0], "PVK_TEST=cowchild"));
  EXPECT(streq(envp[1], "SECOND=2"));
  EXPECT(envp[1] && envp[2] == nullptr);

  // A fresh image.
  EXPECT(g_initialised == 12345);
  EXPECT(streq(g_rodata, "cowchild"));
  uint64_t nonzero = 0;
  for (uint64_t w : g_zeroed) nonzero |= w;
  EXPECT(nonzero == 0);
  g_initialised = 1;  // .data and .bss are writable
  for (auto& w : g_zeroed) w = 0x5a5a;
  EXPECT(g_initialised == 1 && g_zeroed[2047] == 0x5a5a);

  uint64_t addr = 0, fd = 0, code = 0;
  EXPECT(parse_u64(argv[3], &addr));
  EXPECT(parse_u64(argv[4], &fd));
  EXPECT(parse_u64(argv[5], &code));

  // The caller's mapping is gone: the kernel refuses to read from it.
  int q[2];
  EXPECT(pipe(q) == 0);
  if (addr) EXPECT(write(q[1], reinterpret_cast<const void*>(addr), 8) == -EFAULT);
  close(q[0]);
  close(q[1]);

  // Signal dispositions across execve.
  KernelSigaction old{};
  EXPECT(rt_sigaction(SIGUSR1, nullptr, &old) == 0);
  EXPECT(old.handler == SIG_DFL);
  EXPECT(rt_sigaction(SIGPIPE, nullptr, &old) == 0);
  EXPECT(old.handler == SIG_IGN);

  char msg[160];
  size_t n;
  if (g_failures)
    n = pvk::format(msg, sizeof msg, "pid=%ld FAIL %s\n", getpid(), g_first);
  else
    n = pvk::format(msg, sizeof msg, "pid=%ld ok\n", getpid());
  EXPECT(write_all(static_cast<int>(fd), msg, n < sizeof msg ? n : sizeof msg - 1) > 0);
  return g_failures ? 1 : static_cast<int>(code);
}
