#include "arch/native/lapic.h"

#include "base/arch/cpu.h"
#include "base/arch/platform.h"
#include "mm/kernel_space.h"

namespace pvk::native::lapic {
namespace {

constexpr uint32_t kEoi = 0xb0, kSvr = 0xf0, kIcrLow = 0x300, kIcrHigh = 0x310, kLvtTimer = 0x320,
                   kInitialCount = 0x380, kCurrentCount = 0x390, kDivide = 0x3e0;
constexpr uint32_t kSvrEnable = 1u << 8;
constexpr uint32_t kIcrPending = 1u << 12, kIcrAssert = 1u << 14;
constexpr uint32_t kLvtMasked = 1u << 16, kLvtPeriodic = 1u << 17;
constexpr uint32_t kDivideBy16 = 0x3;
constexpr uint64_t kCalibrateMs = 10;

uint64_t g_base = 0;  // kernel virtual address of the registers (0: not mapped)
uint64_t g_counts_per_ms = 0;
uint64_t g_period_ns = 10'000'000;

volatile uint32_t* reg(uint32_t r) { return reinterpret_cast<volatile uint32_t*>(g_base + r); }

}  // namespace

ErrorOr<void> map(uint64_t phys_base) {
  const VirtAddr va = TRY(map_kernel_io(phys_base, 1));
  g_base = raw(va);
  return {};
}

bool mapped() { return g_base != 0; }

void enable(uint8_t spurious) { *reg(kSvr) = kSvrEnable | spurious; }

void eoi() { *reg(kEoi) = 0; }

bool send_fixed(uint32_t apic_id, uint8_t vector) {
  // The ICR is one register pair per CPU: no interrupt may send between
  // the two writes.
  uint64_t flags;
  asm volatile("pushfq; popq %0; cli" : "=r"(flags) : : "memory");
  bool sent = false;
  for (unsigned i = 0; i < 1'000'000; ++i) {
    if (!(*reg(kIcrLow) & kIcrPending)) {
      sent = true;
      break;
    }
    cpu::relax();
  }
  if (sent) {
    *reg(kIcrHigh) = apic_id << 24;
    *reg(kIcrLow) = kIcrAssert | vector;
  }
  if (flags & (1u << 9)) asm volatile("sti" : : : "memory");
  return sent;
}

void calibrate() {
  *reg(kDivide) = kDivideBy16;
  *reg(kLvtTimer) = kLvtMasked;  // one-shot, masked: only the count is read
  *reg(kInitialCount) = 0xffffffffu;
  const uint64_t end = cpu::rdtsc() + kCalibrateMs * g_platform->tsc_khz;
  while (cpu::rdtsc() < end) cpu::relax();
  const uint32_t left = *reg(kCurrentCount);
  *reg(kInitialCount) = 0;
  g_counts_per_ms = (0xffffffffu - left) / kCalibrateMs;
}

void set_period(uint64_t period_ns) { g_period_ns = period_ns; }

void start_periodic(uint8_t vector) {
  uint64_t count = g_counts_per_ms * g_period_ns / 1'000'000;
  if (count == 0) count = 1;
  if (count > 0xffffffffu) count = 0xffffffffu;
  *reg(kDivide) = kDivideBy16;
  *reg(kLvtTimer) = kLvtPeriodic | vector;
  *reg(kInitialCount) = static_cast<uint32_t>(count);
}

uint64_t counts_per_ms() { return g_counts_per_ms; }

}  // namespace pvk::native::lapic
