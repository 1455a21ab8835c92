// Native preemption tick: on the boot CPU the PIT's channel 0 in rate mode
// through the legacy 8259 PICs, remapped so IRQ 0 arrives on vector 32; on
// the others their local APIC timer, periodic, on the same vector.
#include "base/arch/cpu.h"
#include "arch/native/lapic.h"
#include "arch/native/native.h"
#include "arch/smp/percpu.h"

namespace pvk::native {
namespace {
constexpr uint16_t kPic1Cmd = 0x20, kPic1Data = 0x21, kPic2Cmd = 0xa0, kPic2Data = 0xa1;
constexpr uint32_t kPitHz = 1193182;
}  // namespace

void start_timer(uint64_t period_ns) {
  lapic::set_period(period_ns);  // the other CPUs' APIC timers tick at the same rate
  // ICW1..4: edge, cascade, vectors 32/40, 8086 mode; then mask all but IRQ 0.
  cpu::outb(kPic1Cmd, 0x11);
  cpu::outb(kPic2Cmd, 0x11);
  cpu::outb(kPic1Data, 32);
  cpu::outb(kPic2Data, 40);
  cpu::outb(kPic1Data, 4);
  cpu::outb(kPic2Data, 2);
  cpu::outb(kPic1Data, 1);
  cpu::outb(kPic2Data, 1);
  cpu::outb(kPic1Data, 0xfe);
  cpu::outb(kPic2Data, 0xff);
  uint64_t divisor = kPitHz * period_ns / 1000000000ull;
  if (divisor < 1) divisor = 1;
  if (divisor > 0xffff) divisor = 0xffff;
  cpu::outb(0x43, 0x34);  // channel 0, lo/hi, rate generator
  cpu::outb(0x40, divisor & 0xff);
  cpu::outb(0x40, divisor >> 8);
}

// The boot CPU's tick is the PIT's, through the PIC; the others' their APIC timer.
void timer_ack() {
  if (this_cpu()->id == 0)
    cpu::outb(kPic1Cmd, 0x20);
  else
    lapic::eoi();
}

}  // namespace pvk::native
