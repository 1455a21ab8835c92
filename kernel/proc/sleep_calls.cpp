#include "kernel/proc/sleep_calls.h"

#include "base/abi.h"
#include "base/arch/cpu.h"
#include "base/arch/platform.h"
#include "arch/finish.h"
#include "kernel/proc/process.h"
#include "kernel/proc/thread_args.h"
#include "kernel/proc/user_copy.h"

namespace pvk {

extern uint64_t g_boot_tsc;

namespace {

int64_t fail(Errno e) { return -static_cast<int64_t>(e); }

ErrorOr<uint64_t> timespec_ns(uint64_t user_ts) {
  abi::Timespec ts;
  TRY(copy_from_user(&ts, user_ts, sizeof ts));
  if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000) return Errno::EINVAL;
  // Past ~584 years of ns the sum would wrap: such a sleep is "forever".
  uint64_t ns;
  if (__builtin_mul_overflow(static_cast<uint64_t>(ts.tv_sec), uint64_t{1000000000}, &ns) ||
      __builtin_add_overflow(ns, static_cast<uint64_t>(ts.tv_nsec), &ns))
    return UINT64_MAX;
  return ns;
}

// Sleeps until the TSC reaches deadline. A signal that should interrupt
// ends it early with EINTR (and, for a relative sleep, what was left in
// *rem, as Linux); nothing else wakes it before the deadline.
int64_t sleep_to(uint64_t deadline, uint64_t user_rem) {
  Process& self = *current();
  for (;;) {
    const uint64_t now = cpu::rdtsc();
    if (deadline != UINT64_MAX && now >= deadline) return 0;
    if (signal_interrupts(self)) {
      if (user_rem) {
        const uint64_t left = deadline == UINT64_MAX ? UINT64_MAX : tsc_to_ns(deadline - now);
        const uint64_t sec = left / 1000000000;
        const abi::Timespec rem{static_cast<int64_t>(sec > uint64_t{INT64_MAX} ? INT64_MAX : sec),
                                static_cast<int64_t>(left % 1000000000)};
        if (auto r = copy_to_user(user_rem, &rem, sizeof rem); r.is_error()) return fail(r.error());
      }
      return fail(Errno::EINTR);
    }
    // The channel is the sleeper's own: only the timer or a signal wakes it.
    sleep_until(&self.wake_deadline, deadline);
  }
}

}  // namespace

int64_t sys_nanosleep(const uint64_t (&a)[6]) {
  auto ns = timespec_ns(a[0]);
  if (ns.is_error()) return fail(ns.error());
  return sleep_to(deadline_after(cpu::rdtsc(), ns_to_tsc_cycles(ns.value(), g_platform->tsc_khz)), a[1]);
}

int64_t sys_clock_nanosleep(const uint64_t (&a)[6]) {
  constexpr uint64_t kBoottime = 7;
  const uint64_t clock = a[0], flags = a[1];
  if (clock != uint64_t(abi::CLOCK_REALTIME) && clock != uint64_t(abi::CLOCK_MONOTONIC) && clock != kBoottime)
    return fail(Errno::EINVAL);
  // Linux reads only TIMER_ABSTIME of the flags and ignores the rest.
  auto ns = timespec_ns(a[2]);
  if (ns.is_error()) return fail(ns.error());
  const uint64_t cycles = ns_to_tsc_cycles(ns.value(), g_platform->tsc_khz);
  if (flags & abi::TIMER_ABSTIME)  // a time on the clock, which counts from boot; no rem
    return sleep_to(deadline_after(g_boot_tsc, cycles), 0);
  return sleep_to(deadline_after(cpu::rdtsc(), cycles), a[3]);
}

}  // namespace pvk
