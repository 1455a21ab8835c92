// vCPU operations for SMP bring-up under Xen PV: probing which vCPUs the
// domain has, VCPUOP_initialise/VCPUOP_up, the kernel GS base, parking.
// Uncounted (hypercall_uncounted): they happen once per vCPU at boot or on
// a CPU other than the boot CPU, and the counters describe the measured path.
#pragma once
#include "hypercalls/hypercall.h"

namespace pvk::xen {

// VCPUOP_is_up: 1 up, 0 down, negative (-ENOENT) when the vCPU does not exist.
inline long vcpu_is_up(unsigned vcpu) {
  return hypercall_uncounted(__HYPERVISOR_vcpu_op, VCPUOP_is_up, vcpu, 0);
}
inline long vcpu_initialise(unsigned vcpu, vcpu_guest_context_t* ctx) {
  return hypercall_uncounted(__HYPERVISOR_vcpu_op, VCPUOP_initialise, vcpu, arg(ctx));
}
inline long vcpu_up(unsigned vcpu) { return hypercall_uncounted(__HYPERVISOR_vcpu_op, VCPUOP_up, vcpu, 0); }
inline long set_kernel_gs_base(uint64_t base) {
  return hypercall_uncounted(__HYPERVISOR_set_segment_base, SEGBASE_GS_KERNEL, base);
}
inline long callback_register_uncounted(const callback_register* cb) {
  return hypercall_uncounted(__HYPERVISOR_callback_op, CALLBACKOP_register, arg(cb));
}
// Blocks this vCPU until an event for it is pending (enables its event
// delivery first, as SCHEDOP_block does).
inline long block() { return hypercall_uncounted(__HYPERVISOR_sched_op, SCHEDOP_block, 0); }
// Blocks this vCPU until `port` is pending, whatever its mask and this
// vCPU's upcall mask (SCHEDOP_poll on one port, no timeout).
inline long poll(evtchn_port_t* port) {
  sched_poll_t p{};
  set_xen_guest_handle(p.ports, port);
  p.nr_ports = 1;
  return hypercall_uncounted(__HYPERVISOR_sched_op, SCHEDOP_poll, arg(&p));
}
// An event channel that signals `vcpu` when sent (EVTCHNOP_bind_ipi); the
// port, or a negative Xen error.
inline long bind_ipi(unsigned vcpu) {
  evtchn_bind_ipi_t b{vcpu, 0};
  const long rc = hypercall_uncounted(__HYPERVISOR_event_channel_op, EVTCHNOP_bind_ipi, arg(&b));
  return rc < 0 ? rc : static_cast<long>(b.port);
}
inline long send_uncounted(evtchn_port_t port) {
  evtchn_send_t s{port};
  return hypercall_uncounted(__HYPERVISOR_event_channel_op, EVTCHNOP_send, arg(&s));
}

}  // namespace pvk::xen
