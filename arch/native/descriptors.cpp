// Native GDT, TSS and IDT. Selector layout is fixed by syscall/sysret:
// kernel code, kernel data, then user 32-bit code, user data, user code.
// The user 32-bit code slot stays null: pvk has no 32-bit ABI (it returns
// with iretq, never sysret), and a far jump to a compat segment is how user
// code reaches `syscall`'s compatibility-mode entry.
#include "arch/native/descriptors.h"

#include "base/lib/kstring.h"
#include "arch/smp/percpu.h"

extern "C" char native_trap_stubs[];

namespace pvk::native {
namespace {

struct [[gnu::packed]] Tss {
  uint32_t reserved0;
  uint64_t rsp[3];
  uint64_t reserved1;
  uint64_t ist[7];
  uint64_t reserved2;
  uint16_t reserved3;
  uint16_t iomap_base;
};
static_assert(sizeof(Tss) == 104);

struct [[gnu::packed]] IdtGate {
  uint16_t offset_low;
  uint16_t selector;
  uint8_t ist;
  uint8_t type_attr;
  uint16_t offset_mid;
  uint32_t offset_high;
  uint32_t reserved;
};
static_assert(sizeof(IdtGate) == 16);

struct [[gnu::packed]] DescriptorPointer {
  uint16_t limit;
  uint64_t base;
};

constexpr uint64_t kGdtEntries = 8;
alignas(16) IdtGate g_idt[256];
alignas(16) uint8_t g_double_fault_stack[8192];
// NMI and #MC may arrive between `syscall` and its stack switch, when %rsp
// is still the user's: without a stack of their own they would push the
// kernel's frame wherever user code pointed it. The boot CPU's own stacks
// (APs run no user code yet: their gates stay on the current stack).
alignas(16) uint8_t g_nmi_stack[8192];
alignas(16) uint8_t g_machine_check_stack[8192];

constexpr uint64_t kKernelCode64 = 0x00af9a000000ffff;
constexpr uint64_t kKernelData = 0x00cf92000000ffff;
constexpr uint64_t kUserData = 0x00cff2000000ffff;
constexpr uint64_t kUserCode64 = 0x00affa000000ffff;
constexpr unsigned kStubSize = 16;  // trap_entry.S aligns each stub to 16 bytes
constexpr unsigned kStubCount = 50;  // exceptions 0..31, PIC IRQs 32..47, APIC IPI 48 and spurious 49
constexpr uint8_t kInterruptGate = 0x8e;      // present, DPL 0: `int N` from user mode is a #GP
constexpr uint8_t kUserInterruptGate = 0xee;  // DPL 3: int3 from user mode is a #BP (SIGTRAP)
constexpr unsigned kBreakpointVector = 3;
constexpr unsigned kDoubleFaultIst = 1;
constexpr unsigned kNmiIst = 2;
constexpr unsigned kMachineCheckIst = 3;
constexpr unsigned kDoubleFaultVector = 8, kMachineCheckVector = 18;

}  // namespace

namespace {

// One CPU's GDT and TSS: the boot CPU's are static, each AP's sit in a
// frame of its own (kApDescriptorBytes), so every CPU has its own TSS (RSP0
// and the double-fault IST stack) and its own busy TSS descriptor.
struct CpuDescriptorTables {
  alignas(16) uint64_t gdt[kGdtEntries];
  alignas(16) Tss tss;
};

void fill_gdt(CpuDescriptorTables& t, uint64_t double_fault_stack_top) {
  t.gdt[0] = 0;
  t.gdt[kKernelCs / 8] = kKernelCode64;
  t.gdt[kKernelDs / 8] = kKernelData;
  t.gdt[3] = 0;  // no user compat segment
  t.gdt[kUserDs / 8] = kUserData;
  t.gdt[kUserCs / 8] = kUserCode64;
  memset(&t.tss, 0, sizeof t.tss);
  t.tss.iomap_base = sizeof(Tss);
  t.tss.ist[kDoubleFaultIst - 1] = double_fault_stack_top;
  const uint64_t base = reinterpret_cast<uint64_t>(&t.tss);
  const uint64_t limit = sizeof(Tss) - 1;
  t.gdt[kTss / 8] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (uint64_t{0x89} << 40) |
                    (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
  t.gdt[kTss / 8 + 1] = base >> 32;
}

// lgdt, reload every segment register from it (CS through a far return),
// ltr. FS and GS get the null selector: their bases are MSRs, set after.
void load_gdt(CpuDescriptorTables& t) {
  DescriptorPointer gdtr{sizeof t.gdt - 1, reinterpret_cast<uint64_t>(t.gdt)};
  asm volatile(
      "lgdt %0\n"
      "pushq %1\n"
      "leaq 1f(%%rip), %%rax\n"
      "pushq %%rax\n"
      "lretq\n"
      "1:\n"
      "mov %2, %%ax\n"
      "mov %%ax, %%ds\n"
      "mov %%ax, %%es\n"
      "mov %%ax, %%ss\n"
      :
      : "m"(gdtr), "i"(kKernelCs), "i"(kKernelDs)
      : "rax", "memory");
  asm volatile("ltr %w0" : : "r"(kTss));
}

void load_idt(const IdtGate* idt, uint64_t bytes) {
  DescriptorPointer idtr{static_cast<uint16_t>(bytes - 1), reinterpret_cast<uint64_t>(idt)};
  asm volatile("lidt %0" : : "m"(idtr));
}

constexpr unsigned kNmiVector = 2;

// An AP's tables: GDT and TSS as the boot CPU's, and an IDT of the stub
// vectors (nothing beyond them is ever raised: the IDT limit turns anything
// else into a #GP) with its own NMI gate.
struct ApDescriptorTables {
  CpuDescriptorTables cpu;
  alignas(16) IdtGate idt[kStubCount];
};

CpuDescriptorTables g_boot_cpu_tables;
// Each CPU's TSS (index = PerCpu::id), for set_kernel_stack.
Tss* g_tss_of[smp::kMaxCpus];

}  // namespace

// The IST slot a vector's gate names on the boot CPU (0: the current stack).
static uint8_t boot_ist_of(unsigned vector) {
  if (vector == kDoubleFaultVector) return kDoubleFaultIst;
  if (vector == kNmiVector) return kNmiIst;
  if (vector == kMachineCheckVector) return kMachineCheckIst;
  return 0;
}

void load_descriptors() {
  fill_gdt(g_boot_cpu_tables,
           reinterpret_cast<uint64_t>(g_double_fault_stack + sizeof g_double_fault_stack));
  g_boot_cpu_tables.tss.ist[kNmiIst - 1] = reinterpret_cast<uint64_t>(g_nmi_stack + sizeof g_nmi_stack);
  g_boot_cpu_tables.tss.ist[kMachineCheckIst - 1] =
      reinterpret_cast<uint64_t>(g_machine_check_stack + sizeof g_machine_check_stack);
  load_gdt(g_boot_cpu_tables);
  g_tss_of[0] = &g_boot_cpu_tables.tss;

  for (unsigned v = 0; v < kStubCount; ++v) {
    const uint64_t handler = reinterpret_cast<uint64_t>(native_trap_stubs) + v * kStubSize;
    g_idt[v] = IdtGate{static_cast<uint16_t>(handler), kKernelCs, boot_ist_of(v),
                       v == kBreakpointVector ? kUserInterruptGate : kInterruptGate,
                       static_cast<uint16_t>(handler >> 16), static_cast<uint32_t>(handler >> 32), 0};
  }
  load_idt(g_idt, sizeof g_idt);
}

static_assert(sizeof(ApDescriptorTables) <= kApDescriptorBytes);
static_assert(alignof(ApDescriptorTables) <= 16);

void load_ap_descriptors(unsigned cpu_id, void* storage, uint64_t double_fault_stack_top, void (*nmi_handler)()) {
  // fill_gdt and the copy below write every byte the CPU reads.
  auto* t = static_cast<ApDescriptorTables*>(storage);
  fill_gdt(t->cpu, double_fault_stack_top);
  if (cpu_id < smp::kMaxCpus) g_tss_of[cpu_id] = &t->cpu.tss;
  load_gdt(t->cpu);
  memcpy(t->idt, g_idt, sizeof t->idt);
  // Only the double-fault IST slot is filled on an AP: #MC on its current stack.
  t->idt[kMachineCheckVector].ist = 0;
  const uint64_t nmi = reinterpret_cast<uint64_t>(nmi_handler);
  t->idt[kNmiVector] = IdtGate{static_cast<uint16_t>(nmi), kKernelCs, 0, kInterruptGate,
                               static_cast<uint16_t>(nmi >> 16), static_cast<uint32_t>(nmi >> 32), 0};
  load_idt(t->idt, sizeof t->idt);
}

// This CPU's TSS: a process continues on whichever CPU picks it up.
void set_kernel_stack(uint64_t rsp0) { g_tss_of[this_cpu()->id]->rsp[0] = rsp0; }

}  // namespace pvk::native
