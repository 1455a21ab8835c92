#!/bin/sh
# Stand-in for qemu-system-x86_64 in the host tests: ignores its arguments,
# prints the console scripted in $PVK_FAKE_CONSOLE and then either exits with
# $PVK_FAKE_EXIT (like QEMU after isa-debug-exit, a triple fault, ...) or,
# with PVK_FAKE_HANG=1, never exits (like QEMU after Xen halts the CPU).
cat "${PVK_FAKE_CONSOLE:?}"
if [ "${PVK_FAKE_HANG:-0}" = 1 ]; then
  exec sleep 1000
fi
exit "${PVK_FAKE_EXIT:-0}"
