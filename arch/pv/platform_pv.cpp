// The Xen PV environment: console (console_io as the initial domain, the
// console ring otherwise), shutdown through SCHEDOP_shutdown, the shared
// info page (fault address, time, events), and the PV entry's C++ half.
#include "arch/fpu/fpu.h"
#include "base/abi.h"
#include "base/arch/cpu.h"
#include "base/console/console.h"
#include "base/arch/probe.h"
#include "arch/trap_frame.h"
#include "arch/switch.h"
#include "arch/upcalls.h"
#include "base/boot_info.h"
#include "base/layout.h"
#include "base/lib/kstring.h"
#include "hypercalls/hypercall.h"
#include "hypercalls/p2m.h"
#include "hypercalls/vcpu.h"
#include "arch/pv/pv.h"
#include "arch/smp/cross_cpu_entry.h"
#include "arch/smp/percpu.h"
#include "pvops/pte.h"
#include "base/frames/physmap.h"

extern "C" {
extern char boot_stack_top[];
extern char xen_ret_to_user[];
#define PVK_TRAP_STUB(n) void xen_trap_##n();
PVK_TRAP_STUB(0) PVK_TRAP_STUB(1) PVK_TRAP_STUB(3) PVK_TRAP_STUB(4) PVK_TRAP_STUB(5) PVK_TRAP_STUB(6)
PVK_TRAP_STUB(7) PVK_TRAP_STUB(8) PVK_TRAP_STUB(10) PVK_TRAP_STUB(11) PVK_TRAP_STUB(12) PVK_TRAP_STUB(13)
PVK_TRAP_STUB(14) PVK_TRAP_STUB(16) PVK_TRAP_STUB(17) PVK_TRAP_STUB(18) PVK_TRAP_STUB(19)
#undef PVK_TRAP_STUB
}

namespace pvk::pv {
namespace {

// What we keep of start_info: its page is only mapped during early boot.
struct StartInfoCopy {
  uint32_t flags;
  uint64_t nr_pages;
  uint64_t shared_info_maddr;
  Pfn console_pfn;
  uint32_t console_evtchn;
} g_si;

// A page of our image whose mapping is pointed at the shared info frame.
alignas(4096) uint8_t g_shared_info_page[4096];
shared_info* shinfo() { return reinterpret_cast<shared_info*>(g_shared_info_page); }

char g_cmdline[MAX_GUEST_CMDLINE];
BootInfo g_boot_info;

bool is_initial_domain() { return g_si.flags & SIF_INITDOMAIN; }

void console_io_write(const char* s, size_t n) { xen::console_io(CONSOLEIO_write, static_cast<unsigned>(n), s); }

// The domU console: a ring in a page of ours, and an event channel to
// tell xenconsoled there is output.
void ring_write(const char* s, size_t n) {
  auto* ring = phys_to_virt<xencons_interface>(g_si.console_pfn);
  while (n) {
    const XENCONS_RING_IDX cons = __atomic_load_n(&ring->out_cons, __ATOMIC_ACQUIRE);
    XENCONS_RING_IDX prod = ring->out_prod;
    size_t space = sizeof ring->out - (prod - cons);
    if (!space) {
      evtchn_send_t send{g_si.console_evtchn};
      xen::event_channel_op(EVTCHNOP_send, &send);
      xen::sched_op(SCHEDOP_yield, nullptr);
      continue;
    }
    for (; space && n; --space, --n) ring->out[MASK_XENCONS_IDX(prod++, ring->out)] = *s++;
    __atomic_store_n(&ring->out_prod, prod, __ATOMIC_RELEASE);
  }
  evtchn_send_t send{g_si.console_evtchn};
  xen::event_channel_op(EVTCHNOP_send, &send);
}

// A domU's last lines are still in the ring when it shuts down; the
// toolstack tears the console down with the domain, so wait (bounded) until
// xenconsoled has taken everything.
void drain_console_ring() {
  auto* ring = phys_to_virt<xencons_interface>(g_si.console_pfn);
  const uint64_t deadline = cpu::rdtsc() + 2 * 1000 * g_platform->tsc_khz;  // 2 s
  while (__atomic_load_n(&ring->out_cons, __ATOMIC_ACQUIRE) != ring->out_prod && cpu::rdtsc() < deadline) {
    evtchn_send_t send{g_si.console_evtchn};
    xen::event_channel_op(EVTCHNOP_send, &send);
    xen::sched_op(SCHEDOP_yield, nullptr);
  }
}

[[noreturn]] void shutdown(ExitStatus status) {
  if (!is_initial_domain()) drain_console_ring();
  sched_shutdown_t req{status == ExitStatus::Pass ? unsigned{SHUTDOWN_poweroff} : unsigned{SHUTDOWN_crash}};
  for (;;) xen::sched_op(SCHEDOP_shutdown, &req);
}

// This vCPU's slot in shared_info (vCPU ids below XEN_LEGACY_MAX_VCPUS
// all have one: pvk starts at most smp::kMaxCpus). Before the boot vCPU's
// PerCpu exists (the first lines of xen_boot_entry) only vCPU 0 runs.
unsigned this_vcpu() { return pvk_percpus[0].self ? this_cpu()->hw_id : 0; }
vcpu_info& my_vcpu_info() { return shinfo()->vcpu_info[this_vcpu()]; }
static_assert(smp::kMaxCpus <= XEN_LEGACY_MAX_VCPUS, "vcpu_info in shared_info suffices");

uint64_t fault_address() { return my_vcpu_info().arch.cr2; }

// Each vCPU's VIRQ_TIMER channel (index = PerCpu::id; 0: none yet).
evtchn_port_t g_timer_port[smp::kMaxCpus] = {};
uint64_t g_timer_period_ns = 0;

// Xen system time now, from this vCPU's vcpu_time_info scale (seqlock-style reads).
uint64_t system_time_ns() {
  const vcpu_time_info& t = my_vcpu_info().time;
  for (;;) {
    const uint32_t version = __atomic_load_n(&t.version, __ATOMIC_ACQUIRE);
    if (version & 1) {  // Xen is updating it on another CPU
      cpu::relax();
      continue;
    }
    uint64_t delta = cpu::rdtsc() - t.tsc_timestamp;
    delta = t.tsc_shift >= 0 ? delta << t.tsc_shift : delta >> -t.tsc_shift;
    const uint64_t ns = t.system_time + static_cast<uint64_t>((static_cast<unsigned __int128>(delta) * t.tsc_to_system_mul) >> 32);
    if (__atomic_load_n(&t.version, __ATOMIC_ACQUIRE) == version) return ns;
  }
}

// Whether this vCPU's one-shot is pending (index = PerCpu::id).
bool g_timer_armed[smp::kMaxCpus] = {};

// A one-shot on this vCPU (VCPUOP_set_singleshot_timer is only allowed
// for the calling vCPU).
void arm_timer() {
  vcpu_set_singleshot_timer_t t{system_time_ns() + g_timer_period_ns, 0};
  if (xen::vcpu_op(VCPUOP_set_singleshot_timer, static_cast<int>(this_vcpu()), &t) >= 0)
    g_timer_armed[pvk_percpus[0].self ? this_cpu()->id : 0] = true;
}

// Tickless idle: a vCPU in its idle loop (no process) lets the one-shot
// lapse and sleeps until an event (a Reschedule kick). A vCPU woken 100
// times a second comes back onto its physical CPU each time, which puts
// that CPU back in the set Xen must IPI (and wait for) on the other
// vCPU's page-table type changes: measured, an idle second vCPU that
// ticked made the other's fork-heavy work several times slower.
void timer_resume_pv() {
  if (g_timer_period_ns && g_timer_port[this_cpu()->id] && !g_timer_armed[this_cpu()->id]) arm_timer();
}

// This vCPU's tick: VIRQ_TIMER (a per-vCPU VIRQ) bound to it, unmasked
// (EVTCHNOP_unmask: a pending event is delivered then), re-armed as a
// one-shot at every tick.
void bind_cpu_timer() {
  const unsigned vcpu = this_vcpu();
  xen::vcpu_op(VCPUOP_stop_periodic_timer, static_cast<int>(vcpu), nullptr);
  evtchn_bind_virq_t bind{VIRQ_TIMER, vcpu, 0};
  if (xen::event_channel_op(EVTCHNOP_bind_virq, &bind) < 0) return;
  g_timer_port[this_cpu()->id] = bind.port;
  evtchn_unmask_t unmask{bind.port};
  xen::event_channel_op(EVTCHNOP_unmask, &unmask);
  arm_timer();
}

void start_timer(uint64_t period_ns) {
  g_timer_period_ns = period_ns;
  bind_cpu_timer();
}

void timer_ack() {}

// Ports another vCPU owns in word w (their timer and IPI channels): this
// vCPU must leave their pending bits alone.
xen_ulong_t foreign_ports(unsigned w, unsigned self) {
  xen_ulong_t bits = 0;
  for (unsigned c = 0; c < smp::kMaxCpus; ++c) {
    if (c == self) continue;
    const evtchn_port_t ports[2] = {g_timer_port[c], smp::cpu(c).ipi_port};
    for (evtchn_port_t p : ports)
      if (p && p / 64 == w) bits |= xen_ulong_t{1} << (p % 64);
  }
  return bits;
}

// Clears every pending unmasked event of this vCPU's; true if its timer
// was among them. Its IPI channel runs the cross-CPU requests. Masked
// ports stay pending (they never raise this upcall: an AP's wake-up
// channel, masked and polled while it parks), and so do other vCPUs'
// ports sharing a word with ours: clearing them would eat their events.
bool handle_event() {
  const unsigned self = pvk_percpus[0].self ? this_cpu()->id : 0;
  vcpu_info& v = my_vcpu_info();
  v.evtchn_upcall_pending = 0;
  bool tick = false, ipi = false;
  const evtchn_port_t timer = g_timer_port[self];
  const evtchn_port_t ipi_port = smp::cpu(self).ipi_port;
  const xen_ulong_t sel = __atomic_exchange_n(&v.evtchn_pending_sel, 0, __ATOMIC_ACQ_REL);
  for (unsigned w = 0; w < sizeof(xen_ulong_t) * 8; ++w) {
    if (!(sel & (xen_ulong_t{1} << w))) continue;
    const xen_ulong_t keep = __atomic_load_n(&shinfo()->evtchn_mask[w], __ATOMIC_ACQUIRE) | foreign_ports(w, self);
    const xen_ulong_t fired = __atomic_fetch_and(&shinfo()->evtchn_pending[w], keep, __ATOMIC_ACQ_REL) & ~keep;
    if (g_timer_period_ns && timer && w == timer / 64 && (fired & (xen_ulong_t{1} << (timer % 64)))) tick = true;
    if (ipi_port && w == ipi_port / 64 && (fired & (xen_ulong_t{1} << (ipi_port % 64)))) ipi = true;
  }
  if (tick) {
    g_timer_armed[self] = false;
    // Only a vCPU running a process needs its next tick (the boot vCPU
    // before processes exist too: nothing else then runs its timer).
    if (!pvk_percpus[0].self || this_cpu()->current || self == 0) arm_timer();
  }
  if (ipi) smp::cross_cpu_interrupt();
  return tick;
}

// "Interrupts" of a PV vCPU: its event upcall mask.
uint64_t irq_save_pv() {
  vcpu_info& v = my_vcpu_info();
  const uint8_t old = __atomic_load_n(&v.evtchn_upcall_mask, __ATOMIC_RELAXED);
  __atomic_store_n(&v.evtchn_upcall_mask, 1, __ATOMIC_SEQ_CST);
  return old;
}

void irq_restore_pv(uint64_t saved) {
  vcpu_info& v = my_vcpu_info();
  __atomic_store_n(&v.evtchn_upcall_mask, static_cast<uint8_t>(saved), __ATOMIC_SEQ_CST);
  // Unmasked with an upcall pending: Xen delivers it on the next way out
  // of the hypervisor; any harmless hypercall makes that now.
  if (!saved && __atomic_load_n(&v.evtchn_upcall_pending, __ATOMIC_ACQUIRE))
    xen::hypercall_uncounted(__HYPERVISOR_xen_version, XENVER_version, 0);
}

// SCHEDOP_block unmasks this vCPU's events and blocks unless one is
// pending; the upcall runs (handle_event) before the hypercall returns
// here. Masked again after, as the kernel runs.
void idle_halt_pv() {
  xen::block();
  __atomic_store_n(&my_vcpu_info().evtchn_upcall_mask, 1, __ATOMIC_SEQ_CST);
}

// The user's %gs selector; Xen loads it with the user GS base live (a
// load in the guest kernel would replace the kernel's GS base).
void load_user_gs_pv(uint16_t sel) { xen::hypercall_uncounted(__HYPERVISOR_set_segment_base, SEGBASE_GS_USER_SEL, sel); }

bool send_ipi_pv(unsigned cpu) {
  const evtchn_port_t port = smp::cpu(cpu).ipi_port;
  return port && xen::send_uncounted(port) >= 0;
}

bool from_user(const TrapFrame& f) { return (f.cs & 3) == 3; }

void set_kernel_stack(uint64_t top) { xen::stack_switch(FLAT_KERNEL_SS, top); }

ErrorOr<void> set_user_fs_base(uint64_t base) {
  if (base >= abi::kNonCanonicalStart) return Errno::EINVAL;
  if (const long rc = xen::set_segment_base(SEGBASE_FS, base); rc < 0) {
    kprintf("pvk: Xen refused the FS base 0x%lx (set_segment_base: %ld)\n", base, rc);
    return Errno::EINVAL;  // Xen refuses a base it cannot load (non-canonical): -EINVAL
  }
  return {};
}

void map_shared_info() {
  const uint64_t pte = (g_si.shared_info_maddr & ~(kPageSize - 1)) | pte_flags::KernelRw.bits;
  if (xen::update_va_mapping(reinterpret_cast<uint64_t>(g_shared_info_page), pte, UVMF_INVLPG | UVMF_LOCAL) < 0) {
    console_io_write("pvk: cannot map shared_info\n", 28);
    shutdown(ExitStatus::Fail);
  }
}

// From the vcpu_time_info scale: Hz = (10^9 << 32) / mul, shifted by -shift.
uint64_t tsc_khz() {
  const vcpu_time_info& t = shinfo()->vcpu_info[0].time;
  uint64_t khz = (uint64_t{1000000} << 32) / t.tsc_to_system_mul;
  return t.tsc_shift >= 0 ? khz >> t.tsc_shift : khz << -t.tsc_shift;
}

}  // namespace

// The virtual IDT, terminated by an entry with no address. Every vCPU gets
// the same one: the boot CPU through set_trap_table, the others inside
// their VCPUOP_initialise context (smp_pv.cpp).
const trap_info* trap_table() {
  static const trap_info kTraps[] = {
#define PVK_TRAP(n) {n, 0, FLAT_KERNEL_CS, reinterpret_cast<unsigned long>(&xen_trap_##n)},
      PVK_TRAP(0) PVK_TRAP(1) PVK_TRAP(3) PVK_TRAP(4) PVK_TRAP(5) PVK_TRAP(6) PVK_TRAP(7) PVK_TRAP(8)
      PVK_TRAP(10) PVK_TRAP(11) PVK_TRAP(12) PVK_TRAP(13) PVK_TRAP(14) PVK_TRAP(16) PVK_TRAP(17)
      PVK_TRAP(18) PVK_TRAP(19)
#undef PVK_TRAP
      {0, 0, 0, 0},
  };
  // Events masked on entry, like an interrupt gate — the kernel is never
  // interrupted; events wait for the return to user mode. Only int3 may be
  // raised by user code with a software interrupt (DPL 3, so it is SIGTRAP
  // as on hardware); any other `int N` from user mode is a #GP.
  static trap_info traps[sizeof kTraps / sizeof kTraps[0]];
  if (traps[0].address) return traps;
  for (size_t i = 0; i < sizeof kTraps / sizeof kTraps[0]; ++i) {
    traps[i] = kTraps[i];
    if (!traps[i].address) continue;
    TI_SET_IF(&traps[i], 1);
    if (traps[i].vector == 3) TI_SET_DPL(&traps[i], 3);
  }
  return traps;
}

shared_info* shared_info_page() { return shinfo(); }

namespace {

extern Platform* g_xen_platform_ptr;

void install_traps() {
  const trap_info* traps = trap_table();
  if (xen::set_trap_table(traps) < 0) {
    const char* msg = "pvk: Xen refused the trap table\n";
    console_io_write(msg, strlen(msg));
    shutdown(ExitStatus::Fail);
  }
  callback_register event = callback(CALLBACKTYPE_event, &xen_event_callback);
  callback_register failsafe = callback(CALLBACKTYPE_failsafe, &xen_failsafe_callback);
  callback_register syscall = callback(CALLBACKTYPE_syscall, &xen_syscall_callback);
  CompatSyscallCallbacks compat;
  callback_register* const callbacks[] = {&event, &failsafe, &syscall, &compat.syscall32, &compat.sysenter};
  for (callback_register* cb : callbacks) {
    if (xen::callback_op(CALLBACKOP_register, cb) < 0) {
      const char* msg = "pvk: Xen refused a callback registration\n";
      console_io_write(msg, strlen(msg));
      shutdown(ExitStatus::Fail);
    }
  }
  pvk_ret_to_user = xen_ret_to_user;
  g_xen_platform_ptr->irq_save = &irq_save_pv;
  g_xen_platform_ptr->irq_restore = &irq_restore_pv;
  g_xen_platform_ptr->idle_halt = &idle_halt_pv;
  g_xen_platform_ptr->send_ipi = &send_ipi_pv;
  g_xen_platform_ptr->start_cpu_timer = &bind_cpu_timer;
  g_xen_platform_ptr->load_user_gs = &load_user_gs_pv;
  g_xen_platform_ptr->halt_lock_waiters = true;
  g_xen_platform_ptr->timer_resume = &timer_resume_pv;
  xen::stack_switch(FLAT_KERNEL_SS, reinterpret_cast<uint64_t>(boot_stack_top));
}

// Once the kernel's tables are live: shared_info mapped into them, then the
// other vCPUs started.
void kernel_space_ready() {
  map_shared_info();
  start_secondary_cpus();
}

Platform g_xen_platform{"xen",          "domU",       &ring_write,       &shutdown,  &fault_address,
                        &handle_event, &kernel_space_ready, 0, FLAT_USER_CS, FLAT_USER_SS, &set_kernel_stack,
                        &start_timer,  &timer_ack,    &from_user,         &set_user_fs_base};

Platform* g_xen_platform_ptr = &g_xen_platform;

Pfn boot_pfn(uint64_t va) { return Pfn{(va - PVK_KERNEL_VMA) >> kPageShift}; }
uint64_t max(uint64_t a, uint64_t b) { return a > b ? a : b; }

}  // namespace
}  // namespace pvk::pv

// Called by xen_entry.S on Xen's initial page tables.
extern "C" [[noreturn]] void xen_boot_entry(start_info_t* si, uint64_t entry_rsp) {
  using namespace pvk;
  using namespace pvk::pv;
  const uint64_t tsc = cpu::rdtsc();
  smp::install_cross_cpu();
  g_platform = &g_xen_platform;  // traps from here on report through it
  // Until the kernel's own tables are live, frames are reached through Xen's
  // initial mapping: pseudo-physical frame k at VIRT_BASE + k pages.
  g_physmap_offset = PVK_KERNEL_VMA;
  g_si.flags = si->flags;
  g_si.nr_pages = si->nr_pages;
  g_si.shared_info_maddr = si->shared_info;
  xen::g_p2m_first_pfn = boot_pfn(si->mfn_list);
  xen::g_p2m_entries = si->nr_pages;
  if (is_initial_domain()) {
    g_xen_platform.role = "dom0";
    g_xen_platform.console_write = &console_io_write;
  } else {
    g_si.console_pfn = xen::mfn_to_pfn(Mfn{si->console.domU.mfn});
    g_si.console_evtchn = si->console.domU.evtchn;
  }
  map_shared_info();
  install_traps();
  fpu::init_boot_cpu(/*xen_pv=*/true);
  init_boot_cpu();
  g_xen_platform.tsc_khz = tsc_khz();

  // Xen cuts a longer line to 1023 bytes and may leave the array without a
  // NUL: copy at most 1023 (g_cmdline stays terminated). A line that fills
  // them is longer than kMaxCmdline, so the parser refuses it as maybe cut.
  static_assert(sizeof g_cmdline - 1 > kMaxCmdline && sizeof g_cmdline == sizeof si->cmd_line);
  for (size_t i = 0; i < sizeof g_cmdline - 1 && si->cmd_line[i]; ++i) g_cmdline[i] = static_cast<char>(si->cmd_line[i]);
  g_boot_info.cmdline = g_cmdline;
  g_boot_info.boot_tsc = tsc;
  g_boot_info.ram[g_boot_info.ram_ranges++] = {Pfn{0}, si->nr_pages};

  // The builder laid out, from the image up: the P2M list, start_info, the
  // console and xenstore pages (domU), the boot page tables, the boot stack.
  // All of it stays ours to keep; the frames below the image are free RAM.
  const Pfn pt = boot_pfn(si->pt_base);
  uint64_t end = raw(pt) + si->nr_pt_frames;
  end = max(end, raw(boot_pfn(reinterpret_cast<uint64_t>(si))) + 1);
  end = max(end, raw(xen::g_p2m_first_pfn) + (si->nr_pages * sizeof(uint64_t) + kPageSize - 1) / kPageSize);
  end = max(end, raw(boot_pfn(entry_rsp - 1)) + 1);
  if (!is_initial_domain()) {
    end = max(end, raw(g_si.console_pfn) + 1);
    end = max(end, raw(xen::mfn_to_pfn(Mfn{si->store_mfn})) + 1);
  }
  // dom0's ramdisk (the root filesystem archive): the builder put it right
  // after the image, so the range above already keeps its frames; say it
  // again in case a builder places it elsewhere.
  if (si->mod_len) {
    const uint64_t first = (si->flags & SIF_MOD_START_PFN) ? si->mod_start : raw(boot_pfn(si->mod_start));
    const uint64_t offset = (si->flags & SIF_MOD_START_PFN) ? 0 : si->mod_start & (kPageSize - 1);
    g_boot_info.initrd_paddr = (first << kPageShift) + offset;
    g_boot_info.initrd_bytes = si->mod_len;
    g_boot_info.reserved[g_boot_info.reserved_ranges++] = {
        Pfn{first}, (align_up(offset + si->mod_len, kPageSize) >> kPageShift)};
  }
  const uint64_t image_first = PVK_KERNEL_LOAD >> kPageShift;
  g_boot_info.reserved[g_boot_info.reserved_ranges++] = {Pfn{image_first}, end - image_first};
  g_boot_info.boot_tables = {pt, si->nr_pt_frames};
  g_boot_info.boot_root = pt;
  g_boot_info.release_boot_root = true;

  // How far the initial mapping reaches: Xen maps at least 512 KiB past the
  // boot stack. Probe page by page (faults are caught through .extable).
  uint64_t mapped = end;
  uint8_t byte;
  while (mapped < si->nr_pages && probe_read_u8(reinterpret_cast<void*>(PVK_KERNEL_VMA + (mapped << kPageShift)), &byte))
    ++mapped;
  g_boot_info.early_physmap_pfns = mapped;

  kernel_main(g_xen_platform, g_boot_info);
}
