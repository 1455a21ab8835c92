// ErrorOr<T> and TRY: error propagation without exceptions.
//
// Kernel functions that can fail return ErrorOr<T> (an Errno on failure);
// callers either propagate with TRY(expr) or insist with must(expr), which
// panics with the error's name. try_/must_ function pairs follow the same
// convention. ErrorOr<T, E> carries another error type where an Errno says
// too little (the boot parameters' one-line refusals).
#pragma once
#include "base/lib/types.h"

namespace pvk {

enum class Errno : int {
  Ok = 0,
  EPERM = 1,
  ENOENT = 2,
  ESRCH = 3,
  EINTR = 4,
  EIO = 5,
  ENXIO = 6,
  E2BIG = 7,
  ENOEXEC = 8,
  EBADF = 9,
  ECHILD = 10,
  EAGAIN = 11,
  ENOMEM = 12,
  EFAULT = 14,
  EBUSY = 16,
  EEXIST = 17,
  EINVAL = 22,
  EMFILE = 24,
  EPIPE = 32,
  ENOSYS = 38,
  EOPNOTSUPP = 95,
  ETIMEDOUT = 110,
  EACCES = 13,
  EXDEV = 18,
  ENOTDIR = 20,
  EISDIR = 21,
  ENOTTY = 25,
  EFBIG = 27,
  ENOSPC = 28,
  ESPIPE = 29,
  ERANGE = 34,
  ENAMETOOLONG = 36,
  ENOTEMPTY = 39,
  ELOOP = 40,
  ENODEV = 19,
  EOVERFLOW = 75,
  ENOTSOCK = 88,
};

const char* errno_name(Errno e);

[[noreturn]] void panic(const char* fmt, ...);

// What ErrorOr needs of its error type E: a default-constructed E means "no
// error" and ErrorTraits<E>::is_error tells the two apart. Errno (the
// default) is an error unless Ok; another type answers through its own
// is_error(), e.g. a message that is an error once it has text.
template <typename E>
struct ErrorTraits {
  static bool is_error(const E& e) { return e.is_error(); }
};
template <>
struct ErrorTraits<Errno> {
  static constexpr bool is_error(Errno e) { return e != Errno::Ok; }
};

template <typename T, typename E = Errno>
class [[nodiscard]] ErrorOr {
 public:
  ErrorOr(T value) : value_(value), error_() {}  // NOLINT: implicit by design
  ErrorOr(E e) : value_(), error_(e) {}          // NOLINT
  bool is_error() const { return ErrorTraits<E>::is_error(error_); }
  const E& error() const { return error_; }
  T value() const { return value_; }
  T release_value() { return value_; }

 private:
  T value_;
  E error_;
};

template <typename E>
class [[nodiscard]] ErrorOr<void, E> {
 public:
  ErrorOr() : error_() {}
  ErrorOr(E e) : error_(e) {}  // NOLINT
  bool is_error() const { return ErrorTraits<E>::is_error(error_); }
  const E& error() const { return error_; }
  void release_value() {}

 private:
  E error_;
};

// must(): the caller has proven failure impossible; if it happens anyway, that
// is a kernel bug worth a loud stop rather than a silent wrong answer.
template <typename T>
T must(ErrorOr<T> r, const char* what = "must") {
  if (r.is_error()) panic("%s failed: %s", what, errno_name(r.error()));
  return r.release_value();
}

}  // namespace pvk

#define TRY(expr)                                 \
  ({                                              \
    auto _pvk_try = (expr);                       \
    if (_pvk_try.is_error()) return _pvk_try.error(); \
    _pvk_try.release_value();                     \
  })
