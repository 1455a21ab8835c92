#include "base/frames/frame_refs.h"

#include "base/lib/error_or.h"
#include "base/lib/kstring.h"

namespace pvk {
FrameRefs detail::g_frame_refs;

void FrameRefs::init(uint16_t* counts, uint64_t max_pfn) {
  counts_ = counts;
  memset(counts, 0, max_pfn * sizeof(uint16_t));
}

}  // namespace pvk
