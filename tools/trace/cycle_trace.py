# Counts the instructions of one whole cycle of a benchmark, per function:
# a gdb Python script for a one-CPU pvk boot started paused with a gdb stub
# (`pvk run --gdb`, native). It lets a kernel function that runs once per
# cycle (e.g. pvk::do_fork for forkwait) run `skip` times, then single-steps
# every instruction, user and kernel, until that function is entered again,
# and prints the instructions each function ran (user code as "<user>";
# kernel-half code outside pvk's image, Xen's under --platform xen, as
# "<outside pvk.elf>").
# entry_trace.py follows one entry until the return to user mode; a cycle
# such as fork + the child's exit + wait4 crosses several entries and a
# context switch, so it is counted here from one start to the next.
#
#   gdb -q -batch -x tools/trace/cycle_trace.py \
#       -ex 'python trace_cycle("build/guest/pvk.elf", "pvk::do_fork", skip=50)'
import bisect
import collections
import os
import sys

import gdb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdb_stub import attach, run_to  # noqa: E402


def trace_cycle(elf, start, skip=0, limit=2000000, port=1234, out=None):
    addrs, names = attach(elf, port)
    run_to(start, skip)
    start_pc = int(gdb.parse_and_eval("$pc"))
    image_end = addrs[-1] + 0x10000  # past the last text symbol's code
    per_function = collections.Counter()
    steps = 0
    kernel_steps = 0
    while steps < limit:
        gdb.execute("stepi", to_string=True)
        steps += 1
        pc = int(gdb.parse_and_eval("$pc"))
        if pc == start_pc:
            break
        if pc < 0xFFFF800000000000:
            per_function["<user>"] += 1
            continue
        kernel_steps += 1
        if pc < addrs[0] or pc > image_end:
            per_function["<outside pvk.elf>"] += 1
            continue
        i = bisect.bisect_right(addrs, pc) - 1
        per_function[names[i] if i >= 0 else hex(pc)] += 1
    lines = ["instructions %d (kernel %d) from %s to its next entry" % (steps, kernel_steps, start)]
    for name, n in per_function.most_common():
        lines.append("%7d  %s" % (n, name))
    text = "\n".join(lines) + "\n"
    if out:
        with open(out, "w") as f:
            f.write(text)
    print(text)
    gdb.execute("kill")
