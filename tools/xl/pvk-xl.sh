#!/bin/sh
# pvk-xl: boots pvk as a Xen PV domU with `xl` (or libvirt's libxl driver)
# and reports how it went. Runs on a Xen host's dom0, as root: a real one
# (`tools/pvk run --platform xl` runs this file) or the nested one
# (`--platform xen-domu` puts this file in its dom0 image as /bin/pvk-xl).
# POSIX sh plus busybox-level tools, so the one source serves both.
#
#   pvk-xl [--name NAME] [--memory MIB] [--vcpus N] [--timeout S] [--xl XL]
#          [--ramdisk CPIO] [--via xl|libvirt] [--xml TEMPLATE] KERNEL [CMDLINE]
#   (--ramdisk: the root filesystem archive, xl's ramdisk=; not with libvirt)
#   (--xl, or $PVK_XL: the xl to run; default xl from PATH)
#
# Output, one line each:
#   [pvk] TEXT          a line of the domU's console (records included)
#   [pvk-xl] TEXT       the driver's own messages; the last one is
#   [pvk-xl] result shutdown=REASON status=STATUS
#     REASON: poweroff crash reboot suspend watchdog soft_reset (what xl or
#             libvirt reported), destroyed (ended from outside), timeout, none
#     STATUS: pass | fail (the status of pvk's last done record) | none
# Exit status: 0 pvk passed (its last record is done/pass and the domain
# powered off), 1 it failed, 2 the domain could not be run.
#
# How, with xl (the default): `xl create -F -c`: -c attaches the console
# before the domain is unpaused (nothing is lost) and streams it to stdout;
# -F keeps xl in the foreground until the domain is gone and makes it log the
# shutdown reason code ("Domain N has shut down, reason code R") to stderr.
#
# With --via libvirt: the domain XML template (default
# /etc/pvk/pvk-xen.xml, i.e. tools/libvirt/pvk-xen.xml) is filled in, defined
# and started with virsh on $PVK_LIBVIRT_URI (default xen:///system); the
# console is read from xenconsoled's log of the guest
# (/var/log/xen/console/guest-NAME.log: xenconsoled must run with
# --log=guest), and the end from `virsh domstate --reason`.
set -u

name="pvk-$$"
memory=256
vcpus=1
timeout=240
xl="${PVK_XL:-xl}"
via=xl
xml=/etc/pvk/pvk-xen.xml
ramdisk=
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name="$2"; shift 2 ;;
    --memory) memory="$2"; shift 2 ;;
    --vcpus) vcpus="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --xl) xl="$2"; shift 2 ;;
    --via) via="$2"; shift 2 ;;
    --xml) xml="$2"; shift 2 ;;
    --ramdisk) ramdisk="$2"; shift 2 ;;
    --) shift; break ;;
    -*) echo "[pvk-xl] unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
kernel="${1:-}"
cmdline="${2:-}"

say() { echo "[pvk-xl] $*"; }
result() {  # result REASON STATUS EXIT
  say "result shutdown=$1 status=$2"
  exit "$3"
}

if [ -z "$kernel" ] || [ ! -f "$kernel" ]; then
  say "error: kernel image '${kernel}' not found"
  result none none 2
fi
case "$kernel" in /*) ;; *) kernel="$(pwd)/$kernel" ;; esac
if [ -n "$ramdisk" ]; then
  if [ ! -f "$ramdisk" ] || [ "$via" != xl ]; then
    say "error: ramdisk '${ramdisk}' not found, or given with --via $via (only xl passes one)"
    result none none 2
  fi
  case "$ramdisk" in /*) ;; *) ramdisk="$(pwd)/$ramdisk" ;; esac
fi
case "$via" in
  xl) tool="$xl" ;;
  libvirt) tool=virsh; virsh="virsh -q -c ${PVK_LIBVIRT_URI:-xen:///system}" ;;
  *) say "error: --via must be xl or libvirt"; result none none 2 ;;
esac
if ! command -v "$tool" >/dev/null 2>&1; then
  say "error: '$tool' not found: this must run in a Xen dom0 with the toolstack (xen-utils; libvirt-clients)"
  result none none 2
fi

dir="$(mktemp -d /tmp/pvk-xl.XXXXXX)" || { say "error: mktemp failed"; result none none 2; }
cleanup() { rm -rf "$dir"; }
destroy() {
  if [ "$via" = xl ]; then "$xl" destroy "$name"; else $virsh destroy "$name"; fi
}
trap cleanup EXIT
trap 'say "interrupted"; destroy >/dev/null 2>&1; cleanup; exit 2' INT TERM

# A watchdog destroys the domain when the time is up. It sleeps a second at
# a time, so killing it leaves nothing behind for long, and it holds none of
# our output open (a reader waits for every writer to close).
start_watchdog() {
  (
    i=0
    while [ "$i" -lt "$timeout" ]; do sleep 1; i=$((i + 1)); done
    : >"$dir/timed-out"
    destroy
  ) </dev/null >/dev/null 2>&1 &
  watchdog=$!
}
stop_watchdog() {
  kill "$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
}

# Each console line goes out tagged as soon as it is read (builtins only);
# the last record is kept to judge the run, and the lines shown are counted
# (in a file: emit_console runs in a pipeline's subshell).
cr="$(printf '\r')"
emit_console() {
  lines=$(cat "$dir/shown-lines" 2>/dev/null || echo 0)
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line%"$cr"}"
    printf '[pvk] %s\n' "$line"
    lines=$((lines + 1))
    printf '%s\n' "$lines" >"$dir/shown-lines"
    case "$line" in "@pvk "*) printf '%s\n' "$line" >"$dir/last-record" ;; esac
  done
}

run_xl() {
  # xl's config syntax: strings in double quotes with backslash escapes.
  quote() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
  {
    echo "name = $(quote "$name")"
    echo 'type = "pv"'
    echo "kernel = $(quote "$kernel")"
    echo "extra = $(quote "$cmdline")"
    [ -z "$ramdisk" ] || echo "ramdisk = $(quote "$ramdisk")"
    echo "memory = $memory"
    echo "maxmem = $memory"
    echo "vcpus = $vcpus"
    echo 'on_poweroff = "destroy"'
    echo 'on_reboot = "destroy"'
    echo 'on_crash = "destroy"'
  } >"$dir/pvk.cfg"
  say "xl create $name: kernel=$kernel memory=${memory}M extra=\"$cmdline\""
  log="/var/log/xen/console/guest-$name.log"
  rm -f "$log"
  start_watchdog
  "$xl" create -F -c "$dir/pvk.cfg" 2>"$dir/tool.log" </dev/null | emit_console
  stop_watchdog
  # xl's console client reads the guest's pty, and when the domain is torn
  # down while the client lags (a loaded host) the pty's unread output is
  # lost. xenconsoled's log of the guest (--log=guest) has every line the
  # guest put in its ring: read from it what the stream did not show.
  if [ -f "$log" ] && ! grep -qs '"event" *: *"done"' "$dir/last-record"; then
    shown=$(cat "$dir/shown-lines" 2>/dev/null || echo 0)
    sed -n "$((shown + 1)),\$p" "$log" | emit_console
  fi

  code="$(sed -n 's/.*has shut down, reason code \([0-9][0-9]*\).*/\1/p' "$dir/tool.log" | tail -n1)"
  case "$code" in
    0) reason=poweroff ;;
    1) reason=reboot ;;
    2) reason=suspend ;;
    3) reason=crash ;;
    4) reason=watchdog ;;
    5) reason=soft_reset ;;
    *) if [ -f "$dir/timed-out" ]; then reason=timeout
       elif grep -q 'destroyed' "$dir/tool.log"; then reason=destroyed
       elif grep -q 'has shut down' "$dir/tool.log"; then reason=other
       else reason=none; fi ;;
  esac
}

run_libvirt() {
  [ -f "$xml" ] || { say "error: domain template $xml not found"; result none none 2; }
  # XML-escape, then escape for a sed replacement (| is the delimiter).
  fill() { printf '%s' "$1" | sed "s/&/\\&amp;/g; s/</\\&lt;/g; s/>/\\&gt;/g; s/\"/\\&quot;/g; s/'/\\&apos;/g" |
           sed 's/[\\|&]/\\&/g'; }
  sed -e "s|@NAME@|$(fill "$name")|g" -e "s|@KERNEL@|$(fill "$kernel")|g" \
      -e "s|@CMDLINE@|$(fill "$cmdline")|g" -e "s|@MEMORY_MIB@|$memory|g" "$xml" >"$dir/pvk.xml"
  log="/var/log/xen/console/guest-$name.log"
  rm -f "$log"
  say "virsh define+start $name: kernel=$kernel memory=${memory}M cmdline=\"$cmdline\""
  if ! $virsh define "$dir/pvk.xml" >"$dir/tool.log" 2>&1 || ! $virsh start "$name" >>"$dir/tool.log" 2>&1; then
    $virsh undefine "$name" >/dev/null 2>&1
    reason=none
    return
  fi
  start_watchdog
  # Follow the console log until the domain is shut off, then read the rest.
  shown=0
  follow() {
    [ -f "$log" ] || return 0
    total=$(wc -l <"$log")
    if [ "$total" -gt "$shown" ]; then
      sed -n "$((shown + 1)),${total}p" "$log" | emit_console
      shown=$total
    fi
  }
  while :; do
    follow
    state="$($virsh domstate "$name" --reason 2>>"$dir/tool.log")"
    case "$state" in "shut off"*|"") break ;; esac
    sleep 0.2
  done
  stop_watchdog
  sleep 0.2
  follow
  [ -f "$log" ] && [ -n "$(tail -c 1 "$log")" ] && tail -n 1 "$log" | emit_console  # a last line without "\n"
  echo "domstate: $state" >>"$dir/tool.log"
  case "$state" in
    *"(shutdown)"*) reason=poweroff ;;
    *"(crashed)"*) reason=crash ;;
    *"(destroyed)"*) if [ -f "$dir/timed-out" ]; then reason=timeout; else reason=destroyed; fi ;;
    *) reason=other ;;
  esac
  $virsh undefine "$name" >>"$dir/tool.log" 2>&1
}

if [ "$via" = xl ]; then run_xl; else run_libvirt; fi

status=none
if [ -f "$dir/last-record" ] && grep -q '"event" *: *"done"' "$dir/last-record"; then
  if grep -q '"status" *: *"pass"' "$dir/last-record"; then status=pass; else status=fail; fi
fi

# The tool's own words, when they may explain something.
if [ "$reason" != poweroff ] || [ "$status" != pass ]; then
  while IFS= read -r line; do say "$via: $line"; done <"$dir/tool.log"
fi
if [ "$reason" = none ]; then result none "$status" 2; fi
if [ "$reason" = poweroff ] && [ "$status" = pass ]; then result "$reason" "$status" 0; fi
result "$reason" "$status" 1
