// Moving data across the user/kernel boundary. Every user pointer is range
// checked here and every access is fault-tolerant, so a bad pointer gives
// EFAULT, never a kernel fault.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/lib/error_or.h"

extern "C" bool raw_copy_user(void* dst, const void* src, size_t n);

namespace pvk {

bool user_range_ok(uint64_t addr, uint64_t len);
ErrorOr<void> copy_from_user(void* dst, uint64_t user_src, size_t n);
ErrorOr<void> copy_to_user(uint64_t user_dst, const void* src, size_t n);
// Copies a NUL-terminated string of at most cap-1 bytes; EFAULT, or E2BIG if too long.
ErrorOr<size_t> string_from_user(char* dst, uint64_t user_src, size_t cap);

}  // namespace pvk
