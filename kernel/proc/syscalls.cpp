// The system call table (numbers and meanings in base/abi.h). Every
// user pointer goes through user_copy; errors come back as -errno.
#include "base/arch/cpu.h"
#include "base/arch/platform.h"
#include "base/console/console.h"
#include "arch/finish.h"
#include "kernel/proc/exec.h"
#include "kernel/proc/exec_args.h"
#include "base/lib/kstring.h"
#include "base/lib/lock_stats.h"
#include "kernel/proc/linux_calls.h"
#include "kernel/proc/mm_calls.h"
#include "kernel/proc/clock_calls.h"
#include "kernel/proc/sigmask_calls.h"
#include "kernel/proc/file.h"
#include "kernel/proc/fd_table.h"
#include "kernel/proc/file_mmap.h"
#include "kernel/proc/fs_calls.h"
#include "kernel/proc/syscall_result.h"
#include "kernel/proc/futex.h"
#include "kernel/proc/process.h"
#include "kernel/proc/sleep_calls.h"
#include "kernel/proc/thread.h"
#include "kernel/proc/user_copy.h"
#include "base/frames/frame_allocator.h"
#include "base/frames/physmap.h"
#include "kernel/proc/cpa_timing.h"
#include "kernel/proc/cpu_calls.h"
#include "kernel/proc/probes.h"

namespace pvk {

int64_t do_sigreturn(TrapFrame& f);
ErrorOr<int> do_wait(int pid, uint64_t user_status, int options);
namespace {

using Args = uint64_t[6];

int64_t result(Errno e) { return syscall_result(e); }
template <typename T>
int64_t result(const ErrorOr<T>& r) {
  if (r.is_error()) return result(r.error());
  return static_cast<int64_t>(r.value());
}
int64_t result(const ErrorOr<void>& r) { return r.is_error() ? result(r.error()) : 0; }

// The file a descriptor names, held (a reference) until the call returns:
// another thread's close or dup2 meanwhile frees only the number. Empty
// for a bad descriptor (EBADF).
FileRef fd_get(uint64_t fd) { return FileRef::adopt(fd_hold(*current()->leader, fd)); }

int64_t sys_read(const Args& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  return result(file_read(f.get(), a[1], a[2]));
}

int64_t sys_write(const Args& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  return result(file_write(f.get(), a[1], a[2]));
}

int64_t sys_close(const Args& a) {
  if (a[0] >= Process::kMaxFds) return result(Errno::EBADF);
  // The number first (under the table's lock: a lookup finds it free, or
  // took its reference before): free from here on.
  File* f = fd_swap(*current()->leader, static_cast<unsigned>(a[0]), nullptr, false);
  if (!f) return result(Errno::EBADF);
  file_put(f);                 // the table's reference; a call using f holds its own
  return 0;
}

int64_t sys_pipe(const Args& a) {
  Process& p = *current()->leader;
  int fds[2] = {-1, -1};
  for (int fd = 0, n = 0; fd < int(Process::kMaxFds) && n < 2; ++fd)
    if (!p.fds[fd]) fds[n++] = fd;
  if (fds[1] < 0) return result(Errno::EMFILE);
  if (!user_range_ok(a[0], sizeof fds)) return result(Errno::EFAULT);
  File *r, *w;
  if (auto m = make_pipe(r, w); m.is_error()) return result(m.error());
  // Nothing between the search above and the install below can sleep (a
  // fault in copy_to_user is handled in place, under the kernel lock), so
  // no other thread can take the two numbers meanwhile.
  if (auto c = copy_to_user(a[0], fds, sizeof fds); c.is_error()) {
    file_put(r), file_put(w);
    return result(c.error());
  }
  fd_swap(p, static_cast<unsigned>(fds[0]), r, false);  // both were empty
  fd_swap(p, static_cast<unsigned>(fds[1]), w, false);
  return 0;
}

int64_t sys_dup2(const Args& a) {
  const FileRef f = fd_get(a[0]);
  if (!f) return result(Errno::EBADF);
  if (a[1] >= Process::kMaxFds) return result(Errno::EBADF);
  if (a[0] == a[1]) return static_cast<int64_t>(a[1]);
  // The new reference before the old one goes (they may be the same file).
  File* old = fd_swap(*current()->leader, static_cast<unsigned>(a[1]), file_get(f.get()), false);
  if (old) file_put(old);
  return static_cast<int64_t>(a[1]);
}

// A signal number from a 64-bit register: checked before it is narrowed.
bool valid_signal(uint64_t sig) { return sig >= 1 && sig <= abi::kNumSignals; }


int64_t sys_rt_sigaction(const Args& a) {
  if (!valid_signal(a[0]) || a[0] == abi::SIGKILL || a[3] != sizeof(uint64_t)) return result(Errno::EINVAL);
  const int sig = static_cast<int>(a[0]);
  Process& p = *current()->leader;  // the actions are the thread group's
  abi::KernelSigaction fresh;
  if (a[1]) {
    if (auto r = copy_from_user(&fresh, a[1], sizeof fresh); r.is_error()) return result(r.error());
    if (fresh.handler > abi::SIG_IGN && !(fresh.flags & abi::SA_RESTORER)) return result(Errno::EINVAL);
  }
  if (a[2])
    if (auto r = copy_to_user(a[2], &p.actions[sig], sizeof p.actions[sig]); r.is_error()) return result(r.error());
  if (a[1]) p.actions[sig] = fresh;
  return 0;
}

int64_t sys_kill(const Args& a) { return result(do_kill(static_cast<int64_t>(a[0]), a[1])); }
int64_t sys_tgkill(const Args& a) {
  return result(do_tgkill(static_cast<int64_t>(a[0]), static_cast<int64_t>(a[1]), a[2]));
}
int64_t sys_clone(const Args& a) { return result(do_clone(a[0], a[1], a[2], a[3], a[4])); }
int64_t sys_arch_prctl(const Args& a) { return result(do_arch_prctl(a[0], a[1])); }
int64_t sys_set_tid_address(const Args& a) {
  current()->clear_child_tid = a[0];
  return current()->pid;
}

// Linux's order: the file is found (ENOENT, EACCES...) before argv and
// envp are read (EFAULT, E2BIG), then the file is checked (ENOEXEC,
// ELOOP), and all of it before the other threads end.
// The strings go to frames of their own (exec_args.h): the call sleeps
// (waiting for the other threads to end) between copying them in and
// laying them out, and up to 2 MiB of them fit no kernel stack.
ErrorOr<void> do_execve(uint64_t user_path, uint64_t user_argv, uint64_t user_envp) {
  char path[256];
  TRY(string_from_user(path, user_path, sizeof path));
  // An unknown program costs the other threads nothing; from here on,
  // exec (if it works) replaces the whole process.
  TRY(check_exec_file(path));
  ExecArgs args;
  TRY(args.from_user(user_argv, user_envp, strlen(path) + 1));
  ExecPlan plan;  // ~1 KiB of the kernel stack; its file reference goes with it
  TRY(prepare_exec(plan, path, args));
  TRY(become_single_threaded(*current()));
  TRY(commit_exec(*current(), plan, args));
  reset_thread_state_after_exec(*current());
  current()->leader->did_exec = true;
  fscall::close_on_exec();
  return {};
}

int64_t sys_execve(TrapFrame&, const Args& a) {
  if (auto r = do_execve(a[0], a[1], a[2]); r.is_error()) return result(r.error());
  return static_cast<int64_t>(current()->frame()->rax);  // the new image's rax (0)
}

int64_t sys_wait4(const Args& a) {
  return result(do_wait(static_cast<int>(a[0]), a[1], static_cast<int>(a[2])));
}

int64_t sys_pvk_counters(const Args& a) {
  const MmuCounters& c = g_mmu_counters;
  abi::PvkCounters out{};
#define PVK_MMU_COUNTER(name) out.name = c.name;
#define PVK_MM_COUNTER(name) out.name = g_mm_stats.name;
#define PVK_CPU_COUNTER(name) out.name = g_cpu_counters.name;
#define PVK_LOCK_COUNTER(cls)                               \
  {                                                         \
    const LockCounts lc = lock_counts(LockStat::cls);       \
    out.lock_##cls##_acquired = lc.acquired;                \
    out.lock_##cls##_contended = lc.contended;              \
    out.lock_##cls##_spins = lc.spins;                      \
  }
#include "base/counters.inc"
  out.free_frames = frames().free_count();
  out.tsc_khz = g_platform->tsc_khz;
  out.platform_unused = nullptr;
  return result(copy_to_user(a[0], &out, sizeof out));
}

// Seed 002's CPA path, timed in the kernel (kernel/proc/cpa_timing.h).
int64_t sys_pvk_cpa(const Args& a) {
  // Where the times go is checked first: a bad pointer is EFAULT whatever
  // the hypervisor thinks of the request.
  const uint64_t none[2] = {};
  if (auto w = copy_to_user(a[1], none, sizeof none); w.is_error()) return result(w);
  auto t = time_cpa_cycle(a[0]);
  if (t.is_error()) return result(t.error());
  const uint64_t ns[2] = {t.value().wc_ns, t.value().wb_ns};
  return result(copy_to_user(a[1], ns, sizeof ns));
}

// `pvk calibrate`'s events, one kind at a time (kernel/proc/probes.h). As
// for SYS_pvk_cpa, a bad pointer is EFAULT before anything runs.
int64_t sys_pvk_probe(const Args& a) {
  const uint64_t zero = 0;
  if (auto w = copy_to_user(a[2], &zero, sizeof zero); w.is_error()) return result(w);
  auto ns = run_probe(a[0], a[1]);
  if (ns.is_error()) return result(ns.error());
  const uint64_t out = ns.value();
  return result(copy_to_user(a[2], &out, sizeof out));
}

int64_t sys_pvk_shutdown(const Args& a) {
  if (current()->pid != 1) return result(Errno::EPERM);
  do_exit(abi::wait_exited(static_cast<int>(a[0])));
}

}  // namespace

// The calls that need the kernel lock (syscall_entry.cpp took it, after
// its entry checks).
extern "C" void syscall_dispatch(TrapFrame* f) {
  const Args a = {f->rdi, f->rsi, f->rdx, f->r10, f->r8, f->r9};
  int64_t ret;
  switch (f->rax) {
    case abi::SYS_read: ret = sys_read(a); break;
    case abi::SYS_write: ret = sys_write(a); break;
    case abi::SYS_close: ret = sys_close(a); break;
    case abi::SYS_rt_sigaction: ret = sys_rt_sigaction(a); break;
    case abi::SYS_rt_sigreturn: ret = do_sigreturn(*f); break;
    case abi::SYS_pipe: ret = sys_pipe(a); break;
    case abi::SYS_sched_yield: schedule(), ret = 0; break;
    case abi::SYS_dup2: ret = sys_dup2(a); break;
    case abi::SYS_nanosleep: ret = sys_nanosleep(a); break;
    case abi::SYS_clock_nanosleep: ret = sys_clock_nanosleep(a); break;
    case abi::SYS_getpid: ret = current()->tgid; break;  // the process; gettid is the thread
    case abi::SYS_gettid: ret = current()->pid; break;
    case abi::SYS_getppid: ret = current()->ppid; break;
    case abi::SYS_fork: ret = result(do_fork()); break;
    case abi::SYS_clone: ret = sys_clone(a); break;
    case abi::SYS_execve: ret = sys_execve(*f, a); break;
    case abi::SYS_exit: do_thread_exit(abi::wait_exited(static_cast<int>(a[0])));
    case abi::SYS_exit_group: do_exit(abi::wait_exited(static_cast<int>(a[0])));
    case abi::SYS_set_tid_address: ret = sys_set_tid_address(a); break;
    case abi::SYS_futex: ret = sys_futex(a); break;
    case abi::SYS_tgkill: ret = sys_tgkill(a); break;
    case abi::SYS_arch_prctl: ret = sys_arch_prctl(a); break;
    case abi::SYS_wait4: ret = sys_wait4(a); break;
    case abi::SYS_kill: ret = sys_kill(a); break;
    case abi::SYS_pvk_counters: ret = sys_pvk_counters(a); break;
    case abi::SYS_pvk_shutdown: ret = sys_pvk_shutdown(a); break;
    case abi::SYS_pvk_cpa: ret = sys_pvk_cpa(a); break;
    case abi::SYS_pvk_probe: ret = sys_pvk_probe(a); break;
    default:
      if (!mm_call(f->rax, a, ret) && !clock_call(f->rax, a, ret) && !fs_path_call(f->rax, a, ret) && !fs_fd_call(f->rax, a, ret) && !sendfile_call(f->rax, a, ret) &&
          !cpu_call(f->rax, a, ret) &&
          !signal_mask_call(f->rax, a, ret) && !linux_call(f->rax, a, ret))
        ret = unimplemented_call(f->rax);
      break;
  }
  f->rax = static_cast<uint64_t>(ret);
  prepare_return_to_user(*f);
}

}  // namespace pvk
