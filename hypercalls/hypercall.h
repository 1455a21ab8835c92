// Raw hypercalls through the hypercall page Xen fills in at boot
// (XEN_ELFNOTE_HYPERCALL_PAGE): entry N is 32 bytes at hypercall_page + 32*N.
// Every call is counted, so records can say how many a measurement cost.
#pragma once
#include "hypercalls/xen_abi.h"
#include "base/counters.h"

extern "C" char hypercall_page[];

namespace pvk::xen {

// Uncounted: for calls the counters must not see — made by CPUs other than
// the boot CPU (bring-up, parking; their increments would race the boot
// CPU's, and the counters describe the measured path) — see hypercalls/vcpu.h.
inline long hypercall_uncounted(unsigned nr, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0,
                                uint64_t a5 = 0) {
  long rc;
  register uint64_t r10 asm("r10") = a4;
  register uint64_t r8 asm("r8") = a5;
  void* entry = hypercall_page + nr * 32;
  asm volatile("call *%[entry]"
               : "=a"(rc), "+D"(a1), "+S"(a2), "+d"(a3), "+r"(r10), "+r"(r8)
               : [entry] "r"(entry)
               : "memory", "rcx", "r11", "r9");
  return rc;
}

inline long hypercall(unsigned nr, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0,
                      uint64_t a5 = 0) {
  count_event(g_mmu_counters.hypercalls);
  return hypercall_uncounted(nr, a1, a2, a3, a4, a5);
}

template <typename T>
inline uint64_t arg(T* p) { return reinterpret_cast<uint64_t>(p); }

inline long console_io(int cmd, unsigned len, const char* buf) {
  return hypercall(__HYPERVISOR_console_io, cmd, len, arg(buf));
}
inline long sched_op(int cmd, void* a) { return hypercall(__HYPERVISOR_sched_op, cmd, arg(a)); }
inline long vm_assist(unsigned cmd, unsigned type) { return hypercall(__HYPERVISOR_vm_assist, cmd, type); }
inline long set_trap_table(const trap_info* t) { return hypercall(__HYPERVISOR_set_trap_table, arg(t)); }
inline long callback_op(int cmd, const void* a) { return hypercall(__HYPERVISOR_callback_op, cmd, arg(a)); }
inline long stack_switch(uint64_t ss, uint64_t sp) { return hypercall(__HYPERVISOR_stack_switch, ss, sp); }
// which: SEGBASE_FS (a user thread's TLS base), SEGBASE_GS_USER, ...
inline long set_segment_base(unsigned which, uint64_t base) {
  return hypercall(__HYPERVISOR_set_segment_base, which, base);
}
// XENVER_version: the cheapest hypercall there is (SYS_pvk_probe's null hypercall).
inline long xen_version(int cmd, void* out) { return hypercall(__HYPERVISOR_xen_version, cmd, arg(out)); }
inline long event_channel_op(int cmd, void* a) { return hypercall(__HYPERVISOR_event_channel_op, cmd, arg(a)); }
inline long vcpu_op(int cmd, unsigned vcpu, void* a) { return hypercall(__HYPERVISOR_vcpu_op, cmd, vcpu, arg(a)); }
inline long update_va_mapping(uint64_t va, uint64_t pte, uint64_t flags) {
  return hypercall(__HYPERVISOR_update_va_mapping, va, pte, flags);
}
inline long mmu_update(mmu_update_t* reqs, unsigned count, unsigned* done) {
  count_event(g_mmu_counters.mmu_update_entries, count);
  return hypercall(__HYPERVISOR_mmu_update, arg(reqs), count, arg(done), DOMID_SELF);
}
inline long mmuext_op(mmuext_op_t* ops, unsigned count, unsigned* done) {
  count_event(g_mmu_counters.mmuext_ops, count);
  return hypercall(__HYPERVISOR_mmuext_op, arg(ops), count, arg(done), DOMID_SELF);
}
inline long multicall(multicall_entry_t* calls, unsigned count) {
  count_event(g_mmu_counters.multicalls);
  count_event(g_mmu_counters.multicall_calls, count);
  return hypercall(__HYPERVISOR_multicall, arg(calls), count);
}

}  // namespace pvk::xen
