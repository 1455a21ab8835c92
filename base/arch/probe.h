// Fault-tolerant memory probes (see probe.S): false means the access faulted.
#pragma once
#include <stdint.h>

extern "C" {
bool probe_read_u8(const void* p, uint8_t* out);
bool probe_write_u8(void* p, uint8_t v);
bool probe_read_u64(const void* p, uint64_t* out);
bool probe_write_u64(void* p, uint64_t v);
}

namespace pvk {
// The resume address for a fault at rip, or 0 if rip has no fixup.
uint64_t extable_fixup(uint64_t rip);
}  // namespace pvk
