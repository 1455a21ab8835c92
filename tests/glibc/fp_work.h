/* Arithmetic whose every step rounds, so its result depends on the
 * rounding mode in MXCSR (double) and in the x87 control word (long
 * double): a context switch or signal that lost either shows up in the
 * last bits. Only + - * / and sqrt, which IEEE 754 rounds exactly on every
 * CPU (the transcendental functions of libm may differ by CPU). The
 * double stays positive and the long double negative, so between them
 * the four rounding modes give four different results. */
#ifndef PVK_GLIBC_FP_WORK_H
#define PVK_GLIBC_FP_WORK_H

struct fp_acc {
  double d;
  long double ld;
};

void fp_start(struct fp_acc *a);
/* Step k of the computation. */
void fp_step(struct fp_acc *a, int k);
/* The whole computation of `steps` steps in one go, in the caller's
 * current rounding mode: the reference an interrupted run must match. */
struct fp_acc fp_reference(int steps);
int fp_same(const struct fp_acc *a, const struct fp_acc *b);

/* The four IEEE rounding modes, and a name for each. */
extern const int fp_modes[4];
const char *fp_mode_name(int mode);

#endif
