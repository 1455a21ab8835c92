// The VMA list of an AddressSpace: kept sorted (add_vma), split at a
// range's ends (carve), joined again where neighbours agree
// (merge_neighbours); find is inline in address_space.h. A file-backed
// VMA's pieces each hold its source, at the page each piece starts at.
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
        right.source = v.source.advanced((cut - v.start) >> kPageShift);
        v.end = cut;
        TRY(add_vma(right));  // cannot fail: the slots were counted above
        right.source.hold();
        break;
      }
    }
  }
  return {};
}

namespace {
// Whether b continues a with the same rights, kind and backing: anonymous
// both, or the same source at the page where a's ends.
bool joins(const Vma& a, const Vma& b) {
  if (a.end != b.start || a.prot != b.prot || a.flags != b.flags) return false;
  if (!a.source && !b.source) return true;
  return a.source.same_object(b.source) && a.source.first_page + a.pages() == b.source.first_page;
}
}  // namespace

void AddressSpace::merge_neighbours() {
  unsigned out = 0;
  for (unsigned i = 0; i < count_; ++i) {
    if (out && joins(vmas_[out - 1], vmas_[i])) {
      vmas_[out - 1].end = vmas_[i].end;
      vmas_[i].source.drop();  // one VMA where there were two
      continue;
    }
    if (out != i) vmas_[out] = vmas_[i];  // (a VMA is 48 bytes: no copy onto itself)
    ++out;
  }
  count_ = out;
}

}  // namespace pvk
