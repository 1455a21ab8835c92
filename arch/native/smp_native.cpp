// Native bring-up of the other CPUs: INIT, then two startup IPIs at the
// real-mode trampoline (ap_trampoline.S) at 0x8000, one AP at a time, each
// with its own kernel stack, double-fault stack, GDT, TSS and IDT (one run
// of frames, kept for good) and its PerCpu behind its GS base. An AP reports
// in on the kernel's tables and parks in hlt with interrupts off; bring-up
// then sends it one NMI, its wake-up, and waits for it to be counted. It
// runs no process yet.
//
// The local APIC's registers are memory-mapped below 4 GiB, which the
// kernel's tables do not map (they hold RAM only, and mm/ owns them), so
// the boot CPU sends its IPIs from the early 4 GiB tables (pvh_entry.S),
// which map the kernel image, the physmap of low memory and the APIC alike:
// a short window with interrupts off, the same CR3 before and after.
#include "arch/fpu/fpu.h"
#include "arch/native/smp_native.h"

#include "base/arch/cpu.h"
#include "base/arch/platform.h"
#include "base/console/console.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#include "base/layout.h"
#include "base/lib/kstring.h"
#include "arch/native/descriptors.h"
#include "arch/native/lapic.h"
#include "arch/trap_frame.h"
#include "arch/upcalls.h"
#include "arch/native/native.h"
#include "arch/smp/bringup.h"
#include "arch/smp/madt.h"
#include "arch/smp/percpu.h"

extern "C" char early_pml4[];
extern "C" char ap_trampoline_start[], ap_trampoline_end[];
extern "C" uint64_t ap_trampoline_cr3, ap_trampoline_stack, ap_trampoline_arg, ap_trampoline_target;
extern "C" char native_ap_start[];
extern "C" void native_ap_nmi();

namespace pvk::native {

extern Platform g_native_platform;

namespace {

constexpr uint32_t kMsrGsBase = 0xc0000101;
constexpr uint32_t kMsrKernelGsBase = 0xc0000102;  // the swapgs partner: the user's base while in the kernel

[[maybe_unused]] uint64_t read_gs_base() { return cpu::rdmsr(kMsrGsBase); }

// This CPU's GS bases before it can enter user mode: its PerCpu live, and
// 0 waiting for user mode (the base a user selector load gives, so the
// first swapgs into user mode hands it no kernel address).
void set_gs_bases(PerCpu& pc) {
  cpu::wrmsr(kMsrGsBase, reinterpret_cast<uint64_t>(&pc));
  cpu::wrmsr(kMsrKernelGsBase, 0);
}
constexpr uint64_t kTrampolinePhys = 0x8000;  // ap_trampoline.S's AP_TRAMPOLINE_PHYS
constexpr uint8_t kStartupVector = kTrampolinePhys >> 12;
constexpr uint64_t kEarlyMapLimit = uint64_t{PVK_EARLY_PHYSMAP_GIB} << 30;

// Local APIC registers (SDM vol. 3, 11.4.1) and ICR encodings.
constexpr uint32_t kApicSvr = 0xf0, kApicIcrLow = 0x300, kApicIcrHigh = 0x310;
// The spurious vector is never raised while an AP keeps interrupts off.
constexpr uint32_t kSvrEnable = 1u << 8, kSpuriousVector = vec::Spurious;
constexpr uint32_t kIcrNmi = 0x400, kIcrInit = 0x500, kIcrStartup = 0x600, kIcrAssert = 1u << 14, kIcrLevel = 1u << 15;
constexpr uint32_t kIcrPending = 1u << 12;

// An AP's frames, in this order from its PerCpu::kernel_stack_top down and
// up: kernel stack below it, then the double-fault stack, then its GDT, TSS
// and IDT (descriptors.h, kApDescriptorBytes).
constexpr uint64_t kStackPages = 4, kIstPages = 2, kDescPages = 1;
constexpr uint64_t kApPages = kStackPages + kIstPages + kDescPages;
static_assert(kApDescriptorBytes <= kDescPages * kPageSize);

smp::MadtCpus g_fw;
bool g_fw_ok = false;
uint64_t g_lapic_base = 0xfee00000;  // the architectural default, until the MADT says otherwise

// What every AP copies from the boot CPU, so it starts from the same state.
uint64_t g_boot_cr0 = 0, g_boot_cr4 = 0, g_kernel_cr3 = 0;

uint64_t early_pml4_phys() { return reinterpret_cast<uint64_t>(early_pml4) - PVK_KERNEL_VMA; }

volatile uint32_t* early_lapic(uint32_t reg) {
  return reinterpret_cast<volatile uint32_t*>(PVK_PHYSMAP_BASE + g_lapic_base + reg);
}

uint64_t read_cr0() {
  uint64_t v;
  asm volatile("mov %%cr0, %0" : "=r"(v));
  return v;
}

const uint8_t* early_window(void*, uint64_t paddr, uint64_t len) {
  if (paddr >= kEarlyMapLimit || len > kEarlyMapLimit - paddr) return nullptr;
  return reinterpret_cast<const uint8_t*>(PVK_PHYSMAP_BASE + paddr);
}

uint32_t cpuid_apic_id() {
  uint32_t a, b, c, d;
  cpu::cpuid(1, 0, a, b, c, d);
  return b >> 24;
}

void wait_us(uint64_t us) {
  const uint64_t end = cpu::rdtsc() + us * g_platform->tsc_khz / 1000;
  while (cpu::rdtsc() < end) cpu::relax();
}

bool send_ipi(uint32_t apic_id, uint32_t low) {
  *early_lapic(kApicIcrHigh) = apic_id << 24;
  *early_lapic(kApicIcrLow) = low;
  for (unsigned i = 0; i < 100000; ++i) {
    if (!(*early_lapic(kApicIcrLow) & kIcrPending)) return true;
    cpu::relax();
  }
  return false;
}

// Runs f on the early tables with interrupts off (see the top of the file).
template <typename F>
bool on_early_tables(F f) {
  uint64_t flags;
  asm volatile("pushfq; popq %0; cli" : "=r"(flags) : : "memory");
  const uint64_t cr3 = cpu::read_cr3();
  cpu::write_cr3(early_pml4_phys());
  const bool ok = f();
  cpu::write_cr3(cr3);
  if (flags & (1u << 9)) asm volatile("sti" : : : "memory");
  return ok;
}

// INIT, 10 ms, startup IPI, 200 us, startup IPI (the MP spec's sequence;
// an AP that took the first one ignores the second).
bool kick(uint32_t apic_id, uint64_t stack_top, PerCpu& pc) {
  return on_early_tables([&] {
    auto* page = reinterpret_cast<uint8_t*>(PVK_PHYSMAP_BASE + kTrampolinePhys);
    const uint64_t size = static_cast<uint64_t>(ap_trampoline_end - ap_trampoline_start);
    memcpy(page, ap_trampoline_start, size);
    auto slot = [&](uint64_t& s) -> uint64_t& {
      return *reinterpret_cast<uint64_t*>(page + (reinterpret_cast<char*>(&s) - ap_trampoline_start));
    };
    slot(ap_trampoline_cr3) = early_pml4_phys();
    slot(ap_trampoline_stack) = stack_top;
    slot(ap_trampoline_arg) = reinterpret_cast<uint64_t>(&pc);
    slot(ap_trampoline_target) = reinterpret_cast<uint64_t>(native_ap_start);
    if (!send_ipi(apic_id, kIcrInit | kIcrAssert | kIcrLevel)) return false;
    wait_us(10000);
    if (!send_ipi(apic_id, kIcrStartup | kStartupVector)) return false;
    wait_us(200);
    return send_ipi(apic_id, kIcrStartup | kStartupVector);
  });
}

// The parked AP's wake-up: an NMI (see native_ap_nmi).
bool send_wakeup(uint32_t apic_id) {
  return on_early_tables([&] { return send_ipi(apic_id, kIcrNmi); });
}

static_assert(__builtin_offsetof(PerCpu, ipis_taken) == 48, "ap_trampoline.S's PERCPU_IPIS_TAKEN");

// Where ACPI 1.0 says to look when no loader hands the RSDP over: the BIOS
// read-only area, on 16-byte boundaries.
uint64_t scan_bios_for_rsdp() {
  for (uint64_t p = 0xe0000; p < 0x100000; p += 16)
    if (memcmp(reinterpret_cast<const void*>(PVK_PHYSMAP_BASE + p), "RSD PTR ", 8) == 0) return p;
  return 0;
}

}  // namespace

void init_boot_cpu(const hvm_start_info& si) {
  PerCpu& boot = smp::cpu(0);
  boot.self = &boot;
  boot.id = 0;
  boot.hw_id = cpuid_apic_id();
  boot.online = 1;
  set_gs_bases(boot);
#ifndef NDEBUG
  // Debug builds: check_this_cpu reads the MSR itself on every entry. Not
  // in release images: under TCG the rdmsr made getpid measurably slower,
  // and the self-pointer check already fails a wrong base (a user base is
  // 0, and gs:0 then faults in the kernel: a crash report, not a panic).
  smp::g_read_gs_base = &read_gs_base;
#endif
  const uint64_t rsdp = si.rsdp_paddr ? si.rsdp_paddr : scan_bios_for_rsdp();
  if (!rsdp) return;  // no ACPI: one CPU
  auto parsed = smp::parse_madt_cpus(rsdp, smp::PhysWindow{&early_window, nullptr});
  if (parsed.is_error()) {
    kprintf("pvk: smp: cannot read the MADT (%s); one CPU\n", errno_name(parsed.error()));
    return;
  }
  g_fw = parsed.value();
  g_fw_ok = true;
  if (g_fw.lapic_base) g_lapic_base = g_fw.lapic_base;
  smp::counts().set_found(g_fw.count ? g_fw.count : 1);
}

// The cross-CPU IPI: a fixed interrupt at vec::CrossCpu.
bool send_cross_cpu_ipi(unsigned cpu) {
  return lapic::send_fixed(smp::cpu(cpu).hw_id, static_cast<uint8_t>(vec::CrossCpu));
}

void start_ap_timer() { lapic::start_periodic(static_cast<uint8_t>(vec::Timer)); }

void start_secondary_cpus() {
  if (!g_fw_ok || g_fw.count <= 1) return;
  smp::Bringup bringup("native");
  if (g_lapic_base + 0x400 > kEarlyMapLimit) {
    bringup.fail(1, g_fw.apic_ids[1], "the local APIC is out of the early map's reach");
    return;
  }
  // The APIC for run time (IPIs, the APs' timers), in the kernel's tables.
  if (auto r = lapic::map(g_lapic_base); r.is_error()) {
    kprintf("pvk: smp: cannot map the local APIC (%s)\n", errno_name(r.error()));
    bringup.fail(1, g_fw.apic_ids[1], "the local APIC could not be mapped");
    return;
  }
  // The boot CPU keeps the PIT (through the PIC, ExtINT: no APIC EOI) for
  // its tick, and takes IPIs: its APIC must be software-enabled.
  lapic::enable(static_cast<uint8_t>(kSpuriousVector));
  lapic::calibrate();
  g_native_platform.send_ipi = &send_cross_cpu_ipi;
  g_native_platform.ipi_ack = &lapic::eoi;
  g_native_platform.start_cpu_timer = &start_ap_timer;
  g_boot_cr0 = read_cr0();
  g_boot_cr4 = cpu::read_cr4();
  g_kernel_cr3 = cpu::read_cr3();
  unsigned next_id = 1;
  for (unsigned i = 0; i < g_fw.count; ++i) {
    const uint32_t apic_id = g_fw.apic_ids[i];
    if (apic_id == smp::cpu(0).hw_id) continue;
    if (apic_id > 0xff) {
      bringup.fail(next_id, apic_id, "x2APIC id beyond the xAPIC's 8 bits");
      break;
    }
    // The MADT may list the boot CPU after kMaxCpus others: ids stop there
    // (smp::cpu() of a larger id would be the boot CPU's own PerCpu).
    if (next_id >= smp::kMaxCpus) {
      bringup.fail(next_id, apic_id, "beyond the kernel's CPU limit");
      break;
    }
    const unsigned id = next_id++;
    auto run = frames().try_alloc_run(kApPages);
    if (run.is_error() || raw(run.value()) + kApPages > (kEarlyMapLimit >> kPageShift)) {
      // A run the early map does not reach would be no use to the trampoline.
      bringup.fail(id, apic_id, "no frames below 4 GiB for its stacks");
      break;
    }
    auto* base = phys_to_virt<uint8_t>(run.value());
    const uint64_t stack_top = reinterpret_cast<uint64_t>(base + kStackPages * kPageSize);
    PerCpu& pc = smp::cpu(id);
    pc.self = &pc;
    pc.id = id;
    pc.hw_id = apic_id;
    pc.kernel_stack_top = stack_top;
    if (!kick(apic_id, stack_top, pc)) {
      bringup.fail(id, apic_id, "the local APIC did not send INIT/SIPI");
      break;
    }
    // An AP that is late may still come up: it owns its frames for good and
    // only ever touches its own PerCpu, so nothing here is undone. The next
    // AP would reuse the trampoline's slots under it, so stop.
    if (!bringup.wait_online(pc)) break;
    if (send_wakeup(apic_id)) bringup.wait_wakeup(pc);
  }
}

}  // namespace pvk::native

// The AP's C++ half, on the early tables and its own stack (from the
// trampoline's native_ap_start). Everything the boot CPU set up for
// itself is set up again here, then the AP moves to the kernel's tables.
extern "C" [[noreturn]] void native_ap_entry(pvk::PerCpu* self) {
  using namespace pvk;
  using namespace pvk::native;
  asm volatile("mov %0, %%cr0" : : "r"(g_boot_cr0) : "memory");
  cpu::write_cr4(g_boot_cr4);
  program_pat();  // the same layout the boot CPU's leaves are written by
  enable_syscalls();
  fpu::init_secondary_cpu();  // XCR0 is per CPU
  *early_lapic(kApicSvr) = kSvrEnable | kSpuriousVector;
  const uint64_t ist_top = self->kernel_stack_top + kIstPages * kPageSize;
  load_ap_descriptors(self->id, reinterpret_cast<void*>(ist_top), ist_top, &native_ap_nmi);
  set_gs_bases(*self);
  cpu::write_cr3(g_kernel_cr3);
  // An AP that cannot find itself through its GS base never reports in,
  // and bring-up names it.
  if (this_cpu() != self || self->self != self) cpu::halt_forever();
  smp::report_online(*self);
  // Parked until processes run (halted; bring-up's NMI, native_ap_nmi,
  // counts itself and returns to the halt), then a scheduler like the boot
  // CPU's: its tick is its APIC timer, its wake-ups IPIs at vec::CrossCpu.
  secondary_cpu_scheduler();
}
