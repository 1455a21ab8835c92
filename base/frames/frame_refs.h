// Per-frame reference counts for user memory: a frame mapped by several
// address spaces (COW after fork, shared mappings, the zero page) is freed
// when its last mapping goes. Storage is carved out of RAM at boot, beside
// the allocator's bitmap.
//
// SMP: two address spaces that share a frame copy-on-write may drop or test
// its count at the same moment from two CPUs, each under its own space's
// lock only, so every access is atomic: dec tells exactly one of them it
// took the count to 0 (that one frees the frame).
#pragma once
#include "base/lib/error_or.h"
#include "base/lib/types.h"

namespace pvk {

class FrameRefs {
 public:
  void init(uint16_t* counts, uint64_t max_pfn);
  void relocate(uint16_t* counts) { counts_ = counts; }
  uint16_t get(Pfn p) const { return __atomic_load_n(&counts_[raw(p)], __ATOMIC_ACQUIRE); }
  void set(Pfn p, uint16_t v) { __atomic_store_n(&counts_[raw(p)], v, __ATOMIC_RELEASE); }
  void inc(Pfn p) {
    if (p == immortal_) return;
    if (__atomic_add_fetch(&counts_[raw(p)], 1, __ATOMIC_ACQ_REL) == 0)
      panic("frame 0x%lx: reference count overflow", raw(p));
  }
  // Returns the count left.
  uint16_t dec(Pfn p) {
    if (p == immortal_) return 1;
    const uint16_t before = __atomic_fetch_sub(&counts_[raw(p)], 1, __ATOMIC_ACQ_REL);
    if (before == 0) panic("frame 0x%lx: reference count underflow", raw(p));
    return static_cast<uint16_t>(before - 1);
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

namespace detail {
extern FrameRefs g_frame_refs;
}
// Inline: a fault or a teardown asks for it per frame.
inline FrameRefs& frame_refs() { return detail::g_frame_refs; }

}  // namespace pvk
