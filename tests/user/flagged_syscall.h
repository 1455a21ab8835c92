// A system call entered with chosen RFLAGS bits (DF, AC, NT, TF, IOPL
// attempts) ORed in right before `syscall`, shared by the hostile suite and
// the fuzzer: the kernel must not care what the caller left in RFLAGS. DF,
// AC, NT and TF are cleared again right after, so the caller's own code
// runs with the ABI's flags.
#pragma once
#include <stdint.h>

namespace pvk::user {

inline constexpr uint64_t kFlagTF = 1u << 8, kFlagDF = 1u << 10, kFlagIOPL = 3u << 12, kFlagNT = 1u << 14,
                          kFlagAC = 1u << 18;
// What the callers clear again right after the call.
inline constexpr uint64_t kFlagsClearedAfter = kFlagDF | kFlagAC | kFlagNT | kFlagTF;

inline int64_t flagged_syscall6(uint64_t flags, uint64_t nr, const uint64_t (&a)[6]) {
  int64_t r;
  register uint64_t r10 asm("r10") = a[3];
  register uint64_t r8 asm("r8") = a[4];
  register uint64_t r9 asm("r9") = a[5];
  asm volatile(
      "pushfq\n\t"
      "orq %[fl], (%%rsp)\n\t"
      "popfq\n\t"
      "syscall\n\t"
      "pushfq\n\t"
      "andq %[clr], (%%rsp)\n\t"
      "popfq\n\t"
      "cld"
      : "=a"(r), "+r"(r10), "+r"(r8), "+r"(r9)
      : "a"(nr), "D"(a[0]), "S"(a[1]), "d"(a[2]), [fl] "r"(flags),
        [clr] "r"(~kFlagsClearedAfter)
      : "rcx", "r11", "memory", "cc");
  return r;
}

inline int64_t flagged_syscall(uint64_t flags, uint64_t nr, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0) {
  const uint64_t a[6] = {a1, a2, a3, 0, 0, 0};
  return flagged_syscall6(flags, nr, a);
}

}  // namespace pvk::user
