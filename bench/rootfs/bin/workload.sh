# The sh_script benchmark's workload (bench/real_programs.cpp), run by
# busybox sh: what a build script does between compiler runs. Pipelines,
# command substitution, a subshell, a function, a loop; every command an
# /bin/busybox by its path or a builtin, so both kernels do the same work
# (a busybox run by name would exec /proc/self/exe, which a Linux initramfs
# without /proc lacks). Output goes to /dev/null: the benchmark times the
# work, not the console. PVK_BENCH_ROOT is empty but on the build host
# (the staged copy of the root filesystem).
bb=${PVK_BENCH_ROOT}/bin/busybox
{
  n=0
  while [ $n -lt 4 ]; do n=$((n + 1)); echo "line $n"; done | $bb sort -r | $bb head -n 2
  words=$(echo "a b c d" | $bb wc -w)
  echo "words $words"
  ( cd / && $bb ls bin | $bb wc -l )
  count() { echo "$1" | $bb tr a-z A-Z; }
  count "done $(echo x | $bb sed s/x/y/)"
} > /dev/null
