// Native-environment pieces shared between its files.
#pragma once
#include <stdint.h>

namespace pvk::native {

void start_timer(uint64_t period_ns);
void timer_ack();
void enable_syscalls();  // STAR/LSTAR/SFMASK, EFER.SCE

}  // namespace pvk::native
