#!/bin/sh
# Stand-in for xl in the host tests of the xl driver (tools/xl/pvk-xl.sh):
# `create -F -c CFG` prints the console scripted in $PVK_FAKE_XL_CONSOLE (on
# stdout, as xl's console client does) and, like xl -F, its own messages on
# stderr, ending with the shutdown reason code $PVK_FAKE_XL_REASON (unset: the
# domain is never created). PVK_FAKE_XL_CONFIG, if set, receives the config.
# With PVK_FAKE_XL_HANG=1 the domain never ends by itself: create waits for
# `destroy NAME`, which always succeeds.
marker="${PVK_FAKE_XL_CONSOLE:-/tmp/pvk-fake-xl}.destroyed"
case "$1" in
  create)
    cfg="$4"
    echo "Parsing config from $cfg" >&2
    [ -n "${PVK_FAKE_XL_CONFIG:-}" ] && cp "$cfg" "$PVK_FAKE_XL_CONFIG"
    if [ -z "${PVK_FAKE_XL_REASON:-}" ]; then
      echo "libxl: error: cannot create the domain (scripted)" >&2
      exit 3
    fi
    echo "Waiting for domain pvk (domid 1) to die [pid $$]" >&2
    cat "${PVK_FAKE_XL_CONSOLE:?}"
    if [ "${PVK_FAKE_XL_HANG:-0}" = 1 ]; then
      while [ ! -f "$marker" ]; do sleep 0.1; done
      echo "Domain 1 has been destroyed." >&2
      exit 0
    fi
    echo "Domain 1 has shut down, reason code $PVK_FAKE_XL_REASON 0x$PVK_FAKE_XL_REASON" >&2
    echo "Done. Exiting now" >&2
    exit 0 ;;
  destroy) : >"$marker"; exit 0 ;;
  *) echo "fake xl: unexpected $*" >&2; exit 1 ;;
esac
