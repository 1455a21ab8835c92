#!/bin/sh
# A backend is one file and one row: in a scratch copy of the tree, add a
# throwaway backend ("direct2", a copy of direct under another name) with
# exactly those two edits — a new pvops/backends/direct2.cpp and one more row
# in pvops/backends/backends.inc — then build only the kernel image and
# pvk-cli, and expect that
#   - pvk-cli backends lists it,
#   - it boots under Xen with mmu=direct2 selftest=mm (the boot record says
#     "mmu":"direct2"),
#   - pvk bench --mmu direct2 --dry-run plans boots with it.
# Any other edit a new backend needed (a switch, a list, a declaration)
# would fail the build, the boot or the plan here.
#   new_backend_test.sh ROOT BUILD CMAKE NINJA
# ROOT: the source tree; BUILD: its build directory (for the Xen image cache).
set -u
root=$1 build=$2 cmake=$3 ninja=$4
jobs=${PVK_TEST_JOBS:-2}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The tree as it is (committed or not), without build directories.
src="$scratch/src"
mkdir "$src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$src" 2>/dev/null)
else
  (cd "$root" && tar --exclude='./build*' --exclude=./.git -cf - .) | tar -C "$src" -xf -
fi
[ -f "$src/pvops/backends/backends.inc" ] && [ -f "$src/pvops/backends/direct.cpp" ] ||
  fail "no pvops/backends/backends.inc or direct.cpp in the copy of $root"
cp -R "$src" "$scratch/orig"

# Edit 1: the new backend's file, direct's with its constructor renamed.
sed 's/\bdirect_ops\b/direct2_ops/g' "$src/pvops/backends/direct.cpp" >"$src/pvops/backends/direct2.cpp"
grep -q direct2_ops "$src/pvops/backends/direct2.cpp" || fail "direct.cpp has no constructor direct_ops"
# Edit 2: its row, direct's under the new names, right after direct's.
awk '{ print }
     /^PVK_BACKEND\(Direct,/ { row = $0
       sub(/PVK_BACKEND\(Direct, /, "PVK_BACKEND(Direct2,", row); sub(/"direct", /, "\"direct2\",", row)
       sub(/direct_ops, /, "direct2_ops,", row); print row; added = 1 }
     END { if (!added) exit 1 }' "$src/pvops/backends/backends.inc" >"$scratch/backends.inc" ||
  fail "backends.inc has no row PVK_BACKEND(Direct, ...)"
mv "$scratch/backends.inc" "$src/pvops/backends/backends.inc"

# Exactly those two edits: one file more, one line more.
changes=$(diff -r "$scratch/orig" "$src")
[ "$(printf '%s\n' "$changes" | grep -c '^Only in')" -eq 1 ] &&
  [ "$(printf '%s\n' "$changes" | grep -c '^> ')" -eq 1 ] &&
  [ "$(printf '%s\n' "$changes" | grep -c '^< ')" -eq 0 ] || { printf '%s\n' "$changes"; fail "not exactly one new file and one new row"; }
rm -rf "$scratch/orig"
grep '"direct2"' "$src/pvops/backends/backends.inc"

# Build the kernel image and the CLI only.
# Inside the copy, as build/ is inside the tree: the same relative paths, so
# ccache (cmake/ccache.cmake) serves every file the two edits left alone.
out="$src/build"
"$cmake" -S "$src" -B "$out" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPVK_BUILTIN_IMAGE=OFF >"$scratch/configure.log" 2>&1 || { tail -40 "$scratch/configure.log"; fail "configure"; }
"$ninja" -C "$out" -j "$jobs" pvk_kernel pvk-cli >"$scratch/build.log" 2>&1 || { tail -60 "$scratch/build.log"; fail "build"; }
cli="$out/tools/pvk-cli"
# The Xen image, already unpacked for the real build.
mkdir -p "$out/cache"
[ -d "$build/cache/xen-4.17" ] && ln -s "$build/cache/xen-4.17" "$out/cache/xen-4.17"

"$cli" --build-dir "$out" --source-dir "$src" backends
"$cli" --build-dir "$out" --source-dir "$src" backends --names | grep -qx direct2 || fail "pvk backends does not list direct2"

"$cli" --build-dir "$out" --source-dir "$src" bench --mmu direct2 --dry-run >"$scratch/plan.txt" 2>&1 ||
  { cat "$scratch/plan.txt"; fail "pvk bench --mmu direct2 --dry-run refused it"; }
cat "$scratch/plan.txt"
grep -q 'mmu=direct2 bench=' "$scratch/plan.txt" || fail "the plan boots nothing with mmu=direct2"
grep -v '^pvk bench:' "$scratch/plan.txt" | grep 'bench=' | grep -qv 'mmu=direct2' &&
  fail "the plan boots other backends than direct2"

"$cli" --build-dir "$out" --source-dir "$src" run --platform xen --timeout 900 \
  --append "mmu=direct2 selftest=mm" >"$scratch/boot.log" 2>&1
status=$?
grep -F '"event":"boot"' "$scratch/boot.log"
[ "$status" -eq 0 ] || { tail -60 "$scratch/boot.log"; fail "mmu=direct2 selftest=mm did not pass under Xen (status $status)"; }
grep -F '"event":"boot"' "$scratch/boot.log" | grep -qF '"mmu":"direct2"' || fail "the boot record does not say mmu direct2"
echo "PASS"
