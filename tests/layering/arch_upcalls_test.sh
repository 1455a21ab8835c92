#!/bin/sh
# arch/ calls up into kernel/ only through arch/upcalls.h: every symbol the
# arch layer's objects leave undefined and the kernel layer's objects
# define must be a function that header declares (comments aside). Each
# one that is not is printed with the object that takes it; exit 1 then.
# With --self-test the check must pass on the real header and fail, naming
# the symbol, on a copy without one of its declarations.
#   arch_upcalls_test.sh [--self-test] NM CXXFILT UPCALLS_H --arch OBJ... --kernel OBJ...
set -u
self_test=0
[ "$1" = --self-test ] && { self_test=1; shift; }
nm=$1 filt=$2 header=$3
shift 3
arch= kernel= side=
for a in "$@"; do
  case $a in
    --arch) side=arch ;;
    --kernel) side=kernel ;;
    *) if [ "$side" = arch ]; then arch="$arch $a"; else kernel="$kernel $a"; fi ;;
  esac
done
[ -n "$arch" ] && [ -n "$kernel" ] || { echo "usage: $0 [--self-test] NM CXXFILT UPCALLS_H --arch OBJ... --kernel OBJ..."; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export LC_ALL=C

# Global symbols the kernel layer defines; (symbol, object) pairs arch needs.
# shellcheck disable=SC2086
"$nm" --defined-only $kernel | awk 'NF == 3 && $2 ~ /^[A-Z]$/ {print $3}' | sort -u >"$scratch/kernel"
for o in $arch; do "$nm" --undefined-only "$o" | awk -v o="$o" '{print $NF, o}'; done | sort -u >"$scratch/arch"
join "$scratch/arch" "$scratch/kernel" >"$scratch/up"

# check HEADER: prints each upcall HEADER does not declare; exit 1 if any.
check() {
  sed 's|//.*||' "$1" >"$scratch/declared"
  bad=0
  while read -r sym obj; do
    pretty=$(echo "$sym" | "$filt")
    name=$(echo "$pretty" | sed 's/(.*//; s/.*:://')
    if ! grep -Eq "(^|[^A-Za-z0-9_])$name[[:space:]]*\(" "$scratch/declared"; then
      echo "$(basename "$obj"): arch calls up into kernel's $pretty, which arch/upcalls.h does not declare"
      bad=$((bad + 1))
    fi
  done <"$scratch/up"
  echo "arch_upcalls: $(wc -l <"$scratch/up") symbols from kernel/, $bad outside arch/upcalls.h"
  [ "$bad" -eq 0 ]
}

if [ "$self_test" -eq 0 ]; then
  check "$header"
  exit $?
fi

check "$header" >"$scratch/clean.out" || { echo "FAIL: the real header does not pass"; cat "$scratch/clean.out"; exit 1; }
victim=return_after_kick
grep -q "^void $victim(" "$header" || { echo "FAIL: $header declares no $victim to take away"; exit 1; }
grep -v "^void $victim(" "$header" >"$scratch/upcalls.h"
check "$scratch/upcalls.h" >"$scratch/out"
status=$?
cat "$scratch/out"
[ "$status" -eq 1 ] || { echo "FAIL: exit status $status, expected 1"; exit 1; }
grep -q "arch calls up into kernel's pvk::$victim(pvk::TrapFrame&), which arch/upcalls.h does not declare" "$scratch/out" ||
  { echo "FAIL: the upcall outside the header is not named"; exit 1; }
grep -q ", 1 outside arch/upcalls.h" "$scratch/out" || { echo "FAIL: expected exactly 1 finding"; exit 1; }
echo "PASS"
