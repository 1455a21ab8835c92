#include "kernel/proc/clock_calls.h"

#include "base/abi.h"
#include "base/arch/cpu.h"
#include "arch/finish.h"
#include "kernel/proc/syscall_result.h"
#include "kernel/proc/user_copy.h"

namespace pvk {

extern uint64_t g_boot_tsc;  // the TSC at boot (kernel/main.cpp)

namespace {

int64_t sys_clock_gettime(uint64_t clock, uint64_t user_ts) {
  constexpr uint64_t kLastClock = 7;  // CLOCK_REALTIME..CLOCK_BOOTTIME: all read the boot-relative TSC
  if (clock > kLastClock) return syscall_result(Errno::EINVAL);
  const uint64_t ns = now_ns();
  const abi::Timespec ts{static_cast<int64_t>(ns / 1000000000), static_cast<int64_t>(ns % 1000000000)};
  return syscall_result(copy_to_user(user_ts, &ts, sizeof ts));
}

int64_t sys_gettimeofday(uint64_t user_tv, uint64_t user_tz) {
  const uint64_t ns = now_ns();
  if (user_tv) {
    const int64_t tv[2] = {static_cast<int64_t>(ns / 1000000000), static_cast<int64_t>(ns % 1000000000 / 1000)};
    if (auto r = copy_to_user(user_tv, tv, sizeof tv); r.is_error()) return syscall_result(r);
  }
  if (user_tz) {
    const int32_t tz[2] = {0, 0};  // minutes west of Greenwich, DST kind: UTC
    if (auto r = copy_to_user(user_tz, tz, sizeof tz); r.is_error()) return syscall_result(r);
  }
  return 0;
}

int64_t sys_time(uint64_t user_t) {
  const int64_t t = static_cast<int64_t>(now_ns() / 1000000000);
  if (user_t)
    if (auto r = copy_to_user(user_t, &t, sizeof t); r.is_error()) return syscall_result(r);
  return t;
}

}  // namespace

uint64_t now_ns() { return tsc_to_ns(cpu::rdtsc() - g_boot_tsc); }

bool clock_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret) {
  switch (nr) {
    case abi::SYS_clock_gettime: ret = sys_clock_gettime(a[0], a[1]); return true;
    case abi::SYS_gettimeofday: ret = sys_gettimeofday(a[0], a[1]); return true;
    case abi::SYS_time: ret = sys_time(a[0]); return true;
    default: return false;
  }
}

}  // namespace pvk
