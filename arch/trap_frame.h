// The register state saved on every exception, the same layout whichever
// environment delivered it (native IDT stubs or Xen PV trap bounces).
#pragma once
#include <stdint.h>

namespace pvk {

struct TrapFrame {
  uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
  uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
  uint64_t vector, error_code;
  // Pushed by the CPU (or rebuilt from Xen's frame).
  uint64_t rip, cs, rflags, rsp, ss;
};

namespace vec {
inline constexpr uint64_t DivideError = 0;
inline constexpr uint64_t Debug = 1;
inline constexpr uint64_t Breakpoint = 3;
inline constexpr uint64_t InvalidOpcode = 6;
inline constexpr uint64_t DeviceNotAvailable = 7;  // #NM: CR0.TS set
inline constexpr uint64_t DoubleFault = 8;
inline constexpr uint64_t GeneralProtection = 13;
inline constexpr uint64_t PageFault = 14;
inline constexpr uint64_t X87Error = 16;
inline constexpr uint64_t AlignmentCheck = 17;
inline constexpr uint64_t SimdError = 19;
inline constexpr uint64_t Timer = 32;  // native: the PIT's IRQ 0, remapped (boot CPU); the local APIC timer (others)
// Native: the cross-CPU IPI (base/arch/cross_cpu.h) and the local APIC's
// spurious vector, right after the PIC's 16.
inline constexpr uint64_t CrossCpu = 48;
inline constexpr uint64_t Spurious = 49;
inline constexpr uint64_t Syscall = 258;  // tag of a frame built by a syscall entry
// Not CPU vectors: what the Xen PV entry stubs tag event upcalls and
// failsafe callbacks with (arch/pv/trap_entry.S).
inline constexpr uint64_t XenEvent = 256;
inline constexpr uint64_t XenFailsafe = 257;
// A `syscall` from 32-bit compatibility mode, or `sysenter`: pvk offers no
// 32-bit ABI, so the caller is killed (arch/*/ entry stubs).
inline constexpr uint64_t CompatSyscall = 259;
}  // namespace vec

// RFLAGS bits the entry prologue (KERNEL_ENTRY in trap_regs.inc) clears.
namespace rflags {
inline constexpr uint64_t TF = 1u << 8, IF = 1u << 9, DF = 1u << 10, NT = 1u << 14, RF = 1u << 16, AC = 1u << 18;
}  // namespace rflags

// Called by every environment's entry stubs.
extern "C" void trap_dispatch(TrapFrame* frame);
// Stops the kernel if it runs with flags an entry stub should have cleared
// (arch/trap_regs.inc); every dispatcher calls it first.
void check_entry_state(const TrapFrame& frame);

}  // namespace pvk
