/* See fp_work.h. Built with -frounding-math, so the compiler neither folds
 * nor moves these operations across a change of rounding mode. */
#include "fp_work.h"

#include <fenv.h>
#include <math.h>
#include <string.h>

const int fp_modes[4] = {FE_TONEAREST, FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO};

const char *fp_mode_name(int mode) {
  switch (mode) {
    case FE_TONEAREST: return "nearest";
    case FE_DOWNWARD: return "downward";
    case FE_UPWARD: return "upward";
    case FE_TOWARDZERO: return "toward-zero";
  }
  return "?";
}

void fp_start(struct fp_acc *a) {
  a->d = 1.0 / 3.0;
  a->ld = -1.0L / 7.0L;
}

void fp_step(struct fp_acc *a, int k) {
  a->d = a->d * 1.0000001192092896 + 1.0 / (k + 3) - sqrt(k + 0.5) * 1e-3;
  a->ld = a->ld * 1.00000011920928955078125L - 1.0L / (k + 7) + sqrtl(k + 0.25L) / 1024;
}

struct fp_acc fp_reference(int steps) {
  struct fp_acc a;
  fp_start(&a);
  for (int k = 0; k < steps; ++k) fp_step(&a, k);
  return a;
}

/* Bit for bit: the long double's 80 bits (the rest of its 16 bytes is padding). */
int fp_same(const struct fp_acc *a, const struct fp_acc *b) {
  return memcmp(&a->d, &b->d, sizeof a->d) == 0 && memcmp(&a->ld, &b->ld, 10) == 0;
}
