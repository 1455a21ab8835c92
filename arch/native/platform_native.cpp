// The native environment: COM1 console, isa-debug-exit shutdown, the PIT to
// calibrate the TSC, and the PVH entry's C++ half.
#include "arch/fpu/fpu.h"
#include "base/abi.h"
#include "base/arch/cpu.h"
#include "arch/native/descriptors.h"
#include "arch/native/native.h"
#include "arch/native/smp_native.h"
#include "arch/trap_frame.h"
#include "arch/switch.h"
#include "arch/upcalls.h"
#include "base/boot_info.h"
#include "base/layout.h"
#include "base/lib/kstring.h"
#include "hypercalls/xen_abi.h"
#include "base/frames/physmap.h"
#include "pvops/pte_attrs.h"
#include "arch/smp/cross_cpu_entry.h"
#include "arch/smp/percpu.h"

extern "C" char native_syscall_entry[], native_compat_syscall_entry[], native_ret_to_user[];
extern "C" uint8_t pvk_smap;

namespace pvk::native {

extern Platform g_native_platform;

namespace msr {
inline constexpr uint32_t Efer = 0xc0000080, Star = 0xc0000081, Lstar = 0xc0000082, Cstar = 0xc0000083,
                          Sfmask = 0xc0000084;
inline constexpr uint32_t SysenterCs = 0x174, SysenterEsp = 0x175, SysenterEip = 0x176;
inline constexpr uint32_t Pat = 0x277;  // IA32_PAT
inline constexpr uint32_t FsBase = 0xc0000100;  // IA32_FS_BASE
}  // namespace msr

// Replaces the power-on PAT (no WC) with pvk's layout (kNativePat,
// pvops/pte_attrs.h), which the native backend's pte_attrs/make_pte_attrs
// read and write leaves by. Runs before any mapping selects a slot other
// than 0, and slot 0 is WB in both layouts, so no cached translation
// changes meaning; the TLB is flushed all the same, as the SDM asks after
// a PAT write. Every x86-64 CPU has PAT; one without is refused.
bool program_pat() {
  uint32_t a, b, c, d;
  cpu::cpuid(1, 0, a, b, c, d);
  constexpr uint32_t kPatBit = 1u << 16;  // CPUID.01H:EDX.PAT
  if (!(d & kPatBit)) return false;
  cpu::wrmsr(msr::Pat, kNativePatMsr);
  cpu::write_cr3(cpu::read_cr3());
  return pat_msr() == kNativePatMsr;
}

uint64_t pat_msr() { return cpu::rdmsr(msr::Pat); }

// Every instruction that enters ring 0 on purpose gets a deliberate target:
// `syscall` from 64-bit mode the real entry, from compatibility mode a stub
// that kills the caller (an unprogrammed CSTAR would enter ring 0 at 0 on
// the user's stack), and `sysenter` a null SYSENTER_CS, which makes it #GP.
void enable_syscalls() {
  cpu::wrmsr(msr::Efer, cpu::rdmsr(msr::Efer) | 1);  // SCE
  // syscall: CS = kKernelCs, SS = +8; the sysret half is unused (iretq).
  cpu::wrmsr(msr::Star, (uint64_t{0x18 | 3} << 48) | (uint64_t{kKernelCs} << 32));
  cpu::wrmsr(msr::Lstar, reinterpret_cast<uint64_t>(native_syscall_entry));
  cpu::wrmsr(msr::Cstar, reinterpret_cast<uint64_t>(native_compat_syscall_entry));
  cpu::wrmsr(msr::Sfmask, rflags::IF | rflags::TF | rflags::DF | rflags::AC | rflags::NT | (3u << 12) /* IOPL */);
  cpu::wrmsr(msr::SysenterCs, 0);
  cpu::wrmsr(msr::SysenterEsp, 0);
  cpu::wrmsr(msr::SysenterEip, 0);
}

// SMEP: ring 0 never executes a user page; SMAP: ring 0 reads and writes
// user pages only inside raw_copy_user (stac/clac, gated on pvk_smap).
void enable_supervisor_protections() {
  uint32_t a, b, c, d;
  cpu::cpuid(0, 0, a, b, c, d);
  if (a < 7) return;
  cpu::cpuid(7, 0, a, b, c, d);
  constexpr uint32_t kSmepBit = 1u << 7, kSmapBit = 1u << 20;
  constexpr uint64_t kCr4Smep = 1u << 20, kCr4Smap = 1u << 21;
  uint64_t cr4 = cpu::read_cr4();
  if (b & kSmepBit) cr4 |= kCr4Smep;
  if (b & kSmapBit) cr4 |= kCr4Smap;
  cpu::write_cr4(cr4);
  pvk_smap = (b & kSmapBit) ? 1 : 0;
  g_native_platform.smep = (b & kSmepBit) != 0;
  g_native_platform.smap = (b & kSmapBit) != 0;
}

namespace {

constexpr uint16_t kCom1 = 0x3f8;
// QEMU's isa-debug-exit (tools/ start QEMU with it at this port): the value
// v written makes QEMU exit with status (v << 1) | 1.
constexpr uint16_t kDebugExitPort = 0xf4;

void serial_init() {
  cpu::outb(kCom1 + 1, 0x00);  // no interrupts
  cpu::outb(kCom1 + 3, 0x80);  // DLAB
  cpu::outb(kCom1 + 0, 0x01);  // 115200 baud
  cpu::outb(kCom1 + 1, 0x00);
  cpu::outb(kCom1 + 3, 0x03);  // 8n1
  cpu::outb(kCom1 + 2, 0xc7);  // FIFO on
  cpu::outb(kCom1 + 4, 0x03);
}

void serial_write(const char* s, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (s[i] == '\n') {
      while (!(cpu::inb(kCom1 + 5) & 0x20)) {
      }
      cpu::outb(kCom1, '\r');
    }
    while (!(cpu::inb(kCom1 + 5) & 0x20)) {
    }
    cpu::outb(kCom1, static_cast<uint8_t>(s[i]));
  }
}

[[noreturn]] void shutdown(ExitStatus status) {
  cpu::outl(kDebugExitPort, status == ExitStatus::Pass ? 0 : 1);
  // Not under QEMU (or no debug-exit device): stop here.
  cpu::halt_forever();
}

uint64_t fault_address() { return cpu::read_cr2(); }

// Counts TSC ticks across 10 ms of PIT channel 2 (gate-controlled, so no
// interrupts are needed).
uint64_t calibrate_tsc_khz() {
  constexpr uint32_t kPitHz = 1193182;
  constexpr uint32_t kMs = 10;
  constexpr uint16_t kCount = kPitHz * kMs / 1000;
  cpu::outb(0x61, (cpu::inb(0x61) & ~0x02) | 0x01);  // gate on, speaker off
  cpu::outb(0x43, 0xb0);                              // channel 2, lo/hi, mode 0
  cpu::outb(0x42, kCount & 0xff);
  cpu::outb(0x42, kCount >> 8);
  const uint64_t t0 = cpu::rdtsc();
  while (!(cpu::inb(0x61) & 0x20)) {
  }
  const uint64_t t1 = cpu::rdtsc();
  return (t1 - t0) / kMs;
}

bool from_user(const TrapFrame& f) { return (f.cs & 3) == 3; }

uint64_t irq_save_native() {
  uint64_t flags;
  asm volatile("pushfq; popq %0; cli" : "=r"(flags) : : "memory");
  return flags & rflags::IF;
}

void irq_restore_native(uint64_t saved) {
  if (saved & rflags::IF) asm volatile("sti" : : : "memory");
}

// sti's one-instruction shadow covers hlt: an interrupt pending at the sti
// is taken after hlt starts, so it wakes it instead of being missed.
void idle_halt_native() { asm volatile("sti; hlt; cli" : : : "memory"); }

// A selector load writes the live GS base: swap the user's in around it
// (interrupts are off in the kernel; an NMI between the swaps takes the
// paranoid entry, which reads the MSR).
void load_user_gs_native(uint16_t sel) { asm volatile("swapgs; mov %0, %%gs; swapgs" : : "r"(sel) : "memory"); }

void set_kernel_stack_native(uint64_t top) {
  set_kernel_stack(top);  // TSS.RSP0: exceptions and interrupts from ring 3
  this_cpu()->syscall_rsp = top;  // the syscall entry's stack (syscall_entry.S)
}

ErrorOr<void> set_user_fs_base_native(uint64_t base) {
  // Only a canonical lower-half address: wrmsr of a non-canonical value
  // would #GP here, in the kernel.
  if (base >= abi::kNonCanonicalStart) return Errno::EINVAL;
  cpu::wrmsr(msr::FsBase, base);
  return {};
}

}  // namespace

// kernel_space_ready: the other CPUs start once the kernel's tables exist.
Platform g_native_platform{"native", "native", &serial_write, &shutdown, &fault_address, nullptr, &start_secondary_cpus, 0,
                           kUserCs, kUserDs, &set_kernel_stack_native, &start_timer, &timer_ack, &from_user,
                           &set_user_fs_base_native};

namespace {

char g_cmdline[kMaxCmdline + 2];
BootInfo g_boot_info;

// Copies at most one byte more than the parser accepts: a longer line
// reaches it as too long (and is refused), never cut to a valid-looking one.
void copy_cmdline(uint64_t paddr) {
  if (!paddr) return;
  const char* src = reinterpret_cast<const char*>(PVK_PHYSMAP_BASE + paddr);
  size_t n = 0;
  for (; n < sizeof g_cmdline - 1 && src[n]; ++n) g_cmdline[n] = src[n];
  g_cmdline[n] = 0;
  g_boot_info.cmdline = g_cmdline;
}

void read_memory_map(const hvm_start_info& si) {
  const auto* map = reinterpret_cast<const hvm_memmap_table_entry*>(PVK_PHYSMAP_BASE + si.memmap_paddr);
  for (uint32_t i = 0; i < si.memmap_entries && g_boot_info.ram_ranges < BootInfo::kMaxRanges; ++i) {
    if (map[i].type != XEN_HVM_MEMMAP_TYPE_RAM) continue;
    const uint64_t first = align_up(map[i].addr, kPageSize) >> kPageShift;
    const uint64_t end = align_down(map[i].addr + map[i].size, kPageSize) >> kPageShift;
    if (end > first) g_boot_info.ram[g_boot_info.ram_ranges++] = {Pfn{first}, end - first};
  }
}

}  // namespace
}  // namespace pvk::native

extern "C" char __kernel_end[], __bss_start[], __bss_end[];

// Called by pvh_entry.S in the higher half, on the early page tables.
extern "C" [[noreturn]] void native_boot_entry(uint32_t start_info_paddr) {
  using namespace pvk;
  using namespace pvk::native;
  const uint64_t tsc = cpu::rdtsc();
  smp::install_cross_cpu();
  g_platform = &g_native_platform;      // traps from here on report through it
  g_physmap_offset = PVK_PHYSMAP_BASE;  // the early tables map 4 GiB there
  serial_init();
  if (!program_pat()) {
    const char* line = "pvk: cannot program the PAT MSR (CPUID says no PAT, or it did not keep pvk's layout)\n";
    serial_write(line, strlen(line));
    shutdown(ExitStatus::Fail);
  }
  load_descriptors();
  enable_syscalls();
  enable_supervisor_protections();
  fpu::init_boot_cpu(/*xen_pv=*/false);
  pvk_ret_to_user = native_ret_to_user;
  g_native_platform.irq_save = &irq_save_native;
  g_native_platform.irq_restore = &irq_restore_native;
  g_native_platform.idle_halt = &idle_halt_native;
  g_native_platform.halt_lock_waiters = true;
  g_native_platform.load_user_gs = &load_user_gs_native;
  g_native_platform.tsc_khz = calibrate_tsc_khz();
  g_boot_info.boot_tsc = tsc;
  g_boot_info.early_physmap_pfns = uint64_t{PVK_EARLY_PHYSMAP_GIB} << (30 - kPageShift);

  const auto& si = *reinterpret_cast<const hvm_start_info*>(PVK_PHYSMAP_BASE + start_info_paddr);
  if (si.magic != XEN_HVM_START_MAGIC_VALUE) {
    serial_write("pvk: bad hvm_start_info magic\n", 30);
    shutdown(ExitStatus::Fail);
  }
  init_boot_cpu(si);  // the MADT is read while the early map reaches it
  copy_cmdline(si.cmdline_paddr);
  if (si.version >= 1) read_memory_map(si);
  // Low memory (BIOS, the PVH loader's tables) and the image are not ours.
  g_boot_info.reserved[g_boot_info.reserved_ranges++] = {Pfn{0}, 0x100000 >> kPageShift};
  const uint64_t image_end = reinterpret_cast<uint64_t>(__kernel_end) - PVK_KERNEL_VMA;
  g_boot_info.reserved[g_boot_info.reserved_ranges++] = {
      Pfn{PVK_KERNEL_LOAD >> kPageShift}, (align_up(image_end, kPageSize) - PVK_KERNEL_LOAD) >> kPageShift};
  // The root filesystem archive, QEMU's -initrd: the first module.
  if (si.nr_modules && si.modlist_paddr) {
    const auto& mod = *reinterpret_cast<const hvm_modlist_entry*>(PVK_PHYSMAP_BASE + si.modlist_paddr);
    if (mod.size) {
      g_boot_info.initrd_paddr = mod.paddr;
      g_boot_info.initrd_bytes = mod.size;
      const uint64_t first = mod.paddr >> kPageShift;
      g_boot_info.reserved[g_boot_info.reserved_ranges++] = {
          Pfn{first}, (align_up(mod.paddr + mod.size, kPageSize) >> kPageShift) - first};
    }
  }
  kernel_main(g_native_platform, g_boot_info);
}
