# The kernel's layers as libraries (docs/architecture.md, "Layers"): each
# layer folder declares its layer with pvk_layer(), which makes
#
#   pvk_layer_<name>          an OBJECT library of the freestanding kernel;
#   pvk_layer_<name>_builtin  the same sources for pvk-builtin.elf
#                             (PVK_BUILTIN_NATIVE), for the layers whose code
#                             reads that switch (pvops and up); the layers
#                             below share pvk_layer_<name>'s objects;
#   pvk_layer_<name>_host     a static library of the same sources for the
#                             host tests, less the ones only the kernel builds.
# (pvk_kernel and pvk_kernel_builtin are the images, guest/CMakeLists.txt.)
#
# Sources are every .cpp and .S under the layer's folders (GLOB_RECURSE,
# CONFIGURE_DEPENDS: a file added in a subfolder is picked up without editing
# a CMake file). Includes are spelled from the repository root
# ("mm/address_space.h"), so each layer gets an include root of its own in
# the build tree: ${CMAKE_BINARY_DIR}/layers/<name>/, where links stand for
# its folders and nothing else. A library sees its own root and those of the
# layers it links (BELOW, transitively), never a root of a layer above: an
# upward include does not compile (tools/layering checks the same rule in
# the sources, with the file and line).
#
#   pvk_layer(<name> DIRS <dir>... [EXCLUDE <subdir>...] [BELOW <layer>...]
#             [KERNEL_ONLY <file>...] [BUILTIN])
#
# DIRS are folders from the repository root; EXCLUDE names folders directly
# inside one of them that belong to another layer (base/frames in base);
# KERNEL_ONLY are files (from the repository root) left out of the host
# library; BUILTIN makes the pvk-builtin.elf variant.

set(PVK_LAYER_INCLUDE_ROOT ${CMAKE_BINARY_DIR}/layers)

# The layer's include root: a link per folder of DIRS, or, for a folder with
# EXCLUDEd subfolders, a real folder with a link per entry but those.
function(pvk_layer_include_root name root dirs excludes)
  file(REMOVE_RECURSE ${root})
  foreach(dir IN LISTS dirs)
    set(src ${PROJECT_SOURCE_DIR}/${dir})
    set(dst ${root}/${dir})
    get_filename_component(parent ${dst} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    set(carve)
    foreach(ex IN LISTS excludes)
      if(ex MATCHES "^${dir}/[^/]+$")
        list(APPEND carve ${ex})
      endif()
    endforeach()
    if(NOT carve)
      file(CREATE_LINK ${src} ${dst} SYMBOLIC)
      continue()
    endif()
    file(MAKE_DIRECTORY ${dst})
    file(GLOB entries CONFIGURE_DEPENDS LIST_DIRECTORIES true RELATIVE ${src} ${src}/*)
    foreach(entry IN LISTS entries)
      if(NOT "${dir}/${entry}" IN_LIST carve)
        file(CREATE_LINK ${src}/${entry} ${dst}/${entry} SYMBOLIC)
      endif()
    endforeach()
  endforeach()
endfunction()

function(pvk_layer name)
  cmake_parse_arguments(L "BUILTIN" "" "DIRS;EXCLUDE;BELOW;KERNEL_ONLY" ${ARGN})
  set(sources)
  foreach(dir IN LISTS L_DIRS)
    file(GLOB_RECURSE found CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cpp ${PROJECT_SOURCE_DIR}/${dir}/*.S)
    list(APPEND sources ${found})
  endforeach()
  set(kept)
  foreach(file IN LISTS sources)
    set(keep TRUE)
    foreach(ex IN LISTS L_EXCLUDE)
      string(FIND "${file}" "${PROJECT_SOURCE_DIR}/${ex}/" at)
      if(at EQUAL 0)
        set(keep FALSE)
      endif()
    endforeach()
    if(keep)
      list(APPEND kept ${file})
    endif()
  endforeach()
  set(sources ${kept})
  list(SORT sources)

  set(root ${PVK_LAYER_INCLUDE_ROOT}/${name})
  pvk_layer_include_root(${name} ${root} "${L_DIRS}" "${L_EXCLUDE}")

  # The freestanding kernel's objects.
  pvk_kernel_object_library(pvk_layer_${name} ${sources})
  target_include_directories(pvk_layer_${name} PUBLIC ${root})
  set(below_kernel)
  set(below_builtin)
  set(below_host)
  foreach(b IN LISTS L_BELOW)
    list(APPEND below_kernel pvk_layer_${b})
    if(TARGET pvk_layer_${b}_builtin)
      list(APPEND below_builtin pvk_layer_${b}_builtin)
    else()
      list(APPEND below_builtin pvk_layer_${b})
    endif()
    list(APPEND below_host pvk_layer_${b}_host)
  endforeach()
  target_link_libraries(pvk_layer_${name} PUBLIC ${below_kernel})
  set_property(GLOBAL APPEND PROPERTY PVK_KERNEL_LAYERS pvk_layer_${name})

  if(L_BUILTIN)
    pvk_kernel_object_library(pvk_layer_${name}_builtin ${sources})
    target_compile_definitions(pvk_layer_${name}_builtin PRIVATE PVK_BUILTIN_NATIVE=1)
    target_include_directories(pvk_layer_${name}_builtin PUBLIC ${root})
    target_link_libraries(pvk_layer_${name}_builtin PUBLIC ${below_builtin})
    set_property(GLOBAL APPEND PROPERTY PVK_BUILTIN_LAYERS pvk_layer_${name}_builtin)
  else()
    set_property(GLOBAL APPEND PROPERTY PVK_BUILTIN_LAYERS pvk_layer_${name})
  endif()

  # The host tests' library: the same sources but the kernel-only ones,
  # compiled as host code (PVK_KERNEL undefined: kstring.h maps to the C
  # library).
  set(host_sources ${sources})
  list(FILTER host_sources EXCLUDE REGEX "\\.S$")
  foreach(file IN LISTS L_KERNEL_ONLY)
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${file})
      message(FATAL_ERROR "pvk_layer(${name}): KERNEL_ONLY ${file} does not exist")
    endif()
    list(REMOVE_ITEM host_sources ${PROJECT_SOURCE_DIR}/${file})
  endforeach()
  if(host_sources)
    add_library(pvk_layer_${name}_host STATIC ${host_sources})
    set(scope PUBLIC)
  else()
    add_library(pvk_layer_${name}_host INTERFACE)
    set(scope INTERFACE)
  endif()
  target_include_directories(pvk_layer_${name}_host ${scope} ${root})
  # The Xen public headers want it once anything pulls them in.
  target_compile_definitions(pvk_layer_${name}_host ${scope} __XEN_INTERFACE_VERSION__=__XEN_LATEST_INTERFACE_VERSION__)
  target_link_libraries(pvk_layer_${name}_host ${scope} ${below_host} pvk_host_flags)
endfunction()

# Every kernel layer's objects, for the image (guest/CMakeLists.txt).
function(pvk_kernel_layer_objects out_var variant)
  if(variant STREQUAL "builtin")
    get_property(layers GLOBAL PROPERTY PVK_BUILTIN_LAYERS)
  else()
    get_property(layers GLOBAL PROPERTY PVK_KERNEL_LAYERS)
  endif()
  list(REVERSE layers)  # top of the stack first, as the image was always linked
  set(objects)
  foreach(l IN LISTS layers)
    list(APPEND objects $<TARGET_OBJECTS:${l}>)
  endforeach()
  set(${out_var} ${objects} PARENT_SCOPE)
endfunction()
