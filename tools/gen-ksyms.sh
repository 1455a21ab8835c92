#!/bin/sh
# gen-ksyms.sh NM ELF OUT.S — turns the text symbols of the first link of
# pvk.elf into the .ksyms table of the second (see arch/symbols.cpp).
set -eu
nm="$1" elf="$2" out="$3"
"$nm" -n -C --defined-only "$elf" | awk '
  $2 ~ /^[TtWw]$/ {
    addr = $1; $1 = ""; $2 = ""; name = substr($0, 3)
    gsub(/\\/, "\\\\", name); gsub(/"/, "\\\"", name)
    a[n] = addr; s[n] = name; n++
  }
  END {
    print "    .section .ksyms, \"a\""
    print "    .balign 8"
    print "    .global pvk_ksyms_count"
    printf "pvk_ksyms_count: .quad %d\n", n
    print "    .global pvk_ksyms"
    print "pvk_ksyms:"
    for (i = 0; i < n; i++) printf "    .quad 0x%s, .Lksym%d\n", a[i], i
    for (i = 0; i < n; i++) printf ".Lksym%d: .asciz \"%s\"\n", i, s[i]
  }' > "$out"
