// FP/SIMD state of user threads: which instructions save it, how big the
// area is, and the save/restore primitives. The kernel itself never uses
// FP registers (it is built -mgeneral-regs-only); only fpu_ops.S touches
// them. Eager: the state of the thread a CPU runs is live in its registers
// and goes to the thread's area when the CPU switches away
// (kernel/proc/fpu_state.cpp). docs/fpu.md has the whole picture.
#pragma once
#include <stdint.h>

#include "base/signal_frame.h"

namespace pvk::fpu {

enum class Method : uint8_t { Fxsave, Xsave, Xsaveopt };

struct Config {
  Method method = Method::Fxsave;
  uint64_t xcr0 = 0;        // features enabled (0 with FXSAVE)
  uint32_t size = 512;      // bytes of the save area (standard format)
  uint32_t mxcsr_mask = 0;  // MXCSR bits the CPU accepts
  bool xen_pv = false;
};

// The boot CPU: chooses the method and features and enables them (natively
// CR0/CR4/XCR0; under Xen PV the vCPU's virtual CR4.OSXSAVE, XSETBV
// emulated by Xen, and CR0.TS cleared with fpu_taskswitch). Panics-free:
// what Xen refuses falls back to x87+SSE.
void init_boot_cpu(bool xen_pv);
// Every other CPU, before it runs a process: the boot CPU's choice.
void init_secondary_cpu();
const Config& config();
const char* method_name(Method m);
sigframe::FpFormat frame_format();

// The area every thread's state lives in: 4 KiB, 64-byte aligned (as XSAVE
// wants), config().size <= kAreaBytes.
inline constexpr uint32_t kAreaBytes = 4096;

// This CPU's registers into area (kernel memory).
void save(void* area);
// area (kernel memory) into this CPU's registers; false if the CPU refused
// it (the init state is loaded instead), which only an area built from a
// user's signal frame can cause.
bool restore(const void* area);
// Writes the clean state of a new program (FNINIT's, MXCSR 0x1f80, every
// extended component in its init state) into area.
void write_init_image(void* area);
// #NM from user mode: under Xen, CR0.TS was set behind our back; clear it.
void device_not_available();

}  // namespace pvk::fpu
