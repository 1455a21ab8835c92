#!/bin/sh
# The build enforces the layers too: a layer's library compiles with its own
# include root and those of the layers below (cmake/layers.cmake), so a
# header of a layer above is not found at all. Compiled with arch's include
# directories: its own arch/upcalls.h must compile, kernel/proc/process.h
# must not be found.
#   build_refuses_upward_include.sh CXX -I<dir>...
set -u
cxx=$1
shift
compile() {
  include=$1
  shift
  echo "#include \"$include\"" | "$cxx" -std=gnu++20 -fsyntax-only -x c++ "$@" - 2>&1
}
header=arch/upcalls.h
out=$(compile "$header" "$@") || { echo "FAIL: $header does not compile with arch's include directories:"; echo "$out"; exit 1; }
header=kernel/proc/process.h
if out=$(compile "$header" "$@"); then
  echo "FAIL: $header (layer kernel) compiles with arch's include directories"
  exit 1
fi
echo "$out" | grep -q "$header: No such file" || { echo "FAIL: expected \"$header: No such file\":"; echo "$out"; exit 1; }
echo "PASS: $header is not visible to arch"
