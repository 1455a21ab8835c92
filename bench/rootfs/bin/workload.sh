# The sh_script benchmark's workload (bench/real_programs.cpp), run by
# busybox sh: what a build script does between compiler runs. Pipelines,
# command substitution, a subshell, a function, a loop; every command an
# applet (fork + exec of /proc/self/exe) or a builtin. Output goes to
# /dev/null: the benchmark times the work, not the console.
{
  n=0
  while [ $n -lt 4 ]; do n=$((n + 1)); echo "line $n"; done | sort -r | head -n 2
  words=$(echo "a b c d" | wc -w)
  echo "words $words"
  ( cd / && ls bin | wc -l )
  count() { echo "$1" | tr a-z A-Z; }
  count "done $(echo x | sed s/x/y/)"
} > /dev/null
