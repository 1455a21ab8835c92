// Per-frame reference counts for user memory: a frame mapped by several
// address spaces (COW after fork, shared mappings, the zero page) is freed
// when its last mapping goes. Storage is carved out of RAM at boot, beside
// the allocator's bitmap.
#pragma once
#include "base/lib/error_or.h"
#include "base/lib/types.h"

namespace pvk {

class FrameRefs {
 public:
  void init(uint16_t* counts, uint64_t max_pfn);
  void relocate(uint16_t* counts) { counts_ = counts; }
  uint16_t get(Pfn p) const { return counts_[raw(p)]; }
  void set(Pfn p, uint16_t v) { counts_[raw(p)] = v; }
  void inc(Pfn p) {
    if (p == immortal_) return;
    if (++counts_[raw(p)] == 0) panic("frame 0x%lx: reference count overflow", raw(p));
  }
  // Returns the count left.
  uint16_t dec(Pfn p) {
    if (p == immortal_) return 1;
    if (counts_[raw(p)] == 0) panic("frame 0x%lx: reference count underflow", raw(p));
    return --counts_[raw(p)];
  }
  // A frame mapped any number of times and never freed (the zero page): its
  // count stays at 1 whatever inc/dec say.
  void set_immortal(Pfn p) {
    immortal_ = p;
    counts_[raw(p)] = 1;
  }

 private:
  uint16_t* counts_ = nullptr;
  Pfn immortal_{~uint64_t{0}};
};

FrameRefs& frame_refs();

}  // namespace pvk
