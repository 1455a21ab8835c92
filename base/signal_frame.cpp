// The checks rt_sigreturn applies to a user's FP image (signal_frame.h).
#include "base/signal_frame.h"

namespace pvk::sigframe {
namespace {

uint32_t load32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t load64(const uint8_t* p) { return (uint64_t{load32(p + 4)} << 32) | load32(p); }
void store64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

bool fpstate_pointer_ok(uint64_t fpstate, const FpFormat& f, uint64_t user_top) {
  const uint64_t align = f.xsave ? 64 : 16;
  if (fpstate & (align - 1)) return false;
  const uint64_t n = image_size(f);
  return fpstate < user_top && n <= user_top - fpstate;
}

FpCheck check_image(const uint8_t* image, const FpFormat& f) {
  const uint32_t mxcsr = load32(image + kMxcsrOffset);
  if (mxcsr & ~f.mxcsr_mask) return FpCheck::Bad;
  if (!f.xsave) return FpCheck::Legacy;
  // Linux's check_xstate_in_sigframe: no magic, or sizes that do not match
  // this kernel's, and the image is taken as FXSAVE only.
  const uint8_t* sw = image + kSwBytesOffset;
  if (load32(sw) != kFpXstateMagic1 || load32(sw + 16) != f.xstate_size ||
      load32(sw + 4) != f.xstate_size + kMagic2Size || load32(image + f.xstate_size) != kFpXstateMagic2)
    return FpCheck::Legacy;
  if (load64(image + kXstateBvOffset) & ~f.xfeatures) return FpCheck::Bad;
  for (uint32_t off = kXcompBvOffset; off < kLegacySize + kHeaderSize; ++off)
    if (image[off]) return FpCheck::Bad;
  return FpCheck::Full;
}

void make_legacy(uint8_t* image, const FpFormat& f) {
  if (!f.xsave) return;
  for (uint32_t off = kLegacySize; off < kLegacySize + kHeaderSize; ++off) image[off] = 0;
  store64(image + kXstateBvOffset, (kXfeatureFp | kXfeatureSse) & f.xfeatures);
}

}  // namespace pvk::sigframe
