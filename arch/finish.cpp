#include "arch/finish.h"

#include "base/arch/cpu.h"
#include "arch/symbols.h"
#include "base/console/console.h"
#include "base/console/record.h"
#include "base/lib/error_or.h"
#include "base/lib/format.h"
#include "base/frames/frame_allocator.h"

namespace pvk {

Platform* g_platform = nullptr;

uint64_t tsc_to_ns(uint64_t ticks) {
  const uint64_t mhz = g_platform->tsc_khz / 1000;
  return mhz ? ticks * 1000 / mhz : 0;
}

void finish(ExitStatus status, const char* reason) {
  {
    Record r("done");
    r.str("status", status == ExitStatus::Pass ? "pass" : "fail");
    if (reason) r.str("reason", reason);
    r.str("platform", g_platform->name);
    r.u64("free_frames", frames().free_count());
  }
  g_platform->shutdown(status);
}

void panic(const char* fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vformat(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kprintf("pvk: PANIC: %s\n", msg);
  // Start at our caller: its return address, then its saved frame chain.
  const auto* frame = static_cast<const uint64_t*>(__builtin_frame_address(0));
  print_backtrace(frame[1], frame[0]);
  Record("panic").str("message", msg);
  finish(ExitStatus::Fail, "panic");
}

}  // namespace pvk
