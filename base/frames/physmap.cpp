#include "base/frames/physmap.h"

namespace pvk {
uint64_t g_physmap_offset = 0;
}
