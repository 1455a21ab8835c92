// The platform side of base/arch/cross_cpu.h: what the IPI entry calls.
#pragma once

namespace pvk::smp {

// Installs this delivery in base/arch/cross_cpu.h (xcpu::install): the
// first thing either boot entry does, before anything may ask its CPU id.
void install_cross_cpu();

// Called by the platform's IPI entry (natively the IPI vector, under Xen an
// event on this vCPU's IPI channel), interrupts off: counts the IPI in
// PerCpu::ipis_taken and runs the handlers of every kind sent here.
void cross_cpu_interrupt();

}  // namespace pvk::smp
