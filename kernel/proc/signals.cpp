// Signals: sending (with a kick to the CPU the target runs on), the
// question whether one cuts a blocking call short, delivery on the way back
// to user mode (the signal frame), and rt_sigreturn.
#include "kernel/proc/process.h"

#include "base/arch/platform.h"
#include "kernel/kernel_lock.h"
#include "kernel/proc/process_parts.h"
#include "kernel/proc/user_copy.h"

namespace pvk {

using namespace proc;

namespace {

// Signals whose default action is to do nothing (as on Linux; SIGCONT
// would also resume a stopped process, and pvk has no stopped state).
bool default_ignored(int sig) {
  return sig == abi::SIGCHLD || sig == abi::SIGCONT || sig == abi::SIGURG || sig == abi::SIGWINCH;
}

// Would delivering sig do anything (run a handler or kill)?
bool acts(const Process& p, int sig) {
  if (sig == abi::SIGKILL) return true;
  if (p.blocked & sig_bit(sig)) return false;
  const uint64_t h = p.leader->actions[sig].handler;
  return h != abi::SIG_IGN && !(h == abi::SIG_DFL && default_ignored(sig));
}
}  // namespace

bool signal_interrupts(const Process& p) {
  for (uint64_t pending = p.pending; pending; pending &= pending - 1)
    if (acts(p, __builtin_ctzll(pending) + 1)) return true;
  return false;
}

void send_signal(Process& p, int sig) {
  if (sig <= 0 || sig > abi::kNumSignals) return;
  p.pending |= sig_bit(sig);
  if (!acts(p, sig)) return;  // masked or ignored: nothing to hurry
  // A blocked call returns EINTR so the signal is seen on the way out; a
  // thread running elsewhere is interrupted so it sees it now.
  if (p.state == ProcState::Blocked)
    make_runnable(p);
  else
    kick_signal_target(p);
}

void raise_fault_signal(int sig) {
  Process& p = *running_here();
  const abi::KernelSigaction& a = p.leader->actions[sig];
  // A fault that cannot be handled kills, whatever the disposition says.
  if (a.handler == abi::SIG_DFL || a.handler == abi::SIG_IGN || (p.blocked & sig_bit(sig)))
    do_exit(abi::wait_signaled(sig));
  p.pending |= sig_bit(sig);
}

// Signal frame on the user stack: the interrupted state, restored by
// rt_sigreturn. Below it, the return address (the restorer).
struct SigFrame {
  TrapFrame saved;
  uint64_t blocked;
};

void return_after_kick(TrapFrame& f) {
  if (!mine().kicked) return;  // an IPI of another kind: nothing to deliver
  kernel_lock();
  prepare_return_to_user(f);
  kernel_unlock();
}

void prepare_return_to_user(TrapFrame& f) {
  Process& p = *running_here();
  mine().kicked = false;  // what a kick asked for happens here
  while (uint64_t deliverable = p.pending & ~p.blocked) {
    const int sig = __builtin_ctzll(deliverable) + 1;
    p.pending &= ~sig_bit(sig);
    abi::KernelSigaction* actions = p.leader->actions;
    const abi::KernelSigaction& a = actions[sig];
    if (sig == abi::SIGKILL || a.handler == abi::SIG_DFL) {
      if (default_ignored(sig)) continue;
      do_exit(abi::wait_signaled(sig));
    }
    if (a.handler == abi::SIG_IGN) continue;
    // The handler address is the program's choice: one outside user space
    // would make the return to user mode fault in the kernel.
    if (a.handler >= abi::kUserTop) do_exit(abi::wait_signaled(abi::SIGSEGV));
    SigFrame sf{f, p.blocked};
    const abi::KernelSigaction action = a;
    if (a.flags & abi::SA_RESETHAND) actions[sig].handler = abi::SIG_DFL;
    const uint64_t frame_at = align_down(f.rsp - 128 - sizeof(SigFrame), 16) - 8;  // skip the red zone
    const uint64_t restorer = action.restorer;
    if (copy_to_user(frame_at + 8, &sf, sizeof sf).is_error() || copy_to_user(frame_at, &restorer, 8).is_error())
      do_exit(abi::wait_signaled(abi::SIGSEGV));
    p.blocked |= action.mask | ((action.flags & abi::SA_NODEFER) ? 0 : sig_bit(sig));
    p.blocked &= ~sig_bit(abi::SIGKILL);
    f.rsp = frame_at;
    f.rip = action.handler;
    f.cs = g_platform->user_cs;  // the handler runs in 64-bit user mode, whatever was interrupted
    f.ss = g_platform->user_ss;
    // The ABI's state at a function entry: DF clear; no single-stepping into
    // the handler (the interrupted code's flags come back with rt_sigreturn).
    f.rflags &= ~(rflags::DF | rflags::TF | rflags::RF);
    f.rdi = static_cast<uint64_t>(sig);
    f.rax = 0;
    break;  // one handler at a time; the rest wait for its sigreturn
  }
  // Last line of defence before iret: never return to a kernel or
  // non-canonical address (the iret itself would fault in kernel mode).
  if (f.rip >= abi::kUserTop) do_exit(abi::wait_signaled(abi::SIGSEGV));
}

int64_t do_sigreturn(TrapFrame& f) {
  SigFrame sf;
  // The handler's ret popped the restorer address: the frame is at rsp.
  if (copy_from_user(&sf, f.rsp, sizeof sf).is_error()) do_exit(abi::wait_signaled(abi::SIGSEGV));
  // Only a user address may be returned to: a kernel or non-canonical rip
  // would fault in the kernel's own return path.
  if (sf.saved.rip >= abi::kUserTop || sf.saved.rsp >= abi::kUserTop) do_exit(abi::wait_signaled(abi::SIGSEGV));
  const TrapFrame kernel_owned = f;
  f = sf.saved;
  // The user may not forge privilege: segments and flags are the kernel's.
  f.cs = kernel_owned.cs;
  f.ss = kernel_owned.ss;
  f.rflags = (sf.saved.rflags & 0xcd5) | 0x202;  // arithmetic flags, DF, TF cleared; IF on
  f.vector = kernel_owned.vector;
  running_here()->blocked = sf.blocked & ~sig_bit(abi::SIGKILL);
  return static_cast<int64_t>(f.rax);
}

}  // namespace pvk
