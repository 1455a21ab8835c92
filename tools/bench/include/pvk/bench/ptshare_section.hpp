// The summary's "Table sharing" section (summary_markdown's part about ptshare=).
#pragma once

#include "pvk/bench/results.hpp"

#include <string>
#include <vector>

namespace pvk::bench {

std::string ptshare_section(const Results& results);

}  // namespace pvk::bench
