// Boot helpers for the domU (nested Xen host) and libvirt boot tests: the
// same run_kernel as `pvk run`, with the source tree's tools/ and the build's
// caches, and the frame-leak check every boot gets (boot_support.hpp).
#pragma once

#include "boot_support.hpp"

namespace pvk::boot_test {

// `pvk run --platform xen-domu --append PARAMS`.
RunResult boot_domu(const std::string& params);

// `pvk run --via libvirt --platform native --append PARAMS`; an empty uri
// starts (and stops) a private libvirtd for the run.
RunResult boot_libvirt(const std::string& params, const std::string& uri = "");

}  // namespace pvk::boot_test
