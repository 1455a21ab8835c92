/* See vregs.h. */
#include "vregs.h"

#include <cpuid.h>
#include <string.h>

int vregs_width(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 16;
  /* AVX in the CPU and OSXSAVE (the kernel turned XSAVE on): only then is
   * XGETBV allowed, and it says whether the kernel enabled the ymm state. */
  if (!(c & bit_AVX) || !(c & bit_OSXSAVE)) return 16;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 6) == 6 ? 32 : 16;
}

void vregs_fill(struct vregs *v, uint32_t seed) {
  uint64_t x = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  for (int r = 0; r < VREGS_COUNT; ++r)
    for (int i = 0; i < VREGS_MAX_WIDTH; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      v->reg[r][i] = (uint8_t)x;
    }
}

int vregs_first_difference(int width, const struct vregs *a, const struct vregs *b) {
  for (int r = 0; r < VREGS_COUNT; ++r)
    if (memcmp(a->reg[r], b->reg[r], (size_t)width)) return r;
  return -1;
}

const char *vregs_what_changed(int bad) {
  static const char *const names[] = {"register 0", "register 1",  "register 2",  "register 3",  "register 4",
                                      "register 5", "register 6",  "register 7",  "register 8",  "register 9",
                                      "register 10", "register 11", "register 12", "register 13", "register 14",
                                      "register 15", "the system call failed", "the rounding mode"};
  return bad >= 0 && bad <= VREGS_MODE_CHANGED ? names[bad] : "nothing";
}

/* The registers are loaded and stored at a 32-byte stride in both forms.
 * syscall itself clobbers only rcx and r11 (and rax, the result). */
#define VREGS_EACH(m) m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7) m(8) m(9) m(10) m(11) m(12) m(13) m(14) m(15)
#define SSE_LOAD(n) "movdqu " #n "*32(%[in]), %%xmm" #n "\n\t"
#define SSE_STORE(n) "movdqu %%xmm" #n ", " #n "*32(%[out])\n\t"
#define AVX_LOAD(n) "vmovdqu " #n "*32(%[in]), %%ymm" #n "\n\t"
#define AVX_STORE(n) "vmovdqu %%ymm" #n ", " #n "*32(%[out])\n\t"
#define VREGS_CLOBBERS                                                                                                \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", \
      "xmm14", "xmm15"

long vregs_across_syscall(int width, const struct vregs *in, struct vregs *out, long nr, long a0, long a1, long a2) {
  long ret = nr;
  if (width == 32)
    /* vzeroupper at the end: the C code after runs SSE instructions, which
     * would otherwise pay a state transition on some CPUs. */
    __asm__ volatile(VREGS_EACH(AVX_LOAD) "syscall\n\t" VREGS_EACH(AVX_STORE) "vzeroupper"
                     : "+a"(ret)
                     : [in] "r"(in), [out] "r"(out), "D"(a0), "S"(a1), "d"(a2)
                     : "rcx", "r11", "memory", VREGS_CLOBBERS);
  else
    __asm__ volatile(VREGS_EACH(SSE_LOAD) "syscall\n\t" VREGS_EACH(SSE_STORE)
                     : "+a"(ret)
                     : [in] "r"(in), [out] "r"(out), "D"(a0), "S"(a1), "d"(a2)
                     : "rcx", "r11", "memory", VREGS_CLOBBERS);
  return ret;
}
