# Flags and helpers for the freestanding kernel image.
#
# The kernel is built by the host g++ with freestanding flags; sanitizers and
# host-only options never reach it (they live on pvk_host_flags).

set(PVK_KERNEL_CXX_FLAGS
  -std=gnu++20 -ffreestanding -fno-exceptions -fno-rtti -fno-threadsafe-statics
  -fno-use-cxa-atexit -fno-stack-protector -fno-pic -fno-pie
  -mno-red-zone -mcmodel=kernel -mgeneral-regs-only
  -mno-mmx -mno-sse -mno-sse2 -mno-avx
  -fno-omit-frame-pointer -fno-strict-aliasing -O2 -g
  -Wall -Wextra -Wno-unused-parameter)

set(PVK_KERNEL_ASM_FLAGS -fno-pic -fno-pie -g -D__ASSEMBLY__)

# pvk_kernel_object_library(TARGET ...): an OBJECT library of kernel code
# (its include roots come from its layer: cmake/layers.cmake).
function(pvk_kernel_object_library name)
  add_library(${name} OBJECT ${ARGN})
  set_target_properties(${name} PROPERTIES CXX_STANDARD 20 POSITION_INDEPENDENT_CODE OFF)
  target_compile_options(${name} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${PVK_KERNEL_CXX_FLAGS}>
    $<$<COMPILE_LANGUAGE:ASM>:${PVK_KERNEL_ASM_FLAGS}>)
  target_compile_definitions(${name} PRIVATE PVK_KERNEL=1 PVK_FREESTANDING=1)
  # Xen public headers (Debian libxen-dev) are the only source of the Xen ABI.
  target_compile_definitions(${name} PRIVATE __XEN_INTERFACE_VERSION__=__XEN_LATEST_INTERFACE_VERSION__)
endfunction()
