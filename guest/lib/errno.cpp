#include "guest/lib/error_or.h"

namespace pvk {

const char* errno_name(Errno e) {
  switch (e) {
    case Errno::Ok: return "OK";
    case Errno::EPERM: return "EPERM";
    case Errno::ENOENT: return "ENOENT";
    case Errno::EIO: return "EIO";
    case Errno::ENOMEM: return "ENOMEM";
    case Errno::EFAULT: return "EFAULT";
    case Errno::EBUSY: return "EBUSY";
    case Errno::EEXIST: return "EEXIST";
    case Errno::EINVAL: return "EINVAL";
    case Errno::ENOSYS: return "ENOSYS";
  }
  return "E?";
}

}  // namespace pvk
