// Each thread's FP/SIMD area: its life with the thread, the switch, and
// its image in signal frames (kernel/proc/fpu_state.h).
#include "kernel/proc/fpu_state.h"

#include "arch/fpu/fpu.h"
#include "base/abi.h"
#include "base/lib/kstring.h"
#include "base/signal_frame.h"
#include "kernel/proc/process.h"
#include "kernel/proc/process_parts.h"
#include "kernel/proc/user_copy.h"

namespace pvk {

// One area per process slot, in the kernel image rather than from the frame
// allocator: creating a thread or forking takes no frame for it, so neither
// gains a new way to fail (a fork or clone under frame exhaustion fails where
// it did before, no earlier). XSAVE wants 64-byte alignment; every area
// starts at a multiple of its size from an aligned base.
alignas(64) static uint8_t g_fpu_areas[proc::kMaxProcs][fpu::kAreaBytes];

ErrorOr<void> fpu_alloc(Process& p) {
  // Not written here: every new thread's first state is written whole
  // before it runs (fpu_state.h), and a fork that cleared it first paid
  // 844 instructions of its 71,600 for nothing.
  p.fpu = g_fpu_areas[&p - proc::g_procs];
  return {};
}

void fpu_release(Process& p) { p.fpu = nullptr; }

void fpu_copy_running(Process& child, Process& parent) {
  fpu::save(parent.fpu);
  memcpy(child.fpu, parent.fpu, fpu::config().size);
}

void fpu_exec_reset(Process& p) {
  fpu::write_init_image(p.fpu);
  if (&p == current()) fpu::restore(p.fpu);
}

void fpu_switch_out(Process& prev) {
  if (prev.fpu) fpu::save(prev.fpu);  // none: it has exited
}

void fpu_switch_in(Process& next) {
  if (next.fpu) fpu::restore(next.fpu);
}

ErrorOr<void> fpu_to_signal_frame(Process& p, uint64_t fpstate) {
  const sigframe::FpFormat fmt = fpu::frame_format();
  fpu::save(p.fpu);
  const sigframe::FpxSwBytes sw = sigframe::sw_bytes(fmt);
  TRY(copy_to_user(fpstate, p.fpu, sigframe::kSwBytesOffset));
  TRY(copy_to_user(fpstate + sigframe::kSwBytesOffset, &sw, sizeof sw));
  if (fmt.xsave) {
    TRY(copy_to_user(fpstate + sigframe::kLegacySize, p.fpu + sigframe::kLegacySize,
                     fmt.xstate_size - sigframe::kLegacySize));
    const uint32_t magic2 = sigframe::kFpXstateMagic2;
    TRY(copy_to_user(fpstate + fmt.xstate_size, &magic2, sizeof magic2));
  }
  // The handler starts from the clean state (Linux's too).
  fpu::write_init_image(p.fpu);
  fpu::restore(p.fpu);
  return {};
}

bool fpu_from_signal_frame(Process& p, uint64_t fpstate) {
  const sigframe::FpFormat fmt = fpu::frame_format();
  if (fpstate == 0) {
    fpu::write_init_image(p.fpu);
    fpu::restore(p.fpu);
    return true;
  }
  // Copied in, checked, and only then given to the CPU; a restore that
  // still faults is caught (arch/fpu/fpu_ops.S) and refused.
  bool ok = sigframe::fpstate_pointer_ok(fpstate, fmt, abi::kUserTop) &&
            !copy_from_user(p.fpu, fpstate, sigframe::image_size(fmt)).is_error();
  if (ok) {
    const sigframe::FpCheck c = sigframe::check_image(p.fpu, fmt);
    if (c == sigframe::FpCheck::Legacy) sigframe::make_legacy(p.fpu, fmt);
    ok = c != sigframe::FpCheck::Bad;
  }
  if (ok && fpu::restore(p.fpu)) return true;
  fpu::write_init_image(p.fpu);
  fpu::restore(p.fpu);
  return false;
}

}  // namespace pvk
