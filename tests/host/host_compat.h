// Include first in every host-test file.
//
// The kernel's Errno enumerators (base/lib/error_or.h) are spelled like the
// C library's <errno.h> macros (EPERM, ENOENT, ...). The kernel never sees
// <errno.h>; the host does, through GoogleTest and the C++ library. So the
// host headers that use those macros (<system_error>'s errc) are all pulled
// in here first, then the macros are dropped; <errno.h> has an include guard,
// so nothing included later defines them again, and Errno::ENOMEM means the
// kernel's enumerator everywhere in the tests.
//
// The user ABI (base/abi.h) has the same problem on a larger scale: it
// spells its constants like the C library's macros (SYS_read, SIGKILL,
// WIFEXITED, PROT_READ, MAP_SHARED, EPERM, ...). It includes nothing but
// <stdint.h>, so it is parsed here before any other header: its names are
// declared by the time the C library defines the macros. Tests use only its
// plain names (abi::kUserTop, ...); the macro-named ones stay unusable in
// test code.
#pragma once
#if __has_include("base/abi.h")
#include "base/abi.h"
#endif
#include <errno.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>
// nlohmann/json spells ERANGE in its templates: parsed while the macro is there.
#if __has_include(<nlohmann/json.hpp>)
#include <nlohmann/json.hpp>
#endif

#undef EPERM
#undef ENOENT
#undef ESRCH
#undef EINTR
#undef EIO
#undef E2BIG
#undef ENOEXEC
#undef EBADF
#undef ECHILD
#undef EAGAIN
#undef ENOMEM
#undef EFAULT
#undef EBUSY
#undef EEXIST
#undef EINVAL
#undef EMFILE
#undef EPIPE
#undef ENOSYS
#undef EOPNOTSUPP
#undef ETIMEDOUT
#undef EACCES
#undef EXDEV
#undef ENOTDIR
#undef EISDIR
#undef ENOTTY
#undef EFBIG
#undef ENOSPC
#undef ESPIPE
#undef ERANGE
#undef ENAMETOOLONG
#undef ENOTEMPTY
#undef ELOOP
#undef ENXIO
#undef ENODEV
#undef EOVERFLOW
#undef ENOTSOCK

#include "base/lib/error_or.h"
