#!/bin/sh
# The layering check must fail on an upward include and name the file, the
# line and the rule: copy the kernel's layers to a scratch tree, add one
# include that runs up (base/ reaching into mm/) and one of no layer (bench/),
# and expect exit 1 with both lines.
#   upward_include_test.sh CHECKER ROOT RULES
set -u
checker=$1 root=$2 rules=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for dir in kernel arch mm pvops hypercalls base; do cp -R "$root/$dir" "$scratch/$dir"; done

"$checker" --root "$scratch" --rules "$rules" >"$scratch/clean.out" || {
  echo "FAIL: the unmodified copy does not pass"; cat "$scratch/clean.out"; exit 1; }

victim=base/lib/types.h
line=$(($(wc -l <"$scratch/$victim") + 1))
echo '#include "mm/address_space.h"' >>"$scratch/$victim"
echo '#include "bench/bench.h"' >>"$scratch/pvops/pte.h"
other=$(wc -l <"$scratch/pvops/pte.h")

"$checker" --root "$scratch" --rules "$rules" >"$scratch/out"
status=$?
cat "$scratch/out"
[ "$status" -eq 1 ] || { echo "FAIL: exit status $status, expected 1"; exit 1; }
grep -qF "$victim:$line: upward include of \"mm/address_space.h\" (layer mm) from layer base (rule: layer base includes only base)" "$scratch/out" ||
  { echo "FAIL: the upward include is not named with its file, line and rule"; exit 1; }
grep -qF "pvops/pte.h:$other: \"bench/bench.h\" belongs to no kernel layer (rule: layer pvops includes only pvops, hypercalls, frames, base)" "$scratch/out" ||
  { echo "FAIL: the include of no layer is not named"; exit 1; }
grep -qF "2 upward" "$scratch/out" || { echo "FAIL: expected exactly 2 findings"; exit 1; }
echo "PASS"
