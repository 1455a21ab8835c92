// What a run records about when and where it ran: the time, the first line a
// tool prints about itself (QEMU's version), the source's commit.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace pvk::bench {

// The time now in UTC, formatted by strftime's `pattern`.
std::string utc_time(const char* pattern);
// The first line a command prints, "" if it fails or takes over 10 s.
std::string first_line(const std::vector<std::string>& argv);
// The source tree's commit (12 digits), "-dirty" with tracked changes; "" outside git.
std::string commit_of(const std::filesystem::path& source);

}  // namespace pvk::bench
