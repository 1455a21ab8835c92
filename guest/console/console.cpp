#include "guest/console/console.h"

#include "guest/arch/platform.h"
#include "guest/lib/format.h"

namespace pvk {

void console_write(const char* s, size_t n) { g_platform->console_write(s, n); }

void vkprintf(const char* fmt, va_list ap) {
  char buf[512];
  size_t n = vformat(buf, sizeof buf, fmt, ap);
  console_write(buf, n < sizeof buf ? n : sizeof buf - 1);
}

void kprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vkprintf(fmt, ap);
  va_end(ap);
}

}  // namespace pvk
