/* Empty symbol table for the first link; the second link replaces it with
 * the generated one (tools/gen-ksyms.sh). */
    .section .ksyms, "a"
    .balign 8
    .global pvk_ksyms_count
pvk_ksyms_count: .quad 0
    .global pvk_ksyms
pvk_ksyms:
