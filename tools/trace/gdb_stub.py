# What the trace scripts beside this file do first under gdb: attach to a
# paused pvk boot's gdb stub (`pvk run --gdb`) with the kernel's symbols,
# and run to the Nth time a location is reached.
import gdb

from elf_symbols import symbols


def attach(elf, port, load_symbols=True):
    """Connects to QEMU's stub on `port`; returns the image's sorted text
    symbols (elf_symbols.symbols)."""
    gdb.execute("set pagination off")
    if load_symbols:
        gdb.execute("file " + elf)
    gdb.execute("target remote :%d" % port)
    return symbols(elf)


def run_to(location, skip=0, hardware=False):
    """Lets `location` be reached `skip` times (an ignore count: no round
    trip per hit), stops at the next, and removes the breakpoint. hardware:
    by address whatever page tables are loaded when gdb inserts it (a
    program's code)."""
    gdb.execute(("hbreak %s" if hardware else "break %s") % location)
    if skip:
        gdb.execute("ignore 1 %d" % skip)
    gdb.execute("continue", to_string=True)
    gdb.execute("delete")
