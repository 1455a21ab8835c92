// A whole text file as a string (proc files, results the harness wrote).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace pvk::bench {

// nullopt if the file cannot be opened.
std::optional<std::string> read_text_file(const std::filesystem::path& path);

}  // namespace pvk::bench
