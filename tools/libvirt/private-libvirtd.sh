#!/bin/sh
# private-libvirtd.sh DIR: runs a libvirtd of our own, in the foreground, that
# shares nothing with a system libvirtd: its own mount namespace (the caller
# runs this under `unshare -m`), fresh state directories, its socket at
# DIR/libvirt-sock and the QEMU driver settings this kind of sandbox needs
# (docs/design.md): QEMU runs as root, no namespaces, no cgroups, no security
# driver, and QEMU's output goes to plain files (no virtlogd). Ends with
# SIGTERM; the namespace and its mounts go with it.
# Connect with: qemu:///system?socket=DIR/libvirt-sock
set -eu
dir="${1:?usage: private-libvirtd.sh DIR}"
mkdir -p "$dir"

cat >"$dir/libvirtd.conf" <<CONF
unix_sock_dir = "$dir"
unix_sock_rw_perms = "0700"
auth_unix_rw = "none"
auth_unix_ro = "none"
log_outputs = "3:file:$dir/libvirtd.log"
CONF
cat >"$dir/qemu.conf" <<CONF
user = "root"
group = "root"
dynamic_ownership = 0
namespaces = [ ]
cgroup_controllers = [ ]
security_driver = "none"
stdio_handler = "file"
CONF

# Private, empty state and run directories; our qemu.conf over the system's.
mount --make-rprivate / 2>/dev/null || true
for d in /run/libvirt /var/lib/libvirt /var/cache/libvirt; do
  mkdir -p "$d"
  mount -t tmpfs tmpfs "$d"
done
# The logs (libvirtd's view of QEMU: its command line, its stderr) stay
# readable from outside, in DIR/log.
mkdir -p "$dir/log" /var/log/libvirt
mount --bind "$dir/log" /var/log/libvirt
mkdir -p /etc/libvirt
[ -e /etc/libvirt/qemu.conf ] || : >/etc/libvirt/qemu.conf
mount --bind "$dir/qemu.conf" /etc/libvirt/qemu.conf

exec libvirtd --config "$dir/libvirtd.conf" --pid-file "$dir/libvirtd.pid"
