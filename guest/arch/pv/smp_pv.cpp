// Xen PV bring-up of the other vCPUs. Xen says which exist (VCPUOP_is_up
// answers -ENOENT past the last); each gets a context built from the boot
// vCPU's own set-up — the same virtual IDT and callbacks, the kernel's root
// (as an MFN, xen_pfn_to_cr3), its own kernel stack (also the one Xen
// switches to on entry from user mode: kernel_ss/kernel_sp), its PerCpu as
// kernel GS base — then VCPUOP_up. It reports in and parks in SCHEDOP_block.
//
// No GDT of its own (gdt_ents 0), as the boot vCPU: a PV kernel runs on
// the flat selectors of Xen's reserved GDT entries, and a GDT frame would
// need every writable mapping of it gone (the physmap's included), which
// is an MMU operation only pvops/ may make.
//
// Events: vCPUs below XEN_LEGACY_MAX_VCPUS (32) have their vcpu_info in
// shared_info already; pvk starts at most smp::kMaxCpus (16), so no
// VCPUOP_register_vcpu_info. No event channel is bound to an AP yet, so
// its SCHEDOP_block lasts until one is (issue 15, part 2: IPIs, timers).
#include "base/arch/cpu.h"
#include "base/console/console.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#include "base/lib/format.h"
#include "base/lib/kstring.h"
#include "guest/arch/pv/pv.h"
#include "guest/smp/bringup.h"
#include "guest/smp/percpu.h"
#include "hypercalls/p2m.h"
#include "hypercalls/vcpu.h"
#include "mm/kernel_space.h"

extern "C" {
void xen_event_callback();
void xen_failsafe_callback();
void xen_syscall_callback();
void xen_compat_syscall_callback();
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
  c.flags = VGCF_in_kernel;
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

void init_boot_cpu() {
  PerCpu& boot = smp::cpu(0);
  boot.self = &boot;
  boot.id = 0;
  boot.hw_id = 0;
  boot.online = 1;
  xen::set_kernel_gs_base(reinterpret_cast<uint64_t>(&boot));
}

void start_secondary_cpus() {
  const unsigned vcpus = probe_vcpus();
  smp::counts().set_found(vcpus);
  if (vcpus <= 1) return;
  smp::Bringup bringup("xen");
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
  // What the boot vCPU registered for itself and the context does not
  // carry: 32-bit user code's syscall/sysenter land in the killing stub.
  callback_register syscall32{CALLBACKTYPE_syscall32, CALLBACKF_mask_events,
                              reinterpret_cast<xen_callback_t>(&xen_compat_syscall_callback)};
  callback_register sysenter{CALLBACKTYPE_sysenter, CALLBACKF_mask_events,
                             reinterpret_cast<xen_callback_t>(&xen_compat_syscall_callback)};
  xen::callback_register_uncounted(&syscall32);
  xen::callback_register_uncounted(&sysenter);
  smp::report_online(*self);
  for (;;) xen::block();
}
