# Counts the instructions of one way into the kernel and back, per function:
# a gdb Python script for a pvk boot started paused with a gdb stub
# (`pvk run --gdb`, native). It waits for the Nth entry of one vector from
# user mode at the entry stubs' common path, single-steps until the CPU is
# back in user mode, and prints the instructions each kernel function ran.
# Used to find where a path's instructions go (virtual time counts one per
# instruction), e.g. between two commits' kernels.
#
#   gdb -q -batch -x tools/trace/entry_trace.py \
#       -ex 'python trace_entry("build/guest/pvk.elf", vector=14, skip=300)'
# or, for the next system call after the 300th mprotect:
#       -ex 'python trace_entry("build/guest/pvk.elf", vector=None, entry="native_syscall_entry",
#                               skip=300, after="pvk::AddressSpace::mprotect")'
import bisect
import collections
import os
import sys

import gdb

# gdb runs this file as a script: its neighbours are imported from its folder.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdb_stub import attach, run_to  # noqa: E402


def trace_entry(elf, vector=14, skip=0, entry="trap_common", limit=200000, after=None, port=1234):
    """after: a kernel function the path runs (e.g. the fault handler): gdb
    lets it run `skip` times (an ignore count, no round trip per hit), then
    the next entry is traced; without it every entry stops in gdb.
    port: the gdb stub's (QEMU's -gdb tcp::PORT; `pvk run --gdb` is 1234)."""
    addrs, names = attach(elf, port)
    if after:
        run_to(after, skip)
        skip = 0
    gdb.execute("break %s" % entry)
    hits = 0
    while True:
        gdb.execute("continue", to_string=True)
        if vector is None:  # a system call entry: every stop is one
            break
        rsp = int(gdb.parse_and_eval("$rsp"))
        inferior = gdb.selected_inferior()
        vec = int.from_bytes(inferior.read_memory(rsp, 8).tobytes(), "little")
        cs = int.from_bytes(inferior.read_memory(rsp + 24, 8).tobytes(), "little")
        if vec != vector or (cs & 3) != 3:
            continue
        hits += 1
        if hits > skip:
            break
    gdb.execute("delete")
    per_function = collections.Counter()
    order = []
    steps = 0
    while steps < limit:
        pc = int(gdb.parse_and_eval("$pc"))
        if int(gdb.parse_and_eval("$cs")) & 3 == 3:
            break
        i = bisect.bisect_right(addrs, pc) - 1
        name = names[i] if i >= 0 else hex(pc)
        if not order or order[-1] != name:
            order.append(name)
        per_function[name] += 1
        gdb.execute("stepi", to_string=True)
        steps += 1
    print("instructions %d (vector %s)" % (steps, vector))
    for name, n in per_function.most_common():
        print("%6d  %s" % (n, name))
    print("path: " + " > ".join(order[:80]))
    gdb.execute("kill")
