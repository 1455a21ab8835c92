// Xen PV bring-up of the other vCPUs. Xen says which exist (VCPUOP_is_up
// answers -ENOENT past the last); each gets a context built from the boot
// vCPU's own set-up — the same virtual IDT and callbacks, the kernel's root
// (as an MFN, xen_pfn_to_cr3), its own kernel stack (also the one Xen
// switches to on entry from user mode: kernel_ss/kernel_sp), its PerCpu as
// kernel GS base — then VCPUOP_up. It reports in and parks in SCHEDOP_poll.
//
// No GDT of its own (gdt_ents 0), as the boot vCPU: a PV kernel runs on
// the flat selectors of Xen's reserved GDT entries, and a GDT frame would
// need every writable mapping of it gone (the physmap's included), which
// is an MMU operation only pvops/ may make.
//
// Events: vCPUs below XEN_LEGACY_MAX_VCPUS (32) have their vcpu_info in
// shared_info already; pvk starts at most smp::kMaxCpus (16), so no
// VCPUOP_register_vcpu_info. Each AP gets an IPI event channel
// (EVTCHNOP_bind_ipi), masked while the AP parks in SCHEDOP_poll on that
// port (which wakes it whatever the masks). Bring-up sends each AP one
// wake-up and waits for it to be taken, so the path is known to work before
// anything relies on it; the AP then unmasks the channel and goes to its
// scheduler (secondary_cpu_scheduler), where IPIs and its own VIRQ_TIMER
// arrive through the event upcall on that vCPU.
#include "arch/fpu/fpu.h"
#include "base/arch/cpu.h"
#include "base/console/console.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#include "base/lib/error_or.h"
#include "base/lib/format.h"
#include "base/lib/kstring.h"
#include "arch/pv/pv.h"
#include "arch/upcalls.h"
#include "arch/smp/bringup.h"
#include "arch/smp/percpu.h"
#include "hypercalls/p2m.h"
#include "hypercalls/vcpu.h"
#include "mm/kernel_space.h"

extern "C" {
void xen_ap_start();
}

namespace pvk::pv {
namespace {

constexpr uint64_t kStackPages = 4;
constexpr uint64_t kContextPages = (sizeof(vcpu_guest_context_t) + kPageSize - 1) / kPageSize;

// How many vCPUs the domain has: the first id VCPUOP_is_up refuses ends
// the list (vCPU ids are dense from 0).
unsigned probe_vcpus() {
  unsigned n = 1;
  while (n < smp::kMaxCpus && xen::vcpu_is_up(n) >= 0) ++n;
  return n;
}

void build_context(vcpu_guest_context_t& c, PerCpu& pc) {
  memset(&c, 0, sizeof c);
  // As the boot vCPU's registrations (CALLBACKF_mask_events): system calls
  // and the failsafe callback enter with events masked, like the kernel's
  // every other entry.
  c.flags = VGCF_in_kernel | VGCF_syscall_disables_events | VGCF_failsafe_disables_events;
  c.user_regs.rip = reinterpret_cast<uint64_t>(&xen_ap_start);
  c.user_regs.rsp = pc.kernel_stack_top;
  c.user_regs.rdi = reinterpret_cast<uint64_t>(&pc);
  c.user_regs.cs = FLAT_KERNEL_CS;
  c.user_regs.ss = FLAT_KERNEL_SS;
  c.user_regs.rflags = 0x2;  // the reserved bit only; Xen sets IF itself
  for (const trap_info* t = trap_table(); t->address; ++t) c.trap_ctxt[t->vector] = *t;
  c.kernel_ss = FLAT_KERNEL_SS;
  c.kernel_sp = pc.kernel_stack_top;
  c.ctrlreg[3] = xen_pfn_to_cr3(raw(xen::pfn_to_mfn(kernel_root())));
  c.event_callback_eip = reinterpret_cast<uint64_t>(&xen_event_callback);
  c.failsafe_callback_eip = reinterpret_cast<uint64_t>(&xen_failsafe_callback);
  c.syscall_callback_eip = reinterpret_cast<uint64_t>(&xen_syscall_callback);
  c.gs_base_kernel = reinterpret_cast<uint64_t>(&pc);
}

}  // namespace

// GS under Xen PV (64-bit; Xen 4.17, xen/arch/x86/pv/misc-hypercalls.c and
// domain.c): a PV kernel runs in ring 3 and cannot swapgs, so Xen keeps two
// GS bases per vCPU, gs_base_kernel and gs_base_user, and toggle_guest_mode
// saves the live one and swaps on every guest kernel<->user switch (a
// syscall, trap or event from user mode; the iret hypercall back). The
// user's %gs selector stays loaded in the kernel, but its base is not the
// one the kernel sees. HYPERVISOR_set_segment_base(SEGBASE_GS_KERNEL, b),
// made in kernel mode, writes the live base and the saved kernel one; a new
// vCPU gets it from its VCPUOP_initialise context (gs_base_kernel, above).
// User code can change only the user base (selector loads; wrgsbase if the
// kernel enabled FSGSBASE, which pvk does not), so this_cpu() in the kernel
// is this vCPU's PerCpu from here on; check_this_cpu checks it per entry.
void init_boot_cpu() {
  PerCpu& boot = smp::cpu(0);
  boot.self = &boot;
  boot.id = 0;
  boot.hw_id = 0;
  boot.online = 1;
  if (long rc = xen::set_kernel_gs_base(reinterpret_cast<uint64_t>(&boot)); rc < 0)
    panic("Xen refused the kernel GS base (set_segment_base: %ld)", rc);
}

void start_secondary_cpus() {
  const unsigned vcpus = probe_vcpus();
  smp::counts().set_found(vcpus);
  if (vcpus <= 1) return;
  smp::Bringup bringup("xen");
  // The boot vCPU's own IPI channel (the others bind theirs below), live
  // at once: it takes cross-CPU requests through its event upcall.
  if (long port = xen::bind_ipi(0); port > 0) smp::cpu(0).ipi_port = static_cast<uint32_t>(port);
  auto ctx_frames = frames().try_alloc_run(kContextPages);
  if (ctx_frames.is_error()) {
    bringup.fail(1, 1, "no frames for a vCPU context");
    return;
  }
  auto& ctx = *phys_to_virt<vcpu_guest_context_t>(ctx_frames.value());
  for (unsigned id = 1; id < vcpus; ++id) {
    PerCpu& pc = smp::cpu(id);
    pc.self = &pc;
    pc.id = id;
    pc.hw_id = id;
    auto stack = frames().try_alloc_run(kStackPages);
    if (stack.is_error()) {
      bringup.fail(id, id, "no frames for its kernel stack");
      break;
    }
    pc.kernel_stack_top = reinterpret_cast<uint64_t>(phys_to_virt<uint8_t>(stack.value()) + kStackPages * kPageSize);
    if (long port = xen::bind_ipi(id); port > 0) {
      pc.ipi_port = static_cast<uint32_t>(port);
      // Masked: a send sets only the pending bit (and wakes the poller),
      // never vCPU 0's or the AP's upcall.
      __atomic_or_fetch(&shared_info_page()->evtchn_mask[port / 64], xen_ulong_t{1} << (port % 64),
                        __ATOMIC_ACQ_REL);
    }
    build_context(ctx, pc);
    if (long rc = xen::vcpu_initialise(id, &ctx); rc < 0) {
      char why[64];
      format(why, sizeof why, "VCPUOP_initialise refused (%ld)", rc);
      bringup.fail(id, id, why);
      break;
    }
    if (long rc = xen::vcpu_up(id); rc < 0) {
      char why[64];
      format(why, sizeof why, "VCPUOP_up refused (%ld)", rc);
      bringup.fail(id, id, why);
      break;
    }
    if (!bringup.wait_online(pc)) break;
    if (pc.ipi_port && xen::send_uncounted(pc.ipi_port) >= 0) bringup.wait_wakeup(pc);
  }
  // Xen copied each context; the frames go back (the stacks stay).
  for (uint64_t i = 0; i < kContextPages; ++i) frames().must_free(Pfn{raw(ctx_frames.value()) + i});
}

}  // namespace pvk::pv

// A secondary vCPU, on the kernel's tables and its own stack, events
// masked until it blocks.
extern "C" [[noreturn]] void xen_ap_entry(pvk::PerCpu* self) {
  using namespace pvk;
  vcpu_info& vi = pv::shared_info_page()->vcpu_info[self->hw_id];
  __atomic_store_n(&vi.evtchn_upcall_mask, 1, __ATOMIC_RELEASE);
  fpu::init_secondary_cpu();  // each vCPU has its own virtual CR4.OSXSAVE, XCR0 and CR0.TS
  // What the boot vCPU registered for itself and the context does not
  // carry: 32-bit user code's syscall/sysenter land in the killing stub.
  pv::CompatSyscallCallbacks compat;
  xen::callback_register_uncounted(&compat.syscall32);
  xen::callback_register_uncounted(&compat.sysenter);
  // Its kernel GS base came with the context (gs_base_kernel): a vCPU that
  // cannot find itself through it never reports in, and bring-up names it.
  if (this_cpu() != self || self->self != self) {
    for (;;) xen::block();
  }
  smp::report_online(*self);
  if (!self->ipi_port) {
    for (;;) xen::block();  // no wake-up channel: nothing is bound to this vCPU
  }
  evtchn_port_t port = self->ipi_port;
  xen_ulong_t& pending = pv::shared_info_page()->evtchn_pending[port / 64];
  const xen_ulong_t bit = xen_ulong_t{1} << (port % 64);
  // Bring-up's wake-up, taken while the channel is masked.
  for (;;) {
    xen::poll(&port);
    if (__atomic_fetch_and(&pending, ~bit, __ATOMIC_ACQ_REL) & bit) {
      __atomic_add_fetch(&self->ipis_taken, 1, __ATOMIC_RELEASE);
      break;
    }
  }
  // From here on its IPIs arrive through the event upcall (handle_event),
  // like the boot vCPU's: unmasked (a send in between is delivered then).
  evtchn_unmask_t unmask{port};
  xen::event_channel_op(EVTCHNOP_unmask, &unmask);
  secondary_cpu_scheduler();
}
