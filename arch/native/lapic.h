// The local APIC at run time (SDM vol. 3, ch. 11): mapped uncached into the
// kernel half (mm's map_kernel_io) once the kernel's tables exist, so any
// CPU can send an IPI or program its timer on the tables it runs on.
// (Bring-up's INIT/SIPI still go out from the early tables, before this.)
// xAPIC MMIO, not x2APIC: QEMU 7.2's TCG offers no x2APIC.
#pragma once
#include <stdint.h>

#include "base/lib/error_or.h"

namespace pvk::native::lapic {

ErrorOr<void> map(uint64_t phys_base);
bool mapped();

// Software-enables this CPU's APIC with `spurious` as its spurious vector.
void enable(uint8_t spurious);
void eoi();
// A fixed-vector IPI to the CPU with this APIC id; false if the APIC kept
// it pending (not sent) for too long.
bool send_fixed(uint32_t apic_id, uint8_t vector);

// Timer: calibrate() on the boot CPU (counts per ms against the TSC),
// then start_periodic() on each CPU that wants a tick.
void calibrate();
void set_period(uint64_t period_ns);
void start_periodic(uint8_t vector);
uint64_t counts_per_ms();

}  // namespace pvk::native::lapic
