# The text symbols of an ELF image, sorted by address, for the trace scripts
# beside this file (they name each traced instruction's function with a
# bisect over the addresses).
import subprocess


def symbols(elf):
    out = subprocess.run(["nm", "-C", "--defined-only", "-n", elf], capture_output=True, text=True).stdout
    addrs, names = [], []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1].lower() in "tw":
            addrs.append(int(parts[0], 16))
            names.append(parts[2])
    return addrs, names
