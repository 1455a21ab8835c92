// uname, the uid/gid calls, prctl's task name, getrlimit/prlimit64,
// set_robust_list, getrandom, gettimeofday, time, sysinfo, and process
// groups and sessions (getpgrp, getpgid, setpgid, getsid, setsid), with
// Linux's layouts and errors.
//
// uname answers as a current Linux would: glibc checks the release at
// startup and refuses a kernel it thinks too old. Every process is root
// (uid and gid 0). Limits are Linux's defaults and cannot be raised or
// lowered (prlimit64 with a new limit is EPERM, as for an unprivileged
// caller; the old one is still reported). The robust futex list is kept
// but not walked at exit: no program here shares robust mutexes between
// processes.
#include "kernel/proc/linux_calls.h"

#include "kernel/proc/clock_calls.h"

#include "base/console/record.h"
#include "base/lib/kstring.h"
#include "arch/finish.h"
#include "base/arch/cpu.h"
#include "base/frames/frame_allocator.h"
#include "kernel/proc/process.h"
#include "kernel/proc/random.h"
#include "kernel/proc/syscall_result.h"
#include "kernel/proc/user_copy.h"
#include "kernel/proc/wake.h"  // load_state

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

int64_t sys_sysinfo(uint64_t user_info) {
  abi::Sysinfo s{};
  s.uptime = static_cast<int64_t>(now_ns() / 1000000000);
  s.totalram = frames().max_pfn() * kPageSize;  // frames the allocator covers (holes included)
  s.freeram = frames().free_count() * kPageSize;
  uint16_t procs = 0;
  // Without the kernel lock: each slot's state read whole, a snapshot as
  // Linux's count is.
  for (const Process& q : process_table()) {
    const ProcState st = proc::load_state(q);
    procs += st != ProcState::Free && st != ProcState::Zombie;
  }
  s.procs = procs;
  s.mem_unit = 1;
  return syscall_result(copy_to_user(user_info, &s, sizeof s));
}

// Process groups and sessions, kept on each process's leader. Linux's
// rules: setpgid moves the caller or a child of it (ESRCH otherwise) that
// has not called execve since its fork (EACCES) and is of its session
// (EPERM), never a session leader (EPERM), into a new group named by its
// pid or an existing group of the same session (EPERM otherwise).
Process* live_leader(int pid) {
  Process* p = find_process(pid);
  if (!p || p->leader != p || p->state == ProcState::Free || p->live_threads == 0) return nullptr;
  return p;
}

int64_t sys_getpgid(uint64_t pid, bool session) {
  if (pid > INT32_MAX) return syscall_result(Errno::ESRCH);
  const Process* p = pid ? live_leader(static_cast<int>(pid)) : current()->leader;
  if (!p) return syscall_result(Errno::ESRCH);
  return session ? p->sid : p->pgid;
}

int64_t sys_setpgid(uint64_t pid_arg, uint64_t pgid_arg) {
  const int64_t pid64 = static_cast<int32_t>(pid_arg), pgid64 = static_cast<int32_t>(pgid_arg);
  if (pgid64 < 0) return syscall_result(Errno::EINVAL);
  Process& self = *current()->leader;
  const int pid = pid64 ? static_cast<int>(pid64) : self.pid;
  if (pid < 0) return syscall_result(Errno::ESRCH);
  const int pgid = pgid64 ? static_cast<int>(pgid64) : pid;
  Process* target = live_leader(pid);
  if (!target || (target != &self && target->ppid != self.pid)) return syscall_result(Errno::ESRCH);
  if (target != &self) {
    if (target->sid != self.sid) return syscall_result(Errno::EPERM);
    if (target->did_exec) return syscall_result(Errno::EACCES);
  }
  if (target->sid == target->pid) return syscall_result(Errno::EPERM);
  if (pgid != target->pid) {
    bool exists = false;
    for (const Process& q : process_table())
      exists |= q.state != ProcState::Free && q.leader == &q && q.pgid == pgid && q.sid == self.sid;
    if (!exists) return syscall_result(Errno::EPERM);
  }
  target->pgid = pgid;
  return 0;
}

int64_t sys_setsid() {
  Process& self = *current()->leader;
  for (const Process& q : process_table())  // a group named by the caller's pid exists: it leads or could lead one
    if (q.state != ProcState::Free && q.leader == &q && q.pgid == self.pid) return syscall_result(Errno::EPERM);
  self.pgid = self.sid = self.pid;
  return self.sid;
}

uint64_t g_reported[8];  // bit n: number n reported (0..511); under the kernel lock

}  // namespace

bool linux_own_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret) {
  switch (nr) {
    case abi::SYS_uname: ret = sys_uname(a[0]); return true;
    case abi::SYS_getuid:
    case abi::SYS_getgid:
    case abi::SYS_geteuid:
    case abi::SYS_getegid: ret = 0; return true;
    case abi::SYS_getrlimit: ret = sys_prlimit64(0, a[0], 0, a[1]); return true;
    case abi::SYS_prlimit64: ret = sys_prlimit64(a[0], a[1], a[2], a[3]); return true;
    case abi::SYS_set_robust_list: ret = sys_set_robust_list(a[0], a[1]); return true;
    case abi::SYS_getrandom: ret = sys_getrandom(a[0], a[1], a[2]); return true;
    case abi::SYS_sysinfo: ret = sys_sysinfo(a[0]); return true;
    default: return false;
  }
}

bool linux_call(uint64_t nr, const uint64_t (&a)[6], int64_t& ret) {
  if (linux_own_call(nr, a, ret)) return true;
  switch (nr) {
    // prctl's name is read by records other CPUs write: under the kernel lock.
    case abi::SYS_prctl: ret = sys_prctl(a[0], a[1]); return true;
    case abi::SYS_getpgrp: ret = current()->leader->pgid; return true;
    case abi::SYS_getpgid: ret = sys_getpgid(a[0], /*session=*/false); return true;
    case abi::SYS_getsid: ret = sys_getpgid(a[0], /*session=*/true); return true;
    case abi::SYS_setpgid: ret = sys_setpgid(a[0], a[1]); return true;
    case abi::SYS_setsid: ret = sys_setsid(); return true;
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
