# Splits one system call under Xen PV between Xen and pvk: a gdb Python
# script for a Xen boot started paused with a gdb stub (`pvk run --platform
# xen --gdb`). pvk runs in ring 3 under Xen, so entry_trace.py's test for
# user mode cannot tell the kernel from its programs; here the instruction
# address does: below the canonical hole is the program, pvk's image is at
# the top of the address space, and Xen's own text lies between. It stops
# at a program's `syscall` instruction (its address from `objdump -d` of the
# benchmark driver, or from a native entry_trace.py run: the return address
# less 2), lets it run `skip` times, single-steps until the program's next
# instruction, and prints the count on each side and pvk's per function.
#
#   gdb -q -batch -x tools/trace/xen_split.py \
#       -ex "python split_syscall('build/guest/pvk.elf', 0x40497b, skip=3000)"
import bisect
import collections
import os
import sys

import gdb

# gdb runs this file as a script: its neighbours are imported from its folder.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdb_stub import attach, run_to  # noqa: E402

USER_TOP = 0x800000000000
PVK_BASE = 0xFFFFFFFF80000000


def split_syscall(elf, syscall_addr, skip=0, limit=50000, port=1234):
    addrs, names = attach(elf, port, load_symbols=False)
    # The `syscall` is the program's: a hardware breakpoint.
    run_to("*0x%x" % syscall_addr, skip, hardware=True)
    sides = collections.Counter()
    per_function = collections.Counter()
    steps = 0
    while steps < limit:
        pc = int(gdb.parse_and_eval("$pc")) & 0xFFFFFFFFFFFFFFFF
        if steps and pc < USER_TOP:
            break
        if pc < USER_TOP:
            sides["program"] += 1
        elif pc >= PVK_BASE:
            sides["pvk"] += 1
            i = bisect.bisect_right(addrs, pc) - 1
            per_function[names[i] if i >= 0 else hex(pc)] += 1
        else:
            sides["xen"] += 1
        gdb.execute("stepi", to_string=True)
        steps += 1
    print("instructions %d: xen %d, pvk %d, program %d (the syscall)" %
          (steps, sides["xen"], sides["pvk"], sides["program"]))
    for name, n in per_function.most_common():
        print("%6d  %s" % (n, name))
