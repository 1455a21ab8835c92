// Signals: sending (with a kick to the CPU the target runs on), the
// question whether one cuts a blocking call short, delivery on the way back
// to user mode (the signal frame), and rt_sigreturn.
#include "kernel/proc/process.h"

#include <stddef.h>

#include "base/arch/platform.h"
#include "kernel/kernel_lock.h"
#include "kernel/proc/process_parts.h"
#include "kernel/proc/user_copy.h"
#include "kernel/proc/fpu_state.h"
#include "arch/fpu/fpu.h"
#include "base/signal_frame.h"

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

// May run without the kernel lock (a futex wait's look after it committed
// to sleep): the pending word is read sequentially consistent, pairing with
// send_signal's locked or (kernel/proc/wake.h).
bool signal_interrupts(const Process& p) {
  for (uint64_t pending = __atomic_load_n(&p.pending, __ATOMIC_SEQ_CST); pending; pending &= pending - 1)
    if (acts(p, __builtin_ctzll(pending) + 1)) return true;
  return false;
}

void send_signal(Process& p, int sig) {
  if (sig <= 0 || sig > abi::kNumSignals) return;
  // A locked or: the target may be committing to sleep without the kernel
  // lock (a futex wait), and looks at its signals after its commit; this
  // store comes before the look at its state in wake_up (wake.h).
  __atomic_fetch_or(&p.pending, sig_bit(sig), __ATOMIC_SEQ_CST);
  if (!acts(p, sig)) return;  // masked or ignored: nothing to hurry
  // A blocked call returns EINTR so the signal is seen on the way out; a
  // thread running elsewhere is interrupted so it sees it now.
  if (!wake_up(p)) kick_signal_target(p);
}

void raise_fault_signal(int sig) {
  Process& p = *running_here();
  const abi::KernelSigaction& a = p.leader->actions[sig];
  // A fault that cannot be handled kills, whatever the disposition says.
  if (a.handler == abi::SIG_DFL || a.handler == abi::SIG_IGN || (p.blocked & sig_bit(sig)))
    do_exit(abi::wait_signaled(sig));
  p.pending |= sig_bit(sig);
}

namespace {

// The interrupted registers as Linux's sigcontext holds them.
sigframe::SigContext to_sigcontext(const TrapFrame& f) {
  sigframe::SigContext sc{};
  sc.r8 = f.r8, sc.r9 = f.r9, sc.r10 = f.r10, sc.r11 = f.r11;
  sc.r12 = f.r12, sc.r13 = f.r13, sc.r14 = f.r14, sc.r15 = f.r15;
  sc.rdi = f.rdi, sc.rsi = f.rsi, sc.rbp = f.rbp, sc.rbx = f.rbx;
  sc.rdx = f.rdx, sc.rax = f.rax, sc.rcx = f.rcx, sc.rsp = f.rsp, sc.rip = f.rip;
  sc.eflags = f.rflags;
  sc.cs = static_cast<uint16_t>(f.cs);
  sc.ss = static_cast<uint16_t>(f.ss);
  sc.err = f.error_code;
  sc.trapno = f.vector;
  return sc;
}

// Writes the frame for sig below f.rsp (Linux's rt_sigframe, with the FP
// image above it) and points f at the handler; false if the stack cannot
// take it.
bool push_signal_frame(Process& p, TrapFrame& f, int sig, const abi::KernelSigaction& action) {
  const sigframe::FpFormat fmt = fpu::frame_format();
  const sigframe::Placement at = sigframe::place(f.rsp, fmt);
  sigframe::RtSigframe sf{};
  sf.pretcode = action.restorer;
  sf.uc.uc_flags = sigframe::kUcSigcontextSs | sigframe::kUcStrictRestoreSs | (fmt.xsave ? sigframe::kUcFpXstate : 0);
  sf.uc.uc_mcontext = to_sigcontext(f);
  sf.uc.uc_mcontext.fpstate = at.fpstate;
  const uint64_t mask = p.suspend_mask_pending ? p.suspend_saved_mask : p.blocked;
  p.suspend_mask_pending = false;
  sf.uc.uc_mcontext.oldmask = mask;
  sf.uc.uc_sigmask = mask;
  sf.info.si_signo = sig;
  if (at.frame >= abi::kUserTop || at.fpstate >= abi::kUserTop) return false;
  if (copy_to_user(at.frame, &sf, sizeof sf).is_error()) return false;
  if (fpu_to_signal_frame(p, at.fpstate).is_error()) return false;
  f.rsp = at.frame;
  f.rip = action.handler;
  f.rdi = static_cast<uint64_t>(sig);
  f.rsi = at.frame + offsetof(sigframe::RtSigframe, info);
  f.rdx = at.frame + offsetof(sigframe::RtSigframe, uc);
  f.rax = 0;
  return true;
}

}  // namespace

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
    const abi::KernelSigaction action = a;
    if (a.flags & abi::SA_RESETHAND) actions[sig].handler = abi::SIG_DFL;
    if (!push_signal_frame(p, f, sig, action)) do_exit(abi::wait_signaled(abi::SIGSEGV));
    p.blocked |= action.mask | ((action.flags & abi::SA_NODEFER) ? 0 : sig_bit(sig));
    p.blocked &= ~sig_bit(abi::SIGKILL);
    f.cs = g_platform->user_cs;  // the handler runs in 64-bit user mode, whatever was interrupted
    f.ss = g_platform->user_ss;
    // The ABI's state at a function entry: DF clear; no single-stepping into
    // the handler (the interrupted code's flags come back with rt_sigreturn).
    f.rflags &= ~(rflags::DF | rflags::TF | rflags::RF);
    break;  // one handler at a time; the rest wait for its sigreturn
  }
  // Last line of defence before iret: never return to a kernel or
  // non-canonical address (the iret itself would fault in kernel mode).
  if (f.rip >= abi::kUserTop) do_exit(abi::wait_signaled(abi::SIGSEGV));
}

int64_t do_sigreturn(TrapFrame& f) {
  // The handler's ret popped the restorer address: the ucontext is at rsp.
  sigframe::UContext uc;
  if (copy_from_user(&uc, f.rsp, sizeof uc).is_error()) do_exit(abi::wait_signaled(abi::SIGSEGV));
  const sigframe::SigContext& sc = uc.uc_mcontext;
  // Only a user address may be returned to: a kernel or non-canonical rip
  // would fault in the kernel's own return path.
  if (sc.rip >= abi::kUserTop || sc.rsp >= abi::kUserTop) do_exit(abi::wait_signaled(abi::SIGSEGV));
  // The FP image is checked before the CPU sees it (kernel/proc/fpu_state.cpp).
  Process& p = *running_here();
  if (!fpu_from_signal_frame(p, sc.fpstate)) do_exit(abi::wait_signaled(abi::SIGSEGV));
  f.r8 = sc.r8, f.r9 = sc.r9, f.r10 = sc.r10, f.r11 = sc.r11;
  f.r12 = sc.r12, f.r13 = sc.r13, f.r14 = sc.r14, f.r15 = sc.r15;
  f.rdi = sc.rdi, f.rsi = sc.rsi, f.rbp = sc.rbp, f.rbx = sc.rbx;
  f.rdx = sc.rdx, f.rax = sc.rax, f.rcx = sc.rcx, f.rsp = sc.rsp, f.rip = sc.rip;
  // The user may not forge privilege: segments (f.cs, f.ss kept) and flags
  // are the kernel's.
  f.rflags = (sc.eflags & 0xcd5) | 0x202;  // arithmetic flags, DF, TF cleared; IF on
  p.blocked = uc.uc_sigmask & ~sig_bit(abi::SIGKILL);
  return static_cast<int64_t>(f.rax);
}

}  // namespace pvk
