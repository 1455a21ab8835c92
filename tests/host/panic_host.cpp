#include "host_compat.h"  // first: see there

#include "panic_host.h"

#include <stdarg.h>
#include <stdio.h>

#include "base/lib/error_or.h"

namespace pvk {
namespace test {
namespace {
unsigned g_panics = 0;
}
unsigned panic_count() { return g_panics; }
}  // namespace test

// The host's own vsnprintf, not the kernel's format(): a bug in the code
// under test must not garble the message that reports it.
void panic(const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ++test::g_panics;
  fprintf(stderr, "pvk::panic: %s\n", msg);
  fflush(stderr);
  throw test::PanicError(msg);
}

}  // namespace pvk
