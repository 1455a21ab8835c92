#include "pvk/bench/text_file.hpp"

#include <fstream>
#include <sstream>

namespace pvk::bench {

std::optional<std::string> read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace pvk::bench
