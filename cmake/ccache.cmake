# Compile through ccache when the machine has it (the bootstrap installs
# it). Paths are rewritten relative to the source tree and the working
# directory is left out of the hash, so a second tree at another place with
# the same layout (the backend test's scratch copy, a fresh clone) gets the
# objects of the first for every file it did not change.
option(PVK_CCACHE "compile through ccache when it is installed" ON)
find_program(PVK_CCACHE_PROGRAM ccache)
if(PVK_CCACHE AND PVK_CCACHE_PROGRAM)
  set(pvk_launcher env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=1 ${PVK_CCACHE_PROGRAM})
  set(CMAKE_C_COMPILER_LAUNCHER ${pvk_launcher})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${pvk_launcher})
  set(CMAKE_ASM_COMPILER_LAUNCHER ${pvk_launcher})
endif()
