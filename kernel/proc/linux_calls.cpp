// uname, the uid/gid calls, prctl's task name, getrlimit/prlimit64,
// set_robust_list and getrandom, with Linux's layouts and errors.
//
// uname answers as a current Linux would: glibc checks the release at
// startup and refuses a kernel it thinks too old. Every process is root
// (uid and gid 0). Limits are Linux's defaults and cannot be raised or
// lowered (prlimit64 with a new limit is EPERM, as for an unprivileged
// caller; the old one is still reported). The robust futex list is kept
// but not walked at exit: no program here shares robust mutexes between
// processes.
#include "kernel/proc/linux_calls.h"

#include "base/console/record.h"
#include "base/lib/kstring.h"
#include "kernel/proc/process.h"
#include "kernel/proc/random.h"
#include "kernel/proc/syscall_result.h"
#include "kernel/proc/user_copy.h"

namespace pvk {
namespace {

struct Utsname {  // Linux's new_utsname: six fields of 65 bytes
  char sysname[65], nodename[65], release[65], version[65], machine[65], domainname[65];
};

void set_field(char (&field)[65], const char* text) {
  memset(field, 0, sizeof field);
  memcpy(field, text, strlen(text));
}

int64_t sys_uname(uint64_t user_buf) {
  Utsname u;
  set_field(u.sysname, "Linux");
  set_field(u.nodename, "pvk");
  set_field(u.release, "6.1.0-pvk");
  set_field(u.version, "#1 SMP pvk");
  set_field(u.machine, "x86_64");
  set_field(u.domainname, "(none)");
  return syscall_result(copy_to_user(user_buf, &u, sizeof u));
}

constexpr uint64_t kPrSetName = 15, kPrGetName = 16;
constexpr size_t kTaskComm = 16;  // TASK_COMM_LEN: the name's bytes with its NUL

int64_t sys_prctl(uint64_t option, uint64_t arg) {
  Process& p = *current();
  if (option == kPrGetName) {
    char name[kTaskComm] = {};
    for (size_t i = 0; i < kTaskComm - 1 && p.name[i]; ++i) name[i] = p.name[i];
    return syscall_result(copy_to_user(arg, name, sizeof name));
  }
  if (option == kPrSetName) {
    char name[kTaskComm] = {};
    // Up to 15 bytes are taken, NUL or not (Linux's strncpy_from_user).
    for (size_t i = 0; i < kTaskComm - 1; ++i) {
      if (auto r = copy_from_user(&name[i], arg + i, 1); r.is_error()) return syscall_result(r);
      if (!name[i]) break;
    }
    memset(p.name, 0, sizeof p.name);
    memcpy(p.name, name, sizeof name);
    return 0;
  }
  return syscall_result(Errno::EINVAL);
}

struct Rlimit {
  uint64_t cur, max;
};
constexpr uint64_t kRlimInfinity = ~uint64_t{0};
constexpr unsigned kRlimits = 16;  // RLIM_NLIMITS

Rlimit limit_of(uint64_t resource) {
  switch (resource) {
    case 3: return {8u << 20, kRlimInfinity};  // RLIMIT_STACK
    case 4: return {0, kRlimInfinity};         // RLIMIT_CORE
    case 7: return {Process::kMaxFds, Process::kMaxFds};  // RLIMIT_NOFILE: pvk's descriptor table
    case 8: return {8u << 20, 8u << 20};       // RLIMIT_MEMLOCK
    default: return {kRlimInfinity, kRlimInfinity};
  }
}

int64_t sys_prlimit64(uint64_t pid, uint64_t resource, uint64_t user_new, uint64_t user_old) {
  if (resource >= kRlimits) return syscall_result(Errno::EINVAL);
  if (pid != 0 && pid != static_cast<uint64_t>(current()->tgid)) return syscall_result(Errno::ESRCH);
  if (user_old) {
    const Rlimit old = limit_of(resource);
    if (auto r = copy_to_user(user_old, &old, sizeof old); r.is_error()) return syscall_result(r);
  }
  if (user_new) {
    Rlimit want;
    if (auto r = copy_from_user(&want, user_new, sizeof want); r.is_error()) return syscall_result(r);
    if (want.cur > want.max) return syscall_result(Errno::EINVAL);
    const Rlimit now = limit_of(resource);
    if (want.cur != now.cur || want.max != now.max) return syscall_result(Errno::EPERM);
  }
  return 0;
}

constexpr uint64_t kRobustListHeadSize = 24;

int64_t sys_set_robust_list(uint64_t head, uint64_t len) {
  if (len != kRobustListHeadSize) return syscall_result(Errno::EINVAL);
  (void)head;  // kept by Linux for exit's walk; see the file comment
  return 0;
}

constexpr uint64_t kGrndNonblock = 1, kGrndRandom = 2, kGrndInsecure = 4;

int64_t sys_getrandom(uint64_t user_buf, uint64_t len, uint64_t flags) {
  if (flags & ~(kGrndNonblock | kGrndRandom | kGrndInsecure)) return syscall_result(Errno::EINVAL);
  if ((flags & kGrndRandom) && (flags & kGrndInsecure)) return syscall_result(Errno::EINVAL);
  if (len > 0x1ffffff) len = 0x1ffffff;  // Linux's per-call cap (32 MiB - 1)
  uint8_t chunk[256];
  uint64_t done = 0;
  while (done < len) {
    const uint64_t n = len - done < sizeof chunk ? len - done : sizeof chunk;
    random_bytes(chunk, n);
    if (auto r = copy_to_user(user_buf + done, chunk, n); r.is_error())
      return done ? static_cast<int64_t>(done) : syscall_result(r);
    done += n;
  }
  return static_cast<int64_t>(done);
}

uint64_t g_reported[8];  // bit n: number n reported (0..511); under the kernel lock

}  // namespace

bool linux_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret) {
  switch (nr) {
    case abi::SYS_uname: ret = sys_uname(a[0]); return true;
    case abi::SYS_getuid:
    case abi::SYS_getgid:
    case abi::SYS_geteuid:
    case abi::SYS_getegid: ret = 0; return true;
    case abi::SYS_prctl: ret = sys_prctl(a[0], a[1]); return true;
    case abi::SYS_getrlimit: ret = sys_prlimit64(0, a[0], 0, a[1]); return true;
    case abi::SYS_prlimit64: ret = sys_prlimit64(a[0], a[1], a[2], a[3]); return true;
    case abi::SYS_set_robust_list: ret = sys_set_robust_list(a[0], a[1]); return true;
    case abi::SYS_getrandom: ret = sys_getrandom(a[0], a[1], a[2]); return true;
    default: return false;
  }
}

int64_t unimplemented_call(uint64_t nr) {
  const uint64_t slot = nr < 511 ? nr : 511;  // every larger number shares the last bit
  if (!(g_reported[slot / 64] & (uint64_t{1} << (slot % 64)))) {
    g_reported[slot / 64] |= uint64_t{1} << (slot % 64);
    Record("enosys").u64("nr", nr).str("program", current()->name);
  }
  return syscall_result(Errno::ENOSYS);
}

}  // namespace pvk
