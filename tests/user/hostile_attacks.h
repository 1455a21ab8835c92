// hostile's attacks, one entry point each; kAttacks (hostile_attacks.cpp)
// gives their order. Each runs in its own attack process (hostile.cpp).
#pragma once
#include "hostile.h"

namespace hostile {

// Executing non-executable memory; ud2, int3, int $N, sysenter and
// int $0x80 from 64-bit mode (hostile_exec_traps.cpp).
void attack_nx_exec();
void attack_ud2_sigill();
void attack_int3_sigtrap();
void attack_int_n();
void attack_sysenter_int80_64();

// RFLAGS bits before every kernel entry, TF, timer ticks (hostile_flags.cpp).
void attack_flags_entries();
void attack_flags_tf();
void attack_flags_timer();

// Forged rt_sigreturn frames, bad handler addresses, `syscall` at the top
// of user space (hostile_sigreturn.cpp).
void attack_sigreturn_forged();
void attack_sigaction_bad_handler();
void attack_top_page_syscall();

// Long writes and reads vs SIGKILL, and the small items (hostile_signals.cpp).
void attack_huge_write_console();
void attack_huge_pipe_kill();
void attack_signal_high_bits();
void attack_default_ignored();
void attack_kill_pid_high_bits();
void attack_fake_done_record();
void attack_kill_init();

// Compatibility-mode far transfers and a MAP_SHARED stack (hostile_compat.cpp).
void attack_compat_far();
void attack_compat_far_lret();
void attack_compat_syscall();
void attack_shared_stack_push();

// Hostile %gs (hostile_gs.cpp).
void attack_gs_selectors();
void attack_gs_wrgsbase();

}  // namespace hostile
