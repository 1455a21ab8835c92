/* Vector registers held across a system call: the one place these test
 * programs touch xmm/ymm registers directly. A C compiler may keep its own
 * values in any vector register between two statements, so loading a
 * pattern, making the call and reading the registers back all happen in
 * one asm block (vregs.c): only the kernel can have changed them. */
#ifndef PVK_GLIBC_VREGS_H
#define PVK_GLIBC_VREGS_H

#include <stdint.h>

#define VREGS_COUNT 16
#define VREGS_MAX_WIDTH 32

/* All sixteen registers, each as its widest form (ymm); SSE-only runs use
 * the first 16 bytes of each. */
struct vregs {
  uint8_t reg[VREGS_COUNT][VREGS_MAX_WIDTH];
} __attribute__((aligned(32)));

/* 32 (ymm) where CPUID and XCR0 say the kernel has enabled AVX, else 16. */
int vregs_width(void);

/* A pattern of its own for every seed. */
void vregs_fill(struct vregs *v, uint32_t seed);

/* Loads `in` into the registers, makes system call `nr` with up to three
 * arguments, stores the registers into `out`; returns the call's result
 * (-errno on failure, as the raw ABI gives it). */
long vregs_across_syscall(int width, const struct vregs *in, struct vregs *out, long nr, long a0, long a1, long a2);

/* The first register whose `width` bytes differ, or -1 if none. */
int vregs_first_difference(int width, const struct vregs *a, const struct vregs *b);

/* A check's outcome: a register number (0..15) that changed, or one of these. */
#define VREGS_CALL_FAILED (VREGS_COUNT)
#define VREGS_MODE_CHANGED (VREGS_COUNT + 1)
const char *vregs_what_changed(int bad);

#endif
