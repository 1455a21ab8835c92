// Per-frame reference counts for user memory: a frame mapped by several
// address spaces (COW after fork, shared mappings, the zero page) is freed
// when its last mapping goes. Storage is carved out of RAM at boot, beside
// the allocator's bitmap.
#pragma once
#include "guest/lib/error_or.h"
#include "guest/lib/types.h"

namespace pvk {

class FrameRefs {
 public:
  void init(uint16_t* counts, uint64_t max_pfn);
  void relocate(uint16_t* counts) { counts_ = counts; }
  uint16_t get(Pfn p) const { return counts_[raw(p)]; }
  void set(Pfn p, uint16_t v) { counts_[raw(p)] = v; }
  void inc(Pfn p) {
    if (++counts_[raw(p)] == 0) panic("frame 0x%lx: reference count overflow", raw(p));
  }
  // Returns the count left.
  uint16_t dec(Pfn p) {
    if (counts_[raw(p)] == 0) panic("frame 0x%lx: reference count underflow", raw(p));
    return --counts_[raw(p)];
  }

 private:
  uint16_t* counts_ = nullptr;
};

FrameRefs& frame_refs();

}  // namespace pvk
