#!/bin/sh
# /init of the nested Xen host's dom0 (built by mkdom0.sh). Brings up the Xen
# toolstack, runs the xl driver (/bin/pvk-xl, i.e. tools/xl/pvk-xl.sh) on
# /pvk/pvk.elf with the command line in /pvk/params (through xl, or through
# libvirtd's libxl driver when /pvk/via says libvirt), reports its status and
# powers dom0 off, which makes Xen halt the machine.
# Lines it prints start with "[pvk-dom0] "; the driver's own with "[pvk-xl] "
# and pvk's console with "[pvk] " (see tools/lib/src/xen_domu.cpp).
export PATH=/usr/lib/xen-4.17/bin:/sbin:/bin:/usr/sbin:/usr/bin
export HOME=/ TERM=dumb

say() { echo "[pvk-dom0] $*"; }
fail() {
  say "error: $*"
  poweroff -f
  sleep 10
}
step() {  # step DESCRIPTION COMMAND...: runs it, fails the boot if it fails
  what="$1"; shift
  "$@" >/tmp/step.log 2>&1 || { cat /tmp/step.log; fail "$what failed: $*"; }
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts   # xenconsoled makes the guest's tty there
mkdir -p /run/xen /run/xenstored
say "dom0 up: $(cat /proc/uptime | cut -d' ' -f1) s"

for m in $(cat /etc/pvk/modules); do
  step "loading $m" insmod "/lib/modules/$m"
done
step "mounting xenfs" mount -t xenfs xenfs /proc/xen
step "starting xenstored" xenstored --pid-file=/run/xenstored.pid
step "xen-init-dom0" xen-init-dom0
# --log=guest: the libvirt path reads the guest's console from this log.
step "starting xenconsoled" xenconsoled --pid-file=/run/xenconsoled.pid --log=guest --log-dir=/var/log/xen/console
via="$(cat /pvk/via 2>/dev/null)"
if [ "${via:-xl}" = libvirt ]; then
  mkdir -p /run/libvirt /dev/shm
  mount -t tmpfs tmpfs /dev/shm
  libvirtd --config /etc/libvirt/libvirtd.conf >/run/libvirtd.log 2>&1 &
  i=0
  while [ ! -S /run/libvirt/libvirt-sock ]; do
    i=$((i + 1))
    if [ "$i" -gt 600 ] || ! kill -0 $! 2>/dev/null; then
      cat /run/libvirtd.log
      fail "libvirtd did not open its socket"
    fi
    sleep 0.1
  done
fi
say "toolstack ready: $(cut -d' ' -f1 /proc/uptime) s"

[ -f /pvk/pvk.elf ] || fail "no /pvk/pvk.elf (the runner appends it as a second cpio)"
params="$(cat /pvk/params 2>/dev/null)"
timeout="$(cat /pvk/timeout 2>/dev/null)"
vcpus="$(cat /pvk/vcpus 2>/dev/null)"
pvk-xl --via "${via:-xl}" --vcpus "${vcpus:-1}" --timeout "${timeout:-240}" /pvk/pvk.elf "$params"
status=$?
# libvirtd's complaints go with dom0's console (shown when the run fails).
[ "$status" != 0 ] && [ -f /run/libvirtd.log ] && cat /run/libvirtd.log
say "pvk-xl exit $status"
poweroff -f
sleep 10
