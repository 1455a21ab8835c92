// exectest: hostile execve from user mode (init=exectest, booted with the
// tree tests/boot/exec_boot_test.cpp crafts under /bad). Every refused
// exec must return its errno to the caller, which goes on with its memory,
// descriptors and pid as they were: a directory (EACCES), a file that is
// neither ELF nor `#!` (ENOEXEC), ELF files cut short, with overlapping
// segments, with a segment in the kernel's half, or dynamic (ENOEXEC),
// argv/envp arrays and strings that do not read (EFAULT), and strings over
// Linux's limits (E2BIG). Then one record, and a last exec that must work
// with large arguments: `hello` reports the argc it got.
#include "base/console/record.h"
#include "bench/libc/files.h"
#include "tests/user/checks.h"
#include "bench/libc/thread.h"

using namespace pvk;
using namespace pvk::user;
using namespace pvk::user::checks;

namespace {

constexpr uint64_t kPg = 4096;
constexpr uint64_t kMaxArgStrlen = 32 * kPg;   // one string with its NUL
constexpr uint64_t kMaxArgBytes = 2u << 20;      // strings and pointers together
constexpr uint64_t kKernelAddr = 0xffff800000000000;

uint64_t g_canary = 0x1234567890abcdef;  // in the data segment
volatile uint64_t* g_heap = nullptr;      // an anonymous page
int g_pipe[2] = {-1, -1};
int64_t g_pid = 0;

// What a failed exec must leave as it was.
void check_intact(int line) {
  volatile uint64_t local = 0x5eed5eed;
  bool ok = g_canary == 0x1234567890abcdef && g_heap[0] == 0xfeedface && g_heap[511] == 0xcafef00d &&
            getpid() == g_pid && local == 0x5eed5eed;
  char c = 'p';
  ok &= write(g_pipe[1], &c, 1) == 1;
  char back = 0;
  ok &= read(g_pipe[0], &back, 1) == 1 && back == 'p';
  check(ok, line, "the caller is intact after a refused exec", 0);
}

const char* const kArgv[] = {"x", nullptr};
const char* const kEnvp[] = {"A=1", nullptr};

#define EXPECT_EXEC(path, argv, envp, err)               \
  do {                                                   \
    CHECK_EQ(execve((path), (argv), (envp)), -(err));    \
    check_intact(__LINE__);                              \
  } while (0)

void bad_files() {
  // The control: the host's ELF builder makes files that run (this one
  // exits 42), so each file below is refused for its one flaw.
  const int64_t child = fork();
  if (child == 0) {
    execve("/bad/good", kArgv, kEnvp);
    exit_group(1);
  }
  int status = -1;
  CHECK_EQ(wait4(child, &status, 0), child);
  CHECK_EQ(status, 42 << 8);
  EXPECT_EXEC("/bad/dir", kArgv, kEnvp, EACCES);
  EXPECT_EXEC("/bad/noexec", kArgv, kEnvp, EACCES);     // no execute bit
  EXPECT_EXEC("/bad/text", kArgv, kEnvp, ENOEXEC);      // neither ELF nor #!
  EXPECT_EXEC("/bad/empty", kArgv, kEnvp, ENOEXEC);
  EXPECT_EXEC("/bad/truncated", kArgv, kEnvp, ENOEXEC);  // ELF header cut short
  EXPECT_EXEC("/bad/short_phdrs", kArgv, kEnvp, ENOEXEC);  // headers past the end of the file
  EXPECT_EXEC("/bad/short_segment", kArgv, kEnvp, ENOEXEC);  // a segment's bytes past the end
  EXPECT_EXEC("/bad/overlap", kArgv, kEnvp, ENOEXEC);   // two segments share a page
  EXPECT_EXEC("/bad/kernel", kArgv, kEnvp, ENOEXEC);    // a segment in the kernel's half
  EXPECT_EXEC("/bad/wrap", kArgv, kEnvp, ENOEXEC);      // a segment that wraps
  EXPECT_EXEC("/bad/entry", kArgv, kEnvp, ENOEXEC);     // entry outside the code
  EXPECT_EXEC("/bad/dynamic", kArgv, kEnvp, ENOEXEC);   // PT_INTERP
  EXPECT_EXEC("/bad/script_to_dynamic", kArgv, kEnvp, ENOEXEC);  // #! naming a dynamic ELF
  EXPECT_EXEC("/bad/script_loop", kArgv, kEnvp, ELOOP);          // #! naming a #! script
  EXPECT_EXEC("/bad/missing", kArgv, kEnvp, ENOENT);
}

// A mapped region followed by a page nobody may read.
uint8_t* map_with_guard(uint64_t bytes) {
  const uint64_t len = (bytes + kPg - 1) / kPg * kPg;
  auto* p = static_cast<uint8_t*>(map_anon(len + kPg));
  CHECK(p != nullptr);
  CHECK_EQ(mprotect(p + len, kPg, PROT_NONE), 0);
  return p;
}

void bad_pointers() {
  // An unmapped page (mapped, then unmapped).
  auto* gone = static_cast<const char**>(map_anon(kPg));
  CHECK_EQ(munmap(gone, kPg), 0);
  EXPECT_EXEC("hello", gone, kEnvp, EFAULT);                      // argv itself
  EXPECT_EXEC("hello", kArgv, gone, EFAULT);                      // envp itself
  EXPECT_EXEC("hello", reinterpret_cast<const char* const*>(kKernelAddr), kEnvp, EFAULT);
  const char* argv_gone[] = {"x", reinterpret_cast<const char*>(gone), nullptr};
  EXPECT_EXEC("hello", argv_gone, kEnvp, EFAULT);                 // argv[1]
  const char* envp_kernel[] = {"A=1", "B=2", reinterpret_cast<const char*>(kKernelAddr), nullptr};
  EXPECT_EXEC("hello", kArgv, envp_kernel, EFAULT);               // envp[2]
  const char* argv_low[] = {"x", reinterpret_cast<const char*>(16), nullptr};
  EXPECT_EXEC("hello", argv_low, kEnvp, EFAULT);                  // the null page
  const char* argv_noncanon[] = {"x", reinterpret_cast<const char*>(0x0000800000000000), nullptr};
  EXPECT_EXEC("hello", argv_noncanon, kEnvp, EFAULT);

  // A string that runs into the guard page without a NUL.
  uint8_t* s = map_with_guard(kPg);
  memset(s, 'x', kPg);
  const char* argv_run[] = {"x", reinterpret_cast<const char*>(s + kPg - 100), nullptr};
  EXPECT_EXEC("hello", argv_run, kEnvp, EFAULT);
  // An array whose terminator would be past its page, aligned and not.
  auto* arr = map_with_guard(kPg);
  auto** tail = reinterpret_cast<const char**>(arr + kPg - 16);
  tail[0] = "x", tail[1] = "y";
  EXPECT_EXEC("hello", tail, kEnvp, EFAULT);
  memset(arr + kPg - 4, 0, 4);  // a NULL pointer whose last 4 bytes would be in the guard page
  EXPECT_EXEC("hello", reinterpret_cast<const char* const*>(arr + kPg - 12), kEnvp, EFAULT);
  CHECK_EQ(munmap(s, 2 * kPg), 0);
  CHECK_EQ(munmap(arr, 2 * kPg), 0);
}

void too_big() {
  // One string one byte over MAX_ARG_STRLEN (its NUL the 32 pages + 1st byte).
  auto* big = static_cast<char*>(map_anon(kMaxArgStrlen + kPg));
  CHECK(big != nullptr);
  memset(big, 'b', kMaxArgStrlen);
  big[kMaxArgStrlen] = 0;
  const char* argv_long[] = {"x", big, nullptr};
  EXPECT_EXEC("hello", argv_long, kEnvp, E2BIG);
  EXPECT_EXEC("hello", kArgv, argv_long, E2BIG);  // the same in envp
  // Strings of the largest size, 17 of them: more than 2 MiB in all.
  big[kMaxArgStrlen - 1] = 0;
  const char* many_big[18];
  for (int i = 0; i < 17; ++i) many_big[i] = big;
  many_big[17] = nullptr;
  EXPECT_EXEC("hello", many_big, kEnvp, E2BIG);
  // Pointers alone reaching the bound: 2 MiB / 8 of them, each to "".
  const uint64_t n = kMaxArgBytes / 8;
  auto** ptrs = static_cast<const char**>(map_anon((n + 1) * 8));
  CHECK(ptrs != nullptr);
  for (uint64_t i = 0; i < n; ++i) ptrs[i] = "";
  ptrs[n] = nullptr;
  EXPECT_EXEC("hello", ptrs, kEnvp, E2BIG);
  // The same array split between argv and envp.
  ptrs[n / 2] = nullptr;
  EXPECT_EXEC("hello", ptrs, ptrs + n / 2 + 1, E2BIG);
  CHECK_EQ(munmap(ptrs, (n + 1) * 8), 0);
  CHECK_EQ(munmap(big, kMaxArgStrlen + kPg), 0);
}

// A refused exec is refused before the caller's other threads end (they
// end only once exec cannot fail for the file's sake): a thread counting
// keeps counting across every kind of refusal.
volatile uint64_t g_count = 0;
volatile bool g_stop = false;

void counter(void*) {
  while (!g_stop) {
    g_count = g_count + 1;
    sched_yield();
  }
  thread_exit(0);
}

bool still_counting() {
  const uint64_t seen = g_count;
  for (unsigned i = 0; i < 100000; ++i) {
    if (g_count != seen) return true;
    sched_yield();
  }
  return false;
}

void threads_survive() {
  Thread t;
  CHECK(thread_create(&t, counter, nullptr) > 0);  // its tid
  CHECK(still_counting());
  const char* gone[] = {"x", reinterpret_cast<const char*>(kKernelAddr), nullptr};
  CHECK_EQ(execve("/bad/text", kArgv, kEnvp), -ENOEXEC);
  CHECK(still_counting());
  CHECK_EQ(execve("/bad/dynamic", kArgv, kEnvp), -ENOEXEC);
  CHECK(still_counting());
  CHECK_EQ(execve("/bad/script_loop", kArgv, kEnvp), -ELOOP);
  CHECK(still_counting());
  CHECK_EQ(execve("/bad/overlap", kArgv, kEnvp), -ENOEXEC);
  CHECK(still_counting());
  CHECK_EQ(execve("hello", gone, kEnvp), -EFAULT);
  CHECK(still_counting());
  CHECK_EQ(execve("/bad/dir", kArgv, kEnvp), -EACCES);
  CHECK(still_counting());
  g_stop = true;
  CHECK_EQ(thread_join(&t), 0);
}

}  // namespace

int main(int, char**, char**) {
  g_program = "exectest";
  g_pid = getpid();
  g_heap = static_cast<volatile uint64_t*>(map_anon(kPg));
  g_heap[0] = 0xfeedface;
  g_heap[511] = 0xcafef00d;
  CHECK_EQ(pipe(g_pipe), 0);
  bad_files();
  threads_survive();
  bad_pointers();
  too_big();
  close(g_pipe[0]);
  close(g_pipe[1]);
  // The last exec works with large arguments: a string of the largest
  // size, 2000 more arguments and 500 environment strings (hello's record
  // says argc). Built in fresh memory; exec takes it all away.
  auto* longest = static_cast<char*>(map_anon(kMaxArgStrlen));
  memset(longest, 'L', kMaxArgStrlen - 1);
  longest[kMaxArgStrlen - 1] = 0;
  auto** argv = static_cast<const char**>(map_anon(2003 * 8));
  auto** envp = static_cast<const char**>(map_anon(501 * 8));
  argv[0] = "hello";
  argv[1] = longest;
  for (int i = 2; i < 2002; ++i) argv[i] = "arg";
  argv[2002] = nullptr;
  for (int i = 0; i < 500; ++i) envp[i] = "NAME=value";
  envp[500] = nullptr;
  Record("exectest").u64("checks", g_checks).u64("failures", g_failures);
  execve("hello", argv, envp);
  printf("exectest: the last exec failed\n");
  return 1;
}
