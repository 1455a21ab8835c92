// Native-environment pieces shared between its files.
#pragma once
#include <stdint.h>

namespace pvk::native {

void start_timer(uint64_t period_ns);
void timer_ack();
void enable_syscalls();  // STAR/LSTAR/CSTAR/SFMASK/SYSENTER, EFER.SCE
void enable_supervisor_protections();  // CR4.SMEP/SMAP where the CPU has them
bool program_pat();  // IA32_PAT = pvk's layout (kNativePat); false if the CPU has no PAT
uint64_t pat_msr();  // IA32_PAT as the CPU has it now

}  // namespace pvk::native
