// Each thread's FP/SIMD state (arch/fpu/fpu.h for the instructions): the
// 4 KiB area of its process slot, bound when the slot is taken and let go
// when the thread exits. Eager switching: while a thread runs, its state is in the
// CPU's registers; switching away saves it, switching to it restores it.
// Signal frames carry it as Linux lays it out (base/signal_frame.h).
#pragma once
#include <stdint.h>

#include "base/lib/error_or.h"

namespace pvk {

struct Process;

// A new slot's area, bound to it but not written: before the thread first
// runs, fork and clone copy their parent's state into it
// (fpu_copy_running) and the first program's exec writes the clean state
// (fpu_exec_reset). A slot that never runs is freed unread.
ErrorOr<void> fpu_alloc(Process& p);
// Gives the area back (nothing if it has none): exit, a slot freed unstarted.
void fpu_release(Process& p);
// Fork and clone: child starts with the state of parent, which runs here.
void fpu_copy_running(Process& child, Process& parent);
// Exec: the clean state, live at once if p runs here.
void fpu_exec_reset(Process& p);
// The switch: prev's registers saved, next's loaded.
void fpu_switch_out(Process& prev);
void fpu_switch_in(Process& next);

// Signal delivery: p's live state written as the frame's FP image at the
// user address fpstate (laid out by sigframe::place), then the handler's
// state is the clean one.
ErrorOr<void> fpu_to_signal_frame(Process& p, uint64_t fpstate);
// rt_sigreturn: the image at fpstate (0: the clean state) becomes p's
// live state; false if it is refused (bad pointer, reserved MXCSR bits,
// bad header, or the CPU refusing it), and p must get SIGSEGV.
bool fpu_from_signal_frame(Process& p, uint64_t fpstate);

}  // namespace pvk
