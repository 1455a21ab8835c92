// The order of hostile's attacks (the suite's classes). Each runs in its
// own attack process (hostile.cpp) and forks victims through run_victim()
// (a hang guard, never a speed bound); the attacks themselves are in the
// themed hostile_*.cpp files (hostile_attacks.h).
#include "hostile_attacks.h"

namespace hostile {

const Attack kAttacks[] = {
    {"nx_exec", attack_nx_exec},
    {"ud2_sigill", attack_ud2_sigill},
    {"int3_sigtrap", attack_int3_sigtrap},
    {"int_n", attack_int_n},
    {"sysenter_int80_64", attack_sysenter_int80_64},
    {"flags_entries", attack_flags_entries},
    {"flags_tf", attack_flags_tf},
    {"flags_timer", attack_flags_timer},
    {"sigreturn_forged", attack_sigreturn_forged},
    {"sigaction_bad_handler", attack_sigaction_bad_handler},
    {"top_page_syscall", attack_top_page_syscall},
    {"huge_write_console", attack_huge_write_console},
    {"huge_pipe_kill", attack_huge_pipe_kill},
    {"signal_high_bits", attack_signal_high_bits},
    {"default_ignored", attack_default_ignored},
    {"kill_pid_high_bits", attack_kill_pid_high_bits},
    {"fake_done_record", attack_fake_done_record},
    {"shared_stack_push", attack_shared_stack_push},
    {"gs_selectors", attack_gs_selectors},
    {"gs_wrgsbase", attack_gs_wrgsbase},
    // Last: on a kernel with these holes they take the whole kernel down.
    {"kill_init", attack_kill_init},
    {"compat_far", attack_compat_far},
    {"compat_far_lret", attack_compat_far_lret},
    {"compat_syscall", attack_compat_syscall},
};
const unsigned kAttackCount = sizeof kAttacks / sizeof kAttacks[0];

}  // namespace hostile
