// The VMA list of an AddressSpace: kept sorted (add_vma), split at a
// range's ends (carve), joined again where neighbours agree
// (merge_neighbours); find is inline in address_space.h.
#include "mm/address_space.h"

namespace pvk {

ErrorOr<void> AddressSpace::add_vma(const Vma& v) {
  if (count_ == kMaxVmas) return Errno::ENOMEM;
  unsigned i = count_;
  while (i > 0 && vmas_[i - 1].start > v.start) {
    vmas_[i] = vmas_[i - 1];
    --i;
  }
  vmas_[i] = v;
  ++count_;
  return {};
}

ErrorOr<void> AddressSpace::carve(VirtAddr start, VirtAddr end) {
  // Split any VMA straddling start or end so [start, end) is whole VMAs.
  // The slots are checked first: a refused split changes nothing.
  const VirtAddr cuts[2] = {start, end};
  unsigned splits = 0;
  for (VirtAddr cut : cuts)
    for (unsigned i = 0; i < count_; ++i)
      if (cut > vmas_[i].start && cut < vmas_[i].end) ++splits;
  if (count_ + splits > kMaxVmas) return Errno::ENOMEM;
  for (VirtAddr cut : cuts) {
    for (unsigned i = 0; i < count_; ++i) {
      Vma& v = vmas_[i];
      if (cut > v.start && cut < v.end) {
        Vma right = v;
        right.start = cut;
        v.end = cut;
        TRY(add_vma(right));
        break;
      }
    }
  }
  return {};
}

void AddressSpace::merge_neighbours() {
  unsigned out = 0;
  for (unsigned i = 0; i < count_; ++i) {
    if (out && vmas_[out - 1].end == vmas_[i].start && vmas_[out - 1].prot == vmas_[i].prot &&
        vmas_[out - 1].flags == vmas_[i].flags) {
      vmas_[out - 1].end = vmas_[i].end;
      continue;
    }
    vmas_[out++] = vmas_[i];
  }
  count_ = out;
}

}  // namespace pvk
