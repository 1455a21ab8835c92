// Frame-number translation for a PV guest: the P2M list (pseudo-physical to
// machine, ours, handed over in start_info) and Xen's read-only M2P table
// (machine to pseudo-physical, mapped by Xen into every guest address space).
#pragma once
#include "base/lib/types.h"
#include "hypercalls/xen_abi.h"
#include "base/frames/physmap.h"

namespace pvk::xen {

// The P2M list lives in our own frames, contiguous from this pfn; it is
// reached through the physmap accessor, so it stays valid when the boot
// mapping gives way to the kernel's own tables.
extern Pfn g_p2m_first_pfn;
extern uint64_t g_p2m_entries;

inline Mfn pfn_to_mfn(Pfn pfn) { return Mfn{phys_to_virt<const uint64_t>(g_p2m_first_pfn)[raw(pfn)]}; }
inline Pfn mfn_to_pfn(Mfn mfn) { return Pfn{machine_to_phys_mapping[raw(mfn)]}; }

// Machine address of a byte reached through the physmap accessor (e.g. a
// page-table slot, for mmu_update).
inline uint64_t machine_address(const void* p) {
  return (raw(pfn_to_mfn(virt_to_pfn(p))) << kPageShift) | (reinterpret_cast<uint64_t>(p) & (kPageSize - 1));
}

}  // namespace pvk::xen
