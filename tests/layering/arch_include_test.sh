#!/bin/sh
# arch/ sits below kernel/: the layering check must fail on an include of a
# kernel/ header from arch/ and name the file, the line and the rule (the
# one way up, arch/upcalls.h, is arch's own header). A copy of the kernel's
# layers with one such include planted; expect exit 1 and that line alone.
#   arch_include_test.sh CHECKER ROOT RULES
set -u
checker=$1 root=$2 rules=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for dir in kernel arch mm pvops hypercalls base; do cp -R "$root/$dir" "$scratch/$dir"; done

victim=arch/traps.cpp
line=$(($(wc -l <"$scratch/$victim") + 1))
echo '#include "kernel/proc/process.h"' >>"$scratch/$victim"

"$checker" --root "$scratch" --rules "$rules" >"$scratch/out"
status=$?
cat "$scratch/out"
[ "$status" -eq 1 ] || { echo "FAIL: exit status $status, expected 1"; exit 1; }
grep -qF "$victim:$line: upward include of \"kernel/proc/process.h\" (layer kernel) from layer arch (rule: layer arch includes only arch, mm, pvops, hypercalls, frames, base)" "$scratch/out" ||
  { echo "FAIL: the include of kernel/ from arch/ is not named with its file, line and rule"; exit 1; }
grep -qF "1 upward" "$scratch/out" || { echo "FAIL: expected exactly 1 finding"; exit 1; }
echo "PASS"
