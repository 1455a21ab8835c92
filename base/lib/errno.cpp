#include "base/lib/error_or.h"

namespace pvk {

const char* errno_name(Errno e) {
  switch (e) {
    case Errno::Ok: return "OK";
    case Errno::EPERM: return "EPERM";
    case Errno::ENOENT: return "ENOENT";
    case Errno::ESRCH: return "ESRCH";
    case Errno::EINTR: return "EINTR";
    case Errno::E2BIG: return "E2BIG";
    case Errno::ENOEXEC: return "ENOEXEC";
    case Errno::EBADF: return "EBADF";
    case Errno::ECHILD: return "ECHILD";
    case Errno::EAGAIN: return "EAGAIN";
    case Errno::EMFILE: return "EMFILE";
    case Errno::EPIPE: return "EPIPE";
    case Errno::EIO: return "EIO";
    case Errno::ENXIO: return "ENXIO";
    case Errno::ENOMEM: return "ENOMEM";
    case Errno::EFAULT: return "EFAULT";
    case Errno::EBUSY: return "EBUSY";
    case Errno::EEXIST: return "EEXIST";
    case Errno::EINVAL: return "EINVAL";
    case Errno::ENOSYS: return "ENOSYS";
    case Errno::EOPNOTSUPP: return "EOPNOTSUPP";
    case Errno::ETIMEDOUT: return "ETIMEDOUT";
    case Errno::EACCES: return "EACCES";
    case Errno::EXDEV: return "EXDEV";
    case Errno::ENOTDIR: return "ENOTDIR";
    case Errno::EISDIR: return "EISDIR";
    case Errno::ENOTTY: return "ENOTTY";
    case Errno::EFBIG: return "EFBIG";
    case Errno::ENOSPC: return "ENOSPC";
    case Errno::ESPIPE: return "ESPIPE";
    case Errno::ERANGE: return "ERANGE";
    case Errno::ENAMETOOLONG: return "ENAMETOOLONG";
    case Errno::ENOTEMPTY: return "ENOTEMPTY";
    case Errno::ELOOP: return "ELOOP";
    case Errno::ENODEV: return "ENODEV";
    case Errno::EOVERFLOW: return "EOVERFLOW";
    case Errno::ENOTSOCK: return "ENOTSOCK";
  }
  return "E?";
}

}  // namespace pvk
