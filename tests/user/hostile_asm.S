/* hostile's machine-level pieces: code that runs in 32-bit compatibility
 * mode (or in 64-bit mode, when a far transfer lands on a 64-bit selector),
 * the int $N stubs, the landing pad of forged sigreturn frames, and a
 * payload that would only ever run if the kernel jumped to a user page in
 * ring 0. See hostile.cpp for how each is used. */

/* Compatibility-mode payload. Entered by a far jmp/call/ret with
 *   %ebx = what to do after entry (0: ud2, 1: syscall, 2: int $0x80, 3: sysenter)
 *   %edi = marker block (below 4 GiB, MAP_SHARED with the attacker)
 *   %esi = a stack pointer below 4 GiB
 * Every instruction here encodes the same in 32- and 64-bit mode (no
 * push/pop/inc/dec, no absolute or RIP-relative memory operands), so a far
 * transfer to a 64-bit selector runs the same steps. */
    .section .text.hostile_compat, "ax"
    .global hostile_compat_entry
hostile_compat_entry:
    .code32
    mov %ss, %eax
    mov %eax, %ds
    mov %eax, %es
    movl $0x434f4d50, (%edi)        /* [0] = "PMOC": entered */
    mov %cs, %eax
    mov %eax, 4(%edi)               /* [1] = %cs as seen there */
    mov %esi, %esp
    cmp $1, %ebx
    je 1f
    cmp $2, %ebx
    je 2f
    cmp $3, %ebx
    je 3f
    ud2
1:  movl $0x53595343, 12(%edi)      /* [3] = "CSYS": about to syscall */
    mov $39, %eax                   /* getpid in either ABI's numbering? no matter */
    mov $0x30000000, %ecx
    syscall
    movl $0x52455455, 8(%edi)       /* [2] = "UTER": the instruction returned */
    ud2
2:  movl $0x30385449, 12(%edi)
    mov $20, %eax                   /* i386 getpid */
    int $0x80
    movl $0x52455455, 8(%edi)
    ud2
3:  movl $0x52544e45, 12(%edi)
    mov $20, %eax
    mov %esp, %ebp
    sysenter
    movl $0x52455455, 8(%edi)
    ud2
    .code64

/* The ring-0 payload: copied to user page 0 (the target of `syscall` from
 * compatibility mode while MSR_CSTAR is 0) when that page can be mapped.
 * It only writes a marker the attacker checks and stops with ud2; if it
 * ever runs, the kernel executed a user page at CPL 0. */
    .section .rodata.hostile_ring0, "a"
    .global hostile_ring0_payload, hostile_ring0_payload_end
hostile_ring0_payload:
    movl $0x52494e47, 0x30000010    /* [4] = "GNIR" */
    ud2
hostile_ring0_payload_end:

/* int $N for every N: stub N at hostile_int_stubs + 16 * N. Each returns
 * nothing: if the int instruction comes back to the next instruction, the
 * stub exits with status 77. */
    .section .text.hostile_int_stubs, "ax"
    .global hostile_int_stubs
    .balign 16
hostile_int_stubs:
    .set vecno, 0
    .rept 256
    .balign 16
    .byte 0xcd, vecno               /* int $vecno (GAS writes int $3 as int3) */
    mov $60, %eax
    mov $77, %edi
    syscall
    .set vecno, vecno + 1
    .endr

/* Landing pad of a forged rt_sigreturn frame: whatever the frame's
 * registers say, read RFLAGS, %cs and %ss first, clear DF, and call
 * hostile_landed(rflags, cs, ss) on the stack the frame named (the caller
 * gives it a good one). hostile_landed never returns. */
    .section .text.hostile_landing, "ax"
    .global hostile_landing_pad
hostile_landing_pad:
    pushfq
    pop %rdi
    cld
    mov %cs, %esi
    mov %ss, %edx
    and $-16, %rsp
    call hostile_landed
    ud2

    .section .note.GNU-stack, "", @progbits
