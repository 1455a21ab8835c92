// The files the real-program benchmarks exec (bench/real_programs.cpp), at
// the same paths on pvk (its root filesystem) and on Linux (the bench
// initramfs): Debian's busybox-static as /bin/busybox and /bin/sh,
// bash-static as /bin/bash, the bench's kbworker as /bin/kbworker, and the
// scripts of bench/rootfs/.
#pragma once

#include "pvk/cpio.hpp"

#include <filesystem>
#include <vector>

namespace pvk {

// Where the host's programs come from (Debian's packages busybox-static
// and bash-static, installed by the bootstrap).
struct BenchProgramSources {
  std::filesystem::path busybox = "/bin/busybox";
  std::filesystem::path bash = "/bin/bash-static";
  std::filesystem::path user_dir;    // the build's user programs (kbworker)
  std::filesystem::path source_dir;  // the tree (bench/rootfs/)
};

// The entries, directories first; throws std::runtime_error naming a
// missing file and the package it comes from.
std::vector<CpioEntry> bench_program_files(const BenchProgramSources& from);

// pvk's root filesystem for a bench boot given neither --rootfs nor
// --initrd: the entries above as an archive in `cache_dir` (by content).
std::filesystem::path bench_rootfs_archive(const BenchProgramSources& from, const std::filesystem::path& cache_dir);

}  // namespace pvk
