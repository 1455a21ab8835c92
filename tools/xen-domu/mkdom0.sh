#!/usr/bin/env bash
# mkdom0.sh CACHE_DIR [libvirt]: builds the nested Xen host's dom0 (once) into
# CACHE_DIR:
#   vmlinuz        Debian's Linux kernel (linux-image-amd64; CONFIG_XEN_DOM0=y)
#   dom0.cpio.gz   an initramfs: static busybox, the Xen 4.17 toolstack (xl,
#                  xenstored, xenconsoled, xen-init-dom0) with every shared
#                  library it loads, the Xen driver modules, tools/xen-domu/
#                  dom0-init.sh as /init and the xl driver tools/xl/pvk-xl.sh.
#   key            what the image was built from; a different key rebuilds it.
# With "libvirt" the image also has libvirtd with its libxl driver and virsh
# (and their libraries: about 30 MB more, so only that flavour has them), and
# tools/libvirt/pvk-xen.xml as /etc/pvk/pvk-xen.xml.
# The kernel package is fetched with `apt-get download` (it is never installed
# on this machine); busybox-static and xen-utils-4.17 come from the host
# (tools/pvk installs them). pvk.elf and its command line are not in here: the
# runner appends a small cpio with them for each run (Linux unpacks
# concatenated archives in order). Safe to run concurrently (flock).
# Recipe and the facts behind each step: docs/xen-host.md.
set -euo pipefail

cache="${1:?usage: mkdom0.sh CACHE_DIR [libvirt]}"
flavour="${2:-xl}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$(dirname "$here")"
xenbin=/usr/lib/xen-4.17/bin
xentools=(xl xenstored xenconsoled xenconsole xen-init-dom0)
xenmods=(xen-evtchn xen-privcmd xenfs xen-gntdev xen-gntalloc)
# debian_kernel_resolve, debian_kernel_deb: shared with tools/linux/mklinux.sh.
# shellcheck source=../linux/debian-kernel.sh
source "$tools/linux/debian-kernel.sh"

say() { printf 'mkdom0: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9

# The kernel: whatever linux-image-amd64 depends on in the apt lists.
debian_kernel_resolve || die "no kernel package"

for t in "${xentools[@]}"; do [[ -x "$xenbin/$t" ]] || die "$xenbin/$t missing (Debian package xen-utils-4.17)"; done
busybox="$(command -v busybox || true)"
[[ -n "$busybox" ]] && ! ldd "$busybox" >/dev/null 2>&1 || die "need a static busybox (Debian package busybox-static)"

key="$(
  printf '%s\n' "flavour=$flavour" "$kpkg=$kver" \
    "xen-utils=$(dpkg-query -W -f='${Version}' xen-utils-4.17 2>/dev/null)" \
    "busybox=$(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null)"
  cat "$here/mkdom0.sh" "$here/dom0-init.sh" "$tools/xl/pvk-xl.sh" "$tools/libvirt/pvk-xen.xml" \
    "$tools/linux/debian-kernel.sh"
  dpkg-query -W -f='${Version}\n' libvirt-daemon libvirt-daemon-driver-xen libvirt-clients 2>/dev/null || true
)"
key="$(printf '%s' "$key" | sha256sum | cut -d' ' -f1)"
if [[ -f "$cache/key" && "$(cat "$cache/key")" == "$key" && -s "$cache/vmlinuz" && -s "$cache/dom0.cpio.gz" ]]; then
  exit 0
fi
say "building the dom0 image ($kpkg $kver, Xen tools, busybox) into $cache"

work="$(mktemp -d "$cache/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# 1. Kernel and the Xen modules, from the package, kept beside the cache
# directory for later rebuilds and shared by the image flavours.
debian_kernel_deb "$(dirname "$cache")/debs" "$work/apt.err" || die "no kernel package"
mkdir "$work/pkg"
dpkg-deb --fsys-tarfile "$deb" |
  tar -x -C "$work/pkg" --wildcards './boot/vmlinuz-*' './lib/modules/*/kernel/drivers/xen/*'
vmlinuz="$(ls "$work/pkg"/boot/vmlinuz-* | head -n1)"
moddir="$(ls -d "$work/pkg"/lib/modules/* | head -n1)"

root="$work/root"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc/xen,etc/pvk,proc,sys,dev,tmp,pvk,lib/modules} \
  "$root"/run/{xen,xenstored,libvirt} "$root"/var/{lock,lib/xen/dump,lib/xenstored,log/xen/console}
ln -s ../run "$root/var/run"  # as on the host: one run directory under both names

# Modules in dependency order (each one's .modinfo section names its
# dependencies; the package has no modules.dep, depmod makes that).
declare -A loaded=()
order=()
module_file() { find "$moddir/kernel/drivers/xen" -name "$1.ko*" | head -n1; }
add_module() {  # add_module NAME
  local name="$1" file dep
  [[ -n "${loaded[$name]:-}" ]] && return
  loaded[$name]=1
  file="$(module_file "$name")"
  [[ -n "$file" ]] || die "module $name not found under drivers/xen in $kpkg"
  for dep in $(uncompressed "$file" | tr '\0' '\n' | sed -n 's/^depends=//p' | tr ',' ' '); do
    add_module "$dep"
  done
  order+=("$file")
}
uncompressed() {
  case "$1" in
    *.ko.xz) xz -dc "$1" ;;
    *.ko.zst) zstd -qdc "$1" ;;
    *.ko.gz) gzip -dc "$1" ;;
    *) cat "$1" ;;
  esac
}
for m in "${xenmods[@]}"; do add_module "$m"; done
: >"$root/etc/pvk/modules"
for file in "${order[@]}"; do
  name="$(basename "${file%%.ko*}").ko"
  uncompressed "$file" >"$root/lib/modules/$name"
  echo "$name" >>"$root/etc/pvk/modules"
done

# 2. busybox and its applets (not an applet named busybox: /init would ELOOP).
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list-full); do
  [[ "$(basename "$applet")" == busybox ]] && continue
  [[ -e "$root/$applet" ]] || ln -s /bin/busybox "$root/$applet"
done

# 3. The toolstack in its built-in path, with every library it needs:
# ldd's list, plus libgcc_s.so.1 which glibc loads at run time for
# pthread_cancel (without it xl aborts).
mkdir -p "$root$xenbin"
libs=()
for t in "${xentools[@]}"; do
  cp "$xenbin/$t" "$root$xenbin/"
  while read -r lib; do libs+=("$lib"); done < <(ldd "$xenbin/$t" | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}')
done
libs+=("$(gcc -print-file-name=libgcc_s.so.1 2>/dev/null || true)")
for lib in $(printf '%s\n' "${libs[@]}" | sort -u); do
  [[ -f "$lib" ]] || continue
  real="$(readlink -f "$lib")"
  mkdir -p "$root$(dirname "$lib")"
  cp "$real" "$root$lib"
done
# Both loader paths (the ELF interpreter names /lib64/...).
if [[ ! -e "$root/lib64/ld-linux-x86-64.so.2" ]]; then
  mkdir -p "$root/lib64"
  cp "$(readlink -f /lib64/ld-linux-x86-64.so.2)" "$root/lib64/ld-linux-x86-64.so.2"
fi
cp /etc/xen/xl.conf "$root/etc/xen/xl.conf" 2>/dev/null || : >"$root/etc/xen/xl.conf"

# 3b. libvirt flavour: libvirtd with only its libxl driver, and virsh, for
# the libvirt path of the driver (pvk-xl --via libvirt).
libvirt_driver=/usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_libxl.so
if [[ "$flavour" == libvirt ]]; then
  [[ -x /usr/sbin/libvirtd && -x /usr/bin/virsh && -f "$libvirt_driver" ]] ||
    die "libvirt flavour: need libvirtd, virsh and the libxl driver (Debian libvirt-daemon, libvirt-clients, libvirt-daemon-driver-xen)"
  libs=()
  for f in /usr/sbin/libvirtd /usr/bin/virsh "$libvirt_driver"; do
    mkdir -p "$root$(dirname "$f")"
    cp "$f" "$root$f"
    while read -r lib; do libs+=("$lib"); done < <(ldd "$f" | awk '/=> \// {print $3}')
  done
  for lib in $(printf '%s\n' "${libs[@]}" | sort -u); do
    [[ -e "$root$lib" ]] && continue
    mkdir -p "$root$(dirname "$lib")"
    cp "$(readlink -f "$lib")" "$root$lib"
  done
  if [[ -d /usr/share/libvirt/cpu_map ]]; then
    mkdir -p "$root/usr/share/libvirt"
    cp -r /usr/share/libvirt/cpu_map "$root/usr/share/libvirt/"
  fi
  mkdir -p "$root/etc/libvirt" "$root/var/lib/libvirt/libxl" "$root/var/log/libvirt/libxl"
  printf '%s\n' 'unix_sock_rw_perms = "0700"' 'auth_unix_rw = "none"' 'auth_unix_ro = "none"' \
    'log_outputs = "3:stderr"' >"$root/etc/libvirt/libvirtd.conf"
  : >"$root/etc/libvirt/libxl.conf"
  cp "$tools/libvirt/pvk-xen.xml" "$root/etc/pvk/pvk-xen.xml"
fi
printf '%s\n' 'root:x:0:0:root:/:/bin/sh' >"$root/etc/passwd"
printf '%s\n' 'root:x:0:' >"$root/etc/group"

# 4. /init and the driver.
cp "$here/dom0-init.sh" "$root/init"
cp "$tools/xl/pvk-xl.sh" "$root/bin/pvk-xl"
chmod 755 "$root/init" "$root/bin/pvk-xl"
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true
mknod -m 666 "$root/dev/null" c 1 3 2>/dev/null || true

(cd "$root" && find . -print0 | cpio --null -o -H newc --owner 0:0 --quiet) | gzip -1 >"$work/dom0.cpio.gz"
cp "$vmlinuz" "$work/vmlinuz"
mv "$work/vmlinuz" "$cache/vmlinuz"
mv "$work/dom0.cpio.gz" "$cache/dom0.cpio.gz"
echo "$key" >"$cache/key"
say "done: $(du -h "$cache/dom0.cpio.gz" | cut -f1) initramfs"
