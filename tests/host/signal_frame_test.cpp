// The signal frame's layout against the C library's view of Linux's (glibc's
// struct sigcontext, _fpstate, _fpx_sw_bytes and ucontext_t, which static
// programs are built against), and the checks rt_sigreturn applies to an FP
// image.
#include "base/signal_frame.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ucontext.h>

#include <vector>

namespace pvk::sigframe {
namespace {

TEST(SignalFrame, LayoutIsLinuxs) {
  EXPECT_EQ(kFpXstateMagic1, FP_XSTATE_MAGIC1);
  EXPECT_EQ(kFpXstateMagic2, FP_XSTATE_MAGIC2);
  EXPECT_EQ(kMagic2Size, FP_XSTATE_MAGIC2_SIZE);
  EXPECT_EQ(sizeof(FpxSwBytes), sizeof(struct _fpx_sw_bytes));
  EXPECT_EQ(offsetof(FpxSwBytes, extended_size), offsetof(struct _fpx_sw_bytes, extended_size));
  EXPECT_EQ(offsetof(FpxSwBytes, xfeatures), offsetof(struct _fpx_sw_bytes, xstate_bv));
  EXPECT_EQ(offsetof(FpxSwBytes, xstate_size), offsetof(struct _fpx_sw_bytes, xstate_size));
  EXPECT_EQ(kSwBytesOffset, offsetof(struct _fpstate, __glibc_reserved1) + 12 * 4);  // Linux's sw_reserved
  EXPECT_EQ(kMxcsrOffset, offsetof(struct _fpstate, mxcsr));
  EXPECT_EQ(kMxcsrMaskOffset, offsetof(struct _fpstate, mxcr_mask));
  EXPECT_EQ(kLegacySize, sizeof(struct _fpstate));
  EXPECT_EQ(kXstateBvOffset, offsetof(struct _xstate, xstate_hdr));

  EXPECT_EQ(sizeof(SigContext), sizeof(struct sigcontext));
  EXPECT_EQ(offsetof(SigContext, r8), offsetof(struct sigcontext, r8));
  EXPECT_EQ(offsetof(SigContext, rdi), offsetof(struct sigcontext, rdi));
  EXPECT_EQ(offsetof(SigContext, rax), offsetof(struct sigcontext, rax));
  EXPECT_EQ(offsetof(SigContext, rsp), offsetof(struct sigcontext, rsp));
  EXPECT_EQ(offsetof(SigContext, rip), offsetof(struct sigcontext, rip));
  EXPECT_EQ(offsetof(SigContext, eflags), offsetof(struct sigcontext, eflags));
  EXPECT_EQ(offsetof(SigContext, cs), offsetof(struct sigcontext, cs));
  EXPECT_EQ(offsetof(SigContext, ss), offsetof(struct sigcontext, __pad0));
  EXPECT_EQ(offsetof(SigContext, trapno), offsetof(struct sigcontext, trapno));
  EXPECT_EQ(offsetof(SigContext, oldmask), offsetof(struct sigcontext, oldmask));
  EXPECT_EQ(offsetof(SigContext, fpstate), offsetof(struct sigcontext, __fpstate_word));

  EXPECT_EQ(offsetof(UContext, uc_mcontext), offsetof(ucontext_t, uc_mcontext));
  EXPECT_EQ(offsetof(UContext, uc_sigmask), offsetof(ucontext_t, uc_sigmask));
  EXPECT_EQ(offsetof(UContext, uc_mcontext) + offsetof(SigContext, fpstate),
            offsetof(ucontext_t, uc_mcontext) + offsetof(mcontext_t, fpregs));
  EXPECT_EQ(offsetof(UContext, uc_mcontext) + offsetof(SigContext, rip),
            offsetof(ucontext_t, uc_mcontext) + REG_RIP * sizeof(greg_t));
}

constexpr FpFormat kAvx{true, 0x7, 832, 0xffff};
constexpr FpFormat kFx{false, 0, 512, 0xffbf};

TEST(SignalFrame, PlacementAlignsImageAndFrame) {
  for (uint64_t rsp : {0x7ffffffde000ull, 0x7ffffffde008ull, 0x7ffffffde3f1ull}) {
    for (const FpFormat& f : {kAvx, kFx}) {
      const Placement p = place(rsp, f);
      EXPECT_EQ(p.fpstate % 64, 0u);
      EXPECT_LE(p.fpstate + image_size(f), rsp - 128);  // the red zone untouched
      EXPECT_EQ((p.frame + 8) % 16, 0u);                // as after a call
      EXPECT_LE(p.frame + sizeof(RtSigframe), p.fpstate);
    }
  }
}

// A valid image of format f as the kernel writes it.
std::vector<uint8_t> image(const FpFormat& f) {
  std::vector<uint8_t> b(image_size(f), 0);
  const uint32_t mxcsr = kMxcsrDefault;
  memcpy(&b[kMxcsrOffset], &mxcsr, 4);
  if (f.xsave) {
    const FpxSwBytes sw = sw_bytes(f);
    memcpy(&b[kSwBytesOffset], &sw, sizeof sw);
    const uint64_t bv = 3;
    memcpy(&b[kXstateBvOffset], &bv, 8);
    memcpy(&b[f.xstate_size], &kFpXstateMagic2, 4);
  }
  return b;
}

TEST(SignalFrame, ChecksTheImage) {
  EXPECT_EQ(check_image(image(kAvx).data(), kAvx), FpCheck::Full);
  EXPECT_EQ(check_image(image(kFx).data(), kFx), FpCheck::Legacy);

  auto bad_mxcsr = image(kAvx);
  bad_mxcsr[kMxcsrOffset + 3] = 0x80;  // bit 31, outside every mask
  EXPECT_EQ(check_image(bad_mxcsr.data(), kAvx), FpCheck::Bad);
  auto bad_mxcsr_fx = image(kFx);
  bad_mxcsr_fx[kMxcsrOffset] |= 0x40;  // DAZ, outside this CPU's mask
  EXPECT_EQ(check_image(bad_mxcsr_fx.data(), kFx), FpCheck::Bad);

  auto bad_bv = image(kAvx);
  bad_bv[kXstateBvOffset] |= 0x8;  // a feature not in XCR0
  EXPECT_EQ(check_image(bad_bv.data(), kAvx), FpCheck::Bad);
  auto compacted = image(kAvx);
  compacted[kXcompBvOffset + 7] = 0x80;
  EXPECT_EQ(check_image(compacted.data(), kAvx), FpCheck::Bad);
  auto reserved = image(kAvx);
  reserved[kLegacySize + 40] = 1;
  EXPECT_EQ(check_image(reserved.data(), kAvx), FpCheck::Bad);

  // No magic (or a wrong size, or no magic2): only the FXSAVE part, and the
  // header is rewritten so whatever it held cannot fault.
  auto no_magic = image(kAvx);
  no_magic[kSwBytesOffset] ^= 1;
  no_magic[kXstateBvOffset] = 0xff;
  EXPECT_EQ(check_image(no_magic.data(), kAvx), FpCheck::Legacy);
  make_legacy(no_magic.data(), kAvx);
  uint64_t bv;
  memcpy(&bv, &no_magic[kXstateBvOffset], 8);
  EXPECT_EQ(bv, 3u);
  auto no_magic2 = image(kAvx);
  no_magic2[kAvx.xstate_size] ^= 1;
  EXPECT_EQ(check_image(no_magic2.data(), kAvx), FpCheck::Legacy);
}

TEST(SignalFrame, ChecksThePointer) {
  constexpr uint64_t top = 0x00007ffffffff000;
  EXPECT_TRUE(fpstate_pointer_ok(0x7ffffffde000, kAvx, top));
  EXPECT_FALSE(fpstate_pointer_ok(0x7ffffffde010, kAvx, top));  // XRSTOR wants 64
  EXPECT_TRUE(fpstate_pointer_ok(0x7ffffffde010, kFx, top));
  EXPECT_FALSE(fpstate_pointer_ok(0x7ffffffde008, kFx, top));
  EXPECT_FALSE(fpstate_pointer_ok(top - 64, kAvx, top));  // runs past the top
  EXPECT_FALSE(fpstate_pointer_ok(0xffff800000000000, kAvx, top));
  EXPECT_FALSE(fpstate_pointer_ok(~uint64_t{63}, kAvx, top));  // would wrap
}

}  // namespace
}  // namespace pvk::sigframe
