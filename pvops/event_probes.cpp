#include "pvops/event_probes.h"

#include <xen/version.h>

#include "base/arch/probe.h"
#include "base/counters.h"
#include "base/frames/physmap.h"
#include "hypercalls/hypercall.h"
#include "hypercalls/p2m.h"
#include "pvops/backends/xen_common.h"

namespace pvk::xen_probe {
namespace {

// A multicall's or an mmu_update's batch: the batched backend's queue size.
constexpr unsigned kBatch = 32;

uint64_t even(uint64_t n) { return n + (n & 1); }

// The leaf's value with the write bit set on odd steps, clear on even ones.
uint64_t toggled(uint64_t base, uint64_t step) {
  return (step & 1) ? (base | pte_bit::Write) : (base & ~pte_bit::Write);
}

ErrorOr<void> rc_to_error(long rc) { return rc < 0 ? ErrorOr<void>(Errno::EINVAL) : ErrorOr<void>{}; }

}  // namespace

ErrorOr<void> null_hypercalls(uint64_t count) {
  for (uint64_t i = 0; i < count; ++i)
    if (long rc = xen::xen_version(XENVER_version, nullptr); rc < 0) return rc_to_error(rc);
  return {};
}

ErrorOr<void> multicall_calls(uint64_t count) {
  multicall_entry_t calls[kBatch] = {};
  for (auto& c : calls) {
    c.op = __HYPERVISOR_xen_version;
    c.args[0] = XENVER_version;
    c.args[1] = 0;
  }
  for (uint64_t done = 0; done < count;) {
    const unsigned n = count - done < kBatch ? static_cast<unsigned>(count - done) : kBatch;
    if (long rc = xen::multicall(calls, n); rc < 0) return rc_to_error(rc);
    for (unsigned i = 0; i < n; ++i)
      if (static_cast<long>(calls[i].result) < 0) return Errno::EINVAL;
    done += n;
  }
  return {};
}

Pte* leaf_of(Pfn root, VirtAddr va) {
  Pte* table = phys_to_virt<Pte>(root);
  for (Level l = Level::L4; l != Level::L1; l = below(l)) {
    const Pte e = table[index_at(va, l)];
    if (!(e.raw & pte_bit::Present) || (e.raw & pte_bit::Huge && l != Level::L4)) return nullptr;
    table = phys_to_virt<Pte>(xen::mfn_to_pfn(Mfn{(e.raw & pte_bit::FrameMask) >> kPageShift}));
  }
  return &table[index_at(va, Level::L1)];
}

ErrorOr<void> mmu_update_entries(Pte* leaf, uint64_t count) {
  const uint64_t base = __atomic_load_n(&leaf->raw, __ATOMIC_RELAXED);
  const uint64_t ptr = xen::machine_address(leaf) | MMU_NORMAL_PT_UPDATE;
  mmu_update_t reqs[kBatch];
  count = even(count);
  for (uint64_t done = 0; done < count;) {
    const unsigned n = count - done < kBatch ? static_cast<unsigned>(count - done) : kBatch;
    for (unsigned i = 0; i < n; ++i) reqs[i] = {ptr, toggled(base, done + i + 1)};
    unsigned applied = 0;
    if (long rc = xen::mmu_update(reqs, n, &applied); rc < 0 || applied != n) return Errno::EINVAL;
    done += n;
  }
  return {};
}

ErrorOr<void> ptwr_stores(Pte* leaf, uint64_t count) {
  const bool assist_already_on = xen_pv::writable_pagetables();
  if (!assist_already_on && xen::vm_assist(VMASST_CMD_enable, VMASST_TYPE_writable_pagetables) < 0)
    return Errno::EOPNOTSUPP;
  const uint64_t base = __atomic_load_n(&leaf->raw, __ATOMIC_RELAXED);
  ErrorOr<void> result{};
  count = even(count);
  for (uint64_t i = 0; i < count; ++i) {
    // As the wrpt backend counts its trapped stores (pvops/backends/wrpt.cpp).
    count_event(g_mmu_counters.ptwr_traps);
    if (!probe_write_u64(&leaf->raw, toggled(base, i + 1))) {
      result = Errno::EINVAL;
      break;
    }
  }
  if (!assist_already_on) xen::vm_assist(VMASST_CMD_disable, VMASST_TYPE_writable_pagetables);
  return result;
}

}  // namespace pvk::xen_probe
