#include "kernel/proc/user_copy.h"

#include "base/abi.h"

namespace pvk {

bool user_range_ok(uint64_t addr, uint64_t len) {
  return addr + len >= addr && addr + len <= abi::kUserTop && addr >= 0x1000;
}

ErrorOr<void> copy_from_user(void* dst, uint64_t user_src, size_t n) {
  if (!n) return {};
  if (!user_range_ok(user_src, n) || !raw_copy_user(dst, reinterpret_cast<const void*>(user_src), n))
    return Errno::EFAULT;
  return {};
}

ErrorOr<void> copy_to_user(uint64_t user_dst, const void* src, size_t n) {
  if (!n) return {};
  if (!user_range_ok(user_dst, n) || !raw_copy_user(reinterpret_cast<void*>(user_dst), src, n)) return Errno::EFAULT;
  return {};
}

ErrorOr<size_t> string_from_user(char* dst, uint64_t user_src, size_t cap) {
  for (size_t i = 0; i < cap; ++i) {
    TRY(copy_from_user(&dst[i], user_src + i, 1));
    if (!dst[i]) return i;
  }
  return Errno::E2BIG;
}

}  // namespace pvk
