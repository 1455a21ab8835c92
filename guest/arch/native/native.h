// Native-environment pieces shared between its files.
#pragma once
#include <stdint.h>

namespace pvk::native {

void start_timer(uint64_t period_ns);
void timer_ack();
void enable_syscalls();  // STAR/LSTAR/CSTAR/SFMASK/SYSENTER, EFER.SCE
void enable_supervisor_protections();  // CR4.SMEP/SMAP where the CPU has them

}  // namespace pvk::native
