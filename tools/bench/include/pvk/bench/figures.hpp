// `pvk figures RESULTS.json [--file FILE]`: the figures of
// docs/results/figures.md, regenerated from one run. The block between the
// two marker comments of that file (or FILE) is replaced by what
// one run's results.json says: its provenance first (date, the exact
// command, commit, machine, wall or virtual time), then the run's Targets
// table and Seeds section as summary.md renders them (report.hpp,
// seeds.hpp). Everything outside the block is left as it is.
#pragma once

#include "pvk/bench/ratio.hpp"
#include "pvk/bench/results.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace pvk::bench {

inline constexpr std::string_view kFiguresBegin = "<!-- figures:begin -->";
inline constexpr std::string_view kFiguresEnd = "<!-- figures:end -->";
// The file `pvk figures` rewrites unless told another, from the source tree's root.
inline constexpr std::string_view kFiguresFile = "docs/results/figures.md";

// One line: "From one run: started <date> ..., `<command>`, pvk <commit>;
// machine ...; <mode>". Mode is "wall time" or "virtual time (-icount SPEC)".
std::string figures_provenance(const Results& results, const std::string& results_name);

// The block's content (between the markers, without them): the provenance,
// then the Targets table and the Seeds section of the run's builtin ratios,
// their headings one level down (they sit under "## Figures").
std::string figures_block(const Results& results, const std::string& results_name);

// `readme` with the text between the markers replaced by `block`. Throws
// std::runtime_error (one line) when the markers are missing, repeated or
// out of order.
std::string replace_figures_block(const std::string& readme, const std::string& block);

// `pvk figures`: the block from the run at `results` (a results.json, or
// its directory), printed when `readme` is empty, else written over the
// block of `readme` (beside it first, then renamed: an interrupted run
// leaves the old file). Throws std::runtime_error naming the file.
void rewrite_figures(const std::filesystem::path& results, const std::filesystem::path& readme,
                     const std::filesystem::path& source_dir);

}  // namespace pvk::bench
