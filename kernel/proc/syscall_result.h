// A system call's return value in rax: 0 or a value on success, minus the
// errno on failure (Linux's convention). One definition for every file of
// system calls.
#pragma once
#include "base/lib/error_or.h"
#include "base/lib/types.h"

#include <stdint.h>

namespace pvk {

inline int64_t syscall_result(Errno e) { return -static_cast<int64_t>(e); }
inline int64_t syscall_result(const ErrorOr<void>& r) { return r.is_error() ? syscall_result(r.error()) : 0; }
// An address the call returns (mmap, brk): its raw value.
inline int64_t syscall_result(const ErrorOr<VirtAddr>& r) {
  return r.is_error() ? syscall_result(r.error()) : static_cast<int64_t>(raw(r.value()));
}

}  // namespace pvk
