#include "hypercalls/p2m.h"

namespace pvk::xen {
Pfn g_p2m_first_pfn{};
uint64_t g_p2m_entries = 0;
}  // namespace pvk::xen
