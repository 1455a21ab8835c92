// The kernel context switch (arch/switch.S) and a new process's first way
// to user mode, for the scheduler (kernel/proc/).
#pragma once
#include <stdint.h>

extern "C" {
// Saves the callee-saved registers on the current stack and its pointer in
// *save_rsp, then continues on new_rsp where that stack was saved.
void switch_context(uint64_t* save_rsp, uint64_t new_rsp);
// Where a new process's first switch_context "returns": it drops the kernel
// lock (process_first_entry, arch/upcalls.h) and leaves for user mode
// through pvk_ret_to_user with the TrapFrame at the top of the stack.
extern char process_first_return[];
// The platform's way back to user mode from a TrapFrame on the stack (set
// by the boot entry: native_ret_to_user, xen_ret_to_user).
extern void* pvk_ret_to_user;
}
