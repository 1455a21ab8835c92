// The signal frame as Linux x86-64 lays it out (the user ABI glibc and
// static programs rely on), and the checks rt_sigreturn applies to the FP
// image a user hands back. Pure data and logic: the kernel's delivery and
// sigreturn (kernel/proc/signals.cpp, signal_fpu.cpp) and the host test
// (tests/host/signal_frame_test.cpp, which compares the layout with
// Linux's own uapi headers) both use it.
//
// On the user stack, from the handler's %rsp up:
//   RtSigframe { restorer; UContext uc; SigInfo info; }   (16-byte aligned + 8)
//   ... padding ...
//   the FP image (64-byte aligned): the FXSAVE/XSAVE standard-format area,
//   whose bytes 464..511 (ignored by the CPU) hold FpxSwBytes, and, right
//   after xstate_size bytes, FP_XSTATE_MAGIC2 (4 bytes).
// uc.mcontext.fpstate points at the image (0: none, the init state).
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace pvk::sigframe {

inline constexpr uint32_t kFpXstateMagic1 = 0x46505853;  // "SXPF": the image is an XSAVE area
inline constexpr uint32_t kFpXstateMagic2 = 0x46505845;  // "EXPF": after xstate_size bytes
inline constexpr uint32_t kMagic2Size = 4;
inline constexpr uint64_t kUcFpXstate = 0x1;  // uc_flags: the image is an XSAVE area
inline constexpr uint64_t kUcSigcontextSs = 0x2;
inline constexpr uint64_t kUcStrictRestoreSs = 0x4;

inline constexpr uint32_t kLegacySize = 512;  // the FXSAVE area
inline constexpr uint32_t kHeaderSize = 64;   // the XSAVE header, at 512
inline constexpr uint32_t kSwBytesOffset = 464;
inline constexpr uint32_t kMxcsrOffset = 24;
inline constexpr uint32_t kMxcsrMaskOffset = 28;
inline constexpr uint32_t kXstateBvOffset = 512;
inline constexpr uint32_t kXcompBvOffset = 520;
inline constexpr uint32_t kMxcsrDefault = 0x1f80;
inline constexpr uint16_t kFcwDefault = 0x37f;
inline constexpr uint64_t kXfeatureFp = 1, kXfeatureSse = 2;

struct FpxSwBytes {
  uint32_t magic1;
  uint32_t extended_size;  // xstate_size + kMagic2Size
  uint64_t xfeatures;      // the features saved (XCR0)
  uint32_t xstate_size;    // the area's size without magic2
  uint32_t padding[7];
};
static_assert(sizeof(FpxSwBytes) == 48);

struct SigContext {
  uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
  uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
  uint16_t cs, gs, fs, ss;
  uint64_t err, trapno, oldmask, cr2;
  uint64_t fpstate;  // user address of the FP image, or 0
  uint64_t reserved1[8];
};
static_assert(sizeof(SigContext) == 256);

struct StackT {
  uint64_t ss_sp;
  int32_t ss_flags;
  uint32_t pad;
  uint64_t ss_size;
};

struct UContext {
  uint64_t uc_flags;
  uint64_t uc_link;
  StackT uc_stack;
  SigContext uc_mcontext;
  uint64_t uc_sigmask;  // the kernel's sigset_t: 64 signals
};
static_assert(sizeof(UContext) == 304);

struct SigInfo {
  int32_t si_signo, si_errno, si_code, pad;
  uint8_t fields[112];
};
static_assert(sizeof(SigInfo) == 128);

struct RtSigframe {
  uint64_t pretcode;  // the restorer: the handler's return address
  UContext uc;
  SigInfo info;
};
static_assert(offsetof(RtSigframe, uc) == 8 && offsetof(RtSigframe, info) == 312);

// How the kernel saves FP state: the image format a frame carries.
struct FpFormat {
  bool xsave;            // XSAVE standard format (else FXSAVE, 512 bytes)
  uint64_t xfeatures;    // XCR0
  uint32_t xstate_size;  // bytes of the area (512 for FXSAVE)
  uint32_t mxcsr_mask;   // the MXCSR bits the CPU accepts
};

// Bytes of the FP image in a frame (with magic2 for XSAVE).
constexpr uint32_t image_size(const FpFormat& f) { return f.xsave ? f.xstate_size + kMagic2Size : kLegacySize; }

// Where the frame and the FP image go for an interrupted %rsp (Linux's
// order: skip the red zone, the image 64-byte aligned, the frame below it
// so that the handler's %rsp + 8 is 16-byte aligned).
struct Placement {
  uint64_t frame;
  uint64_t fpstate;
};
constexpr Placement place(uint64_t rsp, const FpFormat& f) {
  const uint64_t fp = (rsp - 128 - image_size(f)) & ~uint64_t{63};
  const uint64_t frame = ((fp - sizeof(RtSigframe)) & ~uint64_t{15}) - 8;
  return {frame, fp};
}

// The software bytes the kernel writes into an image at delivery.
constexpr FpxSwBytes sw_bytes(const FpFormat& f) {
  FpxSwBytes s{};
  if (!f.xsave) return s;
  s.magic1 = kFpXstateMagic1;
  s.extended_size = f.xstate_size + kMagic2Size;
  s.xfeatures = f.xfeatures;
  s.xstate_size = f.xstate_size;
  return s;
}

enum class FpCheck : uint8_t {
  Full,    // the whole XSAVE image may be restored as it is
  Legacy,  // only the FXSAVE part (no valid magic: Linux's fx_only)
  Bad,     // refuse: SIGSEGV
};

// Where the image may be read from: a user address, aligned as XRSTOR (64)
// or FXRSTOR (16) wants, whose image_size bytes lie below user_top.
bool fpstate_pointer_ok(uint64_t fpstate, const FpFormat& f, uint64_t user_top);

// Checks an image copied in from user memory (image_size(f) bytes; magic2
// is read at xstate_size) and, for Legacy, says what the kernel must fix
// before restoring. Refused: MXCSR bits outside the mask; for an XSAVE
// image with a valid magic, XSTATE_BV bits outside XCR0, a non-zero
// XCOMP_BV (the compacted form) or non-zero reserved header bytes — each
// would make XRSTOR fault.
FpCheck check_image(const uint8_t* image, const FpFormat& f);

// Makes a Legacy image a valid XSAVE image of x87 and SSE only (the header
// rewritten; the extended state goes to its init state).
void make_legacy(uint8_t* image, const FpFormat& f);

}  // namespace pvk::sigframe
