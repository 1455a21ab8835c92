#include "pvk/bench_rootfs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pvk {

namespace fs = std::filesystem;

namespace {

std::string read_program(const fs::path& p, const char* what) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("bench: {} not found ({})", p.string(), what));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

CpioEntry entry(std::string name, unsigned mode, std::string data = {}) {
  CpioEntry e;
  e.name = std::move(name);
  e.mode = mode;
  e.data = std::move(data);
  return e;
}

}  // namespace

std::vector<CpioEntry> bench_program_files(const BenchProgramSources& from) {
  std::vector<CpioEntry> out;
  out.push_back(entry("bin", 040755));
  out.push_back(entry("bin/busybox", 0100755, read_program(from.busybox, "Debian package busybox-static")));
  out.push_back(entry("bin/sh", 0120777, "busybox"));
  out.push_back(entry("bin/bash", 0100755, read_program(from.bash, "Debian package bash-static")));
  out.push_back(entry("bin/kbworker", 0100755, read_program(from.user_dir / "kbworker", "build target kbworker")));
  const fs::path scripts = from.source_dir / "bench" / "rootfs" / "bin";
  std::vector<fs::path> names;
  if (fs::is_directory(scripts))
    for (const auto& e : fs::directory_iterator(scripts)) names.push_back(e.path());
  std::sort(names.begin(), names.end());
  for (const auto& p : names) out.push_back(entry("bin/" + p.filename().string(), 0100644, read_program(p, "bench/rootfs")));
  if (names.empty()) throw std::runtime_error(fmt::format("bench: no scripts in {}", scripts.string()));
  return out;
}

fs::path bench_rootfs_archive(const BenchProgramSources& from, const fs::path& cache_dir) {
  std::string archive;
  for (const auto& e : bench_program_files(from)) cpio_append(archive, e);
  cpio_finish(archive);
  return cpio_write_to_cache(archive, cache_dir);
}

}  // namespace pvk
