// Native GDT, TSS and IDT. Selector layout is fixed by syscall/sysret:
// kernel code, kernel data, then user 32-bit code, user data, user code.
// The user 32-bit code slot stays null: pvk has no 32-bit ABI (it returns
// with iretq, never sysret), and a far jump to a compat segment is how user
// code reaches `syscall`'s compatibility-mode entry.
#include "guest/arch/native/descriptors.h"

#include "base/lib/kstring.h"

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
alignas(16) uint64_t g_gdt[kGdtEntries];
alignas(16) Tss g_tss;
alignas(16) IdtGate g_idt[256];
alignas(16) uint8_t g_double_fault_stack[8192];

constexpr uint64_t kKernelCode64 = 0x00af9a000000ffff;
constexpr uint64_t kKernelData = 0x00cf92000000ffff;
constexpr uint64_t kUserData = 0x00cff2000000ffff;
constexpr uint64_t kUserCode64 = 0x00affa000000ffff;
constexpr unsigned kStubSize = 16;  // trap_entry.S aligns each stub to 16 bytes
constexpr unsigned kStubCount = 48;  // exceptions 0..31, PIC IRQs 32..47
constexpr uint8_t kInterruptGate = 0x8e;      // present, DPL 0: `int N` from user mode is a #GP
constexpr uint8_t kUserInterruptGate = 0xee;  // DPL 3: int3 from user mode is a #BP (SIGTRAP)
constexpr unsigned kBreakpointVector = 3;
constexpr unsigned kDoubleFaultIst = 1;

}  // namespace

void load_descriptors() {
  g_gdt[0] = 0;
  g_gdt[kKernelCs / 8] = kKernelCode64;
  g_gdt[kKernelDs / 8] = kKernelData;
  g_gdt[3] = 0;  // no user compat segment
  g_gdt[kUserDs / 8] = kUserData;
  g_gdt[kUserCs / 8] = kUserCode64;
  memset(&g_tss, 0, sizeof g_tss);
  g_tss.iomap_base = sizeof(Tss);
  g_tss.ist[kDoubleFaultIst - 1] = reinterpret_cast<uint64_t>(g_double_fault_stack + sizeof g_double_fault_stack);
  const uint64_t base = reinterpret_cast<uint64_t>(&g_tss);
  const uint64_t limit = sizeof(Tss) - 1;
  g_gdt[kTss / 8] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (uint64_t{0x89} << 40) |
                    (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
  g_gdt[kTss / 8 + 1] = base >> 32;

  DescriptorPointer gdtr{sizeof g_gdt - 1, reinterpret_cast<uint64_t>(g_gdt)};
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

  for (unsigned v = 0; v < kStubCount; ++v) {
    const uint64_t handler = reinterpret_cast<uint64_t>(native_trap_stubs) + v * kStubSize;
    g_idt[v] = IdtGate{static_cast<uint16_t>(handler), kKernelCs,
                       static_cast<uint8_t>(v == 8 ? kDoubleFaultIst : 0),
                       v == kBreakpointVector ? kUserInterruptGate : kInterruptGate,
                       static_cast<uint16_t>(handler >> 16), static_cast<uint32_t>(handler >> 32), 0};
  }
  DescriptorPointer idtr{sizeof g_idt - 1, reinterpret_cast<uint64_t>(g_idt)};
  asm volatile("lidt %0" : : "m"(idtr));
}

void set_kernel_stack(uint64_t rsp0) { g_tss.rsp[0] = rsp0; }

}  // namespace pvk::native
