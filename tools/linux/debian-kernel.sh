# debian-kernel.sh: sourced (bash) by the scripts that boot Debian's own Linux
# kernel (tools/xen-domu/mkdom0.sh for the nested Xen host's dom0,
# tools/linux/mklinux.sh for Linux side by side in `pvk bench --linux`).
# The package is fetched with `apt-get download` into a cache directory and
# never installed on this machine.
#
#   debian_kernel_resolve           sets kpkg (linux-image-6.1.0-N-amd64, what
#                                   linux-image-amd64 depends on in the apt
#                                   lists) and kver (its candidate version)
#   debian_kernel_deb DEBS_DIR ERR  sets deb: the package file in DEBS_DIR,
#                                   downloaded unless that version is there
#                                   (other versions are removed); apt's
#                                   complaints go to the file ERR. Holds
#                                   DEBS_DIR/lock (fd 8) meanwhile, so caches
#                                   can share one DEBS_DIR
#
# Both print a message and return 1 on failure.

debian_kernel_resolve() {
  kpkg="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
  if [[ -z "$kpkg" ]]; then
    # An empty apt list (fresh image, lists cleaned): refresh once if we may.
    ((EUID == 0)) && apt-get update -qq >/dev/null 2>&1 || true
    kpkg="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
  fi
  if [[ -z "$kpkg" ]]; then
    printf '%s\n' "cannot resolve linux-image-amd64 (apt-get update?)" >&2
    return 1
  fi
  kver="$(apt-cache policy "$kpkg" | awk '/Candidate:/ {print $2}')"
}

debian_kernel_deb() {
  local debs="$1" err="$2"
  mkdir -p "$debs"
  exec 8>"$debs/lock"
  flock 8
  deb="$(ls "$debs/${kpkg}_"*.deb 2>/dev/null | head -n1 || true)"
  if [[ -z "$deb" || "$deb" != *"_${kver//:/%3a}_"* ]]; then
    rm -f "$debs/${kpkg}_"*.deb
    if ! (cd "$debs" && apt-get download "$kpkg=$kver" >/dev/null 2>"$err"); then
      cat "$err" >&2
      printf '%s\n' "apt-get download $kpkg failed" >&2
      flock -u 8
      return 1
    fi
    deb="$(ls "$debs/${kpkg}_"*.deb | head -n1)"
  fi
  flock -u 8
}
