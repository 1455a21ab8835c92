#!/usr/bin/env bash
# mklinux.sh CACHE_DIR: Debian's own Linux kernel for Linux side by side
# (`pvk bench --linux`, platforms linux-native and linux-xen), once, into
# CACHE_DIR:
#   vmlinuz   the kernel of linux-image-amd64 (6.1 on Debian 12; it boots in a
#             plain QEMU machine and as Xen's PV dom0: CONFIG_XEN_DOM0=y)
#   version   its release, e.g. 6.1.0-57-amd64
#   key       what it was built from; a different key fetches it again
# The package itself is kept in CACHE_DIR/../debs, shared with the nested Xen
# host's dom0 image (tools/xen-domu/mkdom0.sh), which boots the same kernel.
# No modules: the benchmark runs from a tiny initramfs the runner writes for
# each boot (tools/lib/src/linux.cpp), and needs no driver that is a module.
# Safe to run concurrently (flock).
set -euo pipefail

cache="${1:?usage: mklinux.sh CACHE_DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=debian-kernel.sh
source "$here/debian-kernel.sh"

say() { printf 'mklinux: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9

debian_kernel_resolve || die "no kernel package"
key="$(printf '%s\n' "$kpkg=$kver" "$(cat "$here/mklinux.sh" "$here/debian-kernel.sh")" | sha256sum | cut -d' ' -f1)"
if [[ -f "$cache/key" && "$(cat "$cache/key")" == "$key" && -s "$cache/vmlinuz" && -s "$cache/version" ]]; then
  exit 0
fi
say "fetching $kpkg $kver into $cache"

work="$(mktemp -d "$cache/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
debian_kernel_deb "$(dirname "$cache")/debs" "$work/apt.err" || die "no kernel package"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" --wildcards './boot/vmlinuz-*'
vmlinuz="$(ls "$work"/boot/vmlinuz-* | head -n1)"
[[ -s "$vmlinuz" ]] || die "no /boot/vmlinuz-* in $deb"
basename "$vmlinuz" | sed 's/^vmlinuz-//' >"$work/version"
mv "$vmlinuz" "$cache/vmlinuz"
mv "$work/version" "$cache/version"
echo "$key" >"$cache/key"
say "done: $(cat "$cache/version")"
