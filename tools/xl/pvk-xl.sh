#!/bin/sh
# pvk-xl: boots pvk as a Xen PV domU with `xl` and reports how it went. Runs
# on a Xen host's dom0, as root: a real one (`tools/pvk run --platform xl`
# runs this file) or the nested one (`--platform xen-domu` puts this file in
# its dom0 image as /bin/pvk-xl). POSIX sh plus busybox-level tools, so the
# one source serves both.
#
#   pvk-xl [--name NAME] [--memory MIB] [--timeout S] [--xl XL] KERNEL [CMDLINE]
#   (--xl, or $PVK_XL: the xl to run; default xl from PATH)
#
# Output, one line each:
#   [pvk] TEXT          a line of the domU's console (records included)
#   [pvk-xl] TEXT       the driver's own messages; the last one is
#   [pvk-xl] result shutdown=REASON status=STATUS
#     REASON: poweroff crash reboot suspend watchdog soft_reset (what xl
#             reported), destroyed (ended from outside), timeout, none
#     STATUS: pass | fail (the status of pvk's last done record) | none
# Exit status: 0 pvk passed (its last record is done/pass and the domain
# powered off), 1 it failed, 2 the domain could not be run.
#
# How: `xl create -F -c`: -c attaches the console before the domain is
# unpaused (nothing is lost) and streams it to stdout; -F keeps xl in the
# foreground until the domain is gone and makes it log the shutdown reason
# code ("Domain N has shut down, reason code R") to stderr.
set -u

name="pvk-$$"
memory=256
timeout=240
xl="${PVK_XL:-xl}"  # PVK_XL: another xl (the host tests use a stand-in)
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name="$2"; shift 2 ;;
    --memory) memory="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --xl) xl="$2"; shift 2 ;;
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
if ! command -v "$xl" >/dev/null 2>&1; then
  say "error: '$xl' not found: this must run in a Xen dom0 with the toolstack (xen-utils)"
  result none none 2
fi

dir="$(mktemp -d /tmp/pvk-xl.XXXXXX)" || { say "error: mktemp failed"; result none none 2; }
cleanup() { rm -rf "$dir"; }
trap cleanup EXIT
trap 'say "interrupted"; "$xl" destroy "$name" >/dev/null 2>&1; cleanup; exit 2' INT TERM

# xl's config syntax: strings in double quotes with backslash escapes.
quote() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
{
  echo "name = $(quote "$name")"
  echo 'type = "pv"'
  echo "kernel = $(quote "$kernel")"
  echo "extra = $(quote "$cmdline")"
  echo "memory = $memory"
  echo "maxmem = $memory"
  echo 'vcpus = 1'
  echo 'on_poweroff = "destroy"'
  echo 'on_reboot = "destroy"'
  echo 'on_crash = "destroy"'
} >"$dir/pvk.cfg"

say "xl create $name: kernel=$kernel memory=${memory}M extra=\"$cmdline\""

# A watchdog destroys the domain when the time is up. It sleeps a second at
# a time, so killing it leaves nothing behind for long, and it holds none of
# our output open (a reader waits for every writer to close).
(
  i=0
  while [ "$i" -lt "$timeout" ]; do sleep 1; i=$((i + 1)); done
  : >"$dir/timed-out"
  "$xl" destroy "$name"
) </dev/null >/dev/null 2>&1 &
watchdog=$!

cr="$(printf '\r')"
"$xl" create -F -c "$dir/pvk.cfg" 2>"$dir/xl.log" </dev/null | {
  # Builtins only: every line goes out as soon as it arrives.
  while IFS= read -r line || [ -n "$line" ]; do
    line="${line%"$cr"}"
    printf '[pvk] %s\n' "$line"
    case "$line" in "@pvk "*) printf '%s\n' "$line" >"$dir/last-record" ;; esac
  done
}
kill "$watchdog" 2>/dev/null
wait "$watchdog" 2>/dev/null

code="$(sed -n 's/.*has shut down, reason code \([0-9][0-9]*\).*/\1/p' "$dir/xl.log" | tail -n1)"
case "$code" in
  0) reason=poweroff ;;
  1) reason=reboot ;;
  2) reason=suspend ;;
  3) reason=crash ;;
  4) reason=watchdog ;;
  5) reason=soft_reset ;;
  *) if [ -f "$dir/timed-out" ]; then reason=timeout
     elif grep -q 'destroyed' "$dir/xl.log"; then reason=destroyed
     else reason=none; fi ;;
esac

status=none
if [ -f "$dir/last-record" ] && grep -q '"event" *: *"done"' "$dir/last-record"; then
  if grep -q '"status" *: *"pass"' "$dir/last-record"; then status=pass; else status=fail; fi
fi

# xl's own words, when they may explain something.
if [ "$reason" != poweroff ] || [ "$status" != pass ]; then
  while IFS= read -r line; do say "xl: $line"; done <"$dir/xl.log"
fi
if [ "$reason" = none ] && ! grep -q 'has shut down' "$dir/xl.log"; then
  result none "$status" 2
fi
if [ "$reason" = poweroff ] && [ "$status" = pass ]; then result "$reason" "$status" 0; fi
result "$reason" "$status" 1
