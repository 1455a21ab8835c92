// fpuchild: execve'd by proctest's fpu_exec test, whose caller left MXCSR,
// the x87 control word and the vector registers changed. A new program
// starts from the clean state: MXCSR 0x1f80, FCW 0x37f, xmm8..15 zero
// (the ones no code before main touches). Exits 0 if so, else 1.
#include "bench/libc/user.h"

using namespace pvk::user;

int main(int, char**, char**) {
  uint32_t mxcsr;
  uint16_t fcw;
  alignas(16) uint8_t regs[8 * 16];
  asm volatile(
      "stmxcsr %0\n\tfnstcw %1\n\t"
      "movdqu %%xmm8, 0(%2)\n\tmovdqu %%xmm9, 16(%2)\n\tmovdqu %%xmm10, 32(%2)\n\tmovdqu %%xmm11, 48(%2)\n\t"
      "movdqu %%xmm12, 64(%2)\n\tmovdqu %%xmm13, 80(%2)\n\tmovdqu %%xmm14, 96(%2)\n\tmovdqu %%xmm15, 112(%2)"
      : "=m"(mxcsr), "=m"(fcw)
      : "r"(regs)
      : "memory");
  bool zero = true;
  for (uint8_t b : regs) zero &= b == 0;
  if (mxcsr != 0x1f80 || fcw != 0x37f || !zero) {
    printf("fpuchild: FAIL mxcsr 0x%x fcw 0x%x xmm8-15 %s\n", mxcsr, fcw, zero ? "zero" : "not zero");
    return 1;
  }
  return 0;
}
