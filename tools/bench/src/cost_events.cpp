#include "pvk/bench/cost_events.hpp"

#include <algorithm>
#include <string>

namespace pvk::bench {

// Each event's own instructions (CostEvent::instructions) are counted from
// the instructions that make the transition, read off the entry code
// (arch/native/*.S, arch/pv/trap_entry.S) and Xen 4.17's
// paths, not measured: QEMU's -icount counts one per retired instruction,
// a rep string one per iteration, and an exception or interrupt delivery
// none (the faulting instruction is counted when it is re-executed). `pvk
// calibrate --icount` checks them: its profile gives each event back its
// instructions, and projecting a virtual-time run with it reproduces the run.
const std::vector<CostEvent>& cost_events() {
  static const std::vector<CostEvent> events{
      // `syscall` in, `iretq` out (pvk returns by iretq everywhere).
      {"syscall", {"syscall_entries"}, {}, 1, 2, "ns",
       "a system call's entry and return: the `syscall` instruction and the return to user mode"},
      // The delivery retires nothing; `iretq` out.
      {"exception", {"exception_entries"}, {}, 1, 1, "ns",
       "a CPU exception's delivery through the IDT (or into Xen) and the return from it"},
      // IPIs are priced as `ipi` (the sender's round trip): only the rest here.
      {"interrupt", {"interrupt_entries"}, {"ipis_taken"}, 1, 1, "ns",
       "an interrupt (timer tick, Xen timer event) and the return from it; IPIs are `ipi`"},
      // On top of `syscall`: Xen's return into the guest kernel (sysret) and
      // the iret hypercall's `syscall`, and the two CR3 writes of the
      // user/kernel page-table switch a 64-bit PV guest makes each way.
      {"xen_syscall", {"xen_syscall_bounces"}, {}, 1, 4, "ns",
       "what Xen adds to a PV guest's system call: the bounce into the guest kernel and the iret hypercall back, "
       "each with its page-table switch"},
      // Likewise on top of `exception`.
      {"xen_exception", {"xen_fault_bounces"}, {}, 1, 4, "ns",
       "what Xen adds to an exception it passes to the PV kernel: the bounce frame, the iret hypercall, the "
       "page-table switches"},
      // `syscall` into Xen, `sysretq` back (the hypercall page's stub).
      {"hypercall", {"hypercalls"}, {}, 1, 2, "ns", "a hypercall's entry into Xen and return (the call's own work aside)"},
      // Xen's dispatch of one call: ordinary code, no transition of its own.
      {"multicall_entry", {"multicall_calls"}, {}, 1, 0, "ns", "one call inside a multicall, beyond the multicall's hypercall"},
      // Xen's check and store of one entry: ordinary code.
      {"mmu_update_entry", {"mmu_update_entries"}, {}, 1, 0, "ns",
       "one mmu_update request Xen validates and applies, beyond the hypercall"},
      // The store's #PF into Xen retires nothing; Xen's `iretq` back.
      {"ptwr_trap", {"ptwr_traps"}, {}, 1, 1, "ns",
       "a store into a read-only L1 table that Xen traps and emulates (writable page tables)"},
      {"invlpg", {"tlb_flush_one"}, {}, 1, 1, "ns", "a single-page TLB invalidation (invlpg, by the kernel or by Xen for it)"},
      // A root switch and a full flush are each one CR3 write (no PCIDs:
      // every write flushes the non-global entries).
      {"cr3_load", {"root_loads", "tlb_flush_all"}, {}, 1, 1, "ns",
       "a CR3 write: an address-space switch or a full TLB flush (by the kernel or by Xen for it)"},
      {"ipi", {"ipi_sends"}, {}, 1, 1, "ns",
       "a cross-CPU interrupt: sent, taken by the target, its effect seen back on the sender"},
      // rep stosb / rep movsb: one iteration per byte.
      {"rep_clear", {"rep_clear_bytes"}, {}, 1024, 1024, "ns_per_kib", "a KiB cleared by the kernel's rep stosb (memset)"},
      {"rep_copy", {"rep_copy_bytes"}, {}, 1024, 1024, "ns_per_kib",
       "a KiB copied by the kernel's rep movsb (memcpy, copies to and from user memory)"},
  };
  return events;
}

const CostEvent* find_cost_event(std::string_view name) {
  for (const auto& e : cost_events())
    if (e.name == name) return &e;
  return nullptr;
}

std::string_view cost_event_names() {
  static const std::string names = [] {
    std::string out;
    for (const auto& e : cost_events()) out += (out.empty() ? "" : ", ") + std::string(e.name);
    return out;
  }();
  return names;
}

std::optional<double> event_count(const CostEvent& e, const CounterLookup& counters) {
  double sum = 0;
  for (auto c : e.plus) {
    const auto v = counters(c);
    if (!v) return std::nullopt;
    sum += *v;
  }
  for (auto c : e.minus) {
    const auto v = counters(c);
    if (!v) return std::nullopt;
    sum -= *v;
  }
  return std::max(0.0, sum / e.scale);
}

}  // namespace pvk::bench
