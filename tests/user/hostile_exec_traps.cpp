// hostile's attacks with instructions the kernel must turn into signals: a
// call into memory that is not executable, and ud2, int3, int $N for every
// N, sysenter and int $0x80 from 64-bit mode.
#include "hostile_attacks.h"
#include "hostile_helpers.h"

extern "C" char hostile_int_stubs[];

namespace hostile {

// ===========================================================================
// Executing non-executable memory.

namespace {

using Fn = void (*)();
void call_at(uint64_t a) { reinterpret_cast<Fn>(a)(); }

void exec_heap(uint64_t) {
  auto* p = static_cast<uint8_t*>(map_anon(kPage));
  if (!p) exit_group(3);
  p[0] = 0xc3;  // ret
  call_at(reinterpret_cast<uint64_t>(p));
}
void exec_stack(uint64_t) {
  volatile uint8_t code[64];
  code[0] = 0xc3;
  call_at(reinterpret_cast<uint64_t>(code));
}
void exec_readonly(uint64_t) {
  auto* p = static_cast<uint8_t*>(map_anon(kPage));
  if (!p) exit_group(3);
  p[0] = 0xc3;
  mprotect(p, kPage, PROT_READ);
  call_at(reinterpret_cast<uint64_t>(p));
}
void exec_rwx(uint64_t) {  // the control: PROT_EXEC pages run
  auto* p = static_cast<uint8_t*>(map_anon(kPage, PROT_READ | PROT_WRITE | PROT_EXEC));
  if (!p) exit_group(3);
  p[0] = 0xc3;
  call_at(reinterpret_cast<uint64_t>(p));
}
void exec_after_mprotect(uint64_t) {  // runs once, then loses PROT_EXEC
  auto* p = static_cast<uint8_t*>(map_anon(kPage, PROT_READ | PROT_WRITE | PROT_EXEC));
  if (!p) exit_group(3);
  p[0] = 0xc3;
  call_at(reinterpret_cast<uint64_t>(p));
  if (mprotect(p, kPage, PROT_READ | PROT_WRITE) != 0) exit_group(4);
  call_at(reinterpret_cast<uint64_t>(p));
}

}  // namespace

void attack_nx_exec() {
  EXPECT_SIGNAL("call into an RW anonymous page", run_victim(exec_heap, 0), SIGSEGV);
  EXPECT_SIGNAL("call into the stack", run_victim(exec_stack, 0), SIGSEGV);
  EXPECT_SIGNAL("call into a read-only page", run_victim(exec_readonly, 0), SIGSEGV);
  EXPECT_SIGNAL("call into a page after mprotect dropped PROT_EXEC", run_victim(exec_after_mprotect, 0),
                SIGSEGV);
  EXPECT_EXIT("call into an RWX page (control)", run_victim(exec_rwx, 0), kVictimSurvived);
}

// ===========================================================================
// ud2, int3, int $N, sysenter and int $0x80 from 64-bit mode.

namespace {

void do_ud2(uint64_t) { asm volatile("ud2"); }
void do_int3(uint64_t) { asm volatile("int3"); }

void handled_ud2(uint64_t) {
  sigaction(SIGILL, escape_handler, kSaNodefer);
  if (pvk_setjmp(&g_jmp) == 0) asm volatile("ud2");
  exit_group(g_sig_seen);
}
void handled_int3(uint64_t) {
  sigaction(SIGTRAP, escape_handler, kSaNodefer);
  if (pvk_setjmp(&g_jmp) == 0) asm volatile("int3");
  exit_group(g_sig_seen);
}

}  // namespace

void attack_ud2_sigill() {
  EXPECT_SIGNAL("ud2", run_victim(do_ud2, 0), SIGILL);
  EXPECT_EXIT("ud2 with a SIGILL handler (exit = the handler's signal)", run_victim(handled_ud2, 0), SIGILL);
}
void attack_int3_sigtrap() {
  EXPECT_SIGNAL("int3", run_victim(do_int3, 0), SIGTRAP);
  EXPECT_EXIT("int3 with a SIGTRAP handler (exit = the handler's signal)", run_victim(handled_int3, 0),
              SIGTRAP);
}

namespace {

void int_n(uint64_t n) { call_at(reinterpret_cast<uint64_t>(hostile_int_stubs) + 16 * n); }

}  // namespace

void attack_int_n() {
  int by_sig[65] = {};
  for (uint64_t n = 0; n < 256; ++n) {
    const Outcome o = run_victim(int_n, n);
    char what[40];
    pvk::format(what, sizeof what, "int $%lu from 64-bit mode", n);
    // No vector may be usable as a system call or a fake exception (an
    // error-code vector entered without an error code): the process dies.
    EXPECT_SIGNAL(what, o, SIGSEGV, SIGTRAP, SIGILL, SIGBUS);
    if (!o.timed_out && WIFSIGNALED(o.status) && WTERMSIG(o.status) <= 64) ++by_sig[WTERMSIG(o.status)];
  }
  detail("sigsegv", by_sig[SIGSEGV]);
  detail("sigtrap", by_sig[SIGTRAP]);
  detail("sigill", by_sig[SIGILL]);
}

namespace {

void do_sysenter(uint64_t) { asm volatile("mov $39, %%eax\n\tsysenter" : : : "rax", "rcx", "rdx", "memory"); }
void do_int80(uint64_t) { asm volatile("mov $39, %%eax\n\tint $0x80" : : : "rax", "memory"); }
void do_syscall_getpid(uint64_t) {
  if (syscall0(SYS_getpid) != getpid()) exit_group(3);
}

}  // namespace

void attack_sysenter_int80_64() {
  EXPECT_SIGNAL("sysenter from 64-bit mode", run_victim(do_sysenter, 0), SIGSEGV, SIGILL);
  EXPECT_SIGNAL("int $0x80 from 64-bit mode", run_victim(do_int80, 0), SIGSEGV, SIGILL);
  EXPECT_EXIT("syscall from 64-bit mode (control)", run_victim(do_syscall_getpid, 0), kVictimSurvived);
}

}  // namespace hostile
