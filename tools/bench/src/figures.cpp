#include "pvk/bench/figures.hpp"

#include "pvk/bench/compare.hpp"
#include "pvk/bench/report.hpp"
#include "pvk/bench/seeds.hpp"
#include "pvk/bench/text_file.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <vector>

namespace pvk::bench {
namespace {

std::string run_string(const OJson& run, const char* key) {
  const auto it = run.find(key);
  return it != run.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A value of the run record as text ("" when absent or null).
std::string run_text(const OJson& run, const std::string& key) {
  const auto it = run.find(key);
  if (it == run.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string duration(double seconds) {
  const long s = std::lround(seconds);
  return s < 60 ? fmt::format("{} s", s) : fmt::format("{} min {:02} s", s / 60, s % 60);
}

// Every heading one level down: the summary's "## Targets" under README's "## Figures".
std::string demote_headings(const std::string& md) {
  std::string out;
  size_t start = 0;
  while (start < md.size()) {
    size_t end = md.find('\n', start);
    end = end == std::string::npos ? md.size() : end + 1;
    if (md[start] == '#') out += '#';
    out.append(md, start, end - start);
    start = end;
  }
  return out;
}

// The lines of `text` that are exactly `marker` (trailing blanks and \r aside):
// their start offsets and ends (after the newline, if any).
std::vector<std::pair<size_t, size_t>> marker_lines(const std::string& text, std::string_view marker) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    const size_t end = nl == std::string::npos ? text.size() : nl + 1;
    std::string_view line(text.data() + start, (nl == std::string::npos ? text.size() : nl) - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line == marker) out.emplace_back(start, end);
    start = end;
  }
  return out;
}

}  // namespace

std::string figures_provenance(const Results& results, const std::string& results_name) {
  const OJson& run = results.run;
  const std::string started = run_string(run, "started"), command = run_string(run, "command");
  if (!run.is_object() || started.empty() || command.empty())
    throw std::runtime_error(fmt::format("{} records no run (started, command): not the results.json of a `pvk bench` run",
                                         results_name));
  std::string line = fmt::format("**From one run**: started {}", started);
  if (!run_string(run, "finished").empty()) line += fmt::format(", finished {}", run_string(run, "finished"));
  if (run.contains("wall_s") && run["wall_s"].is_number()) line += fmt::format(" ({})", duration(run["wall_s"].get<double>()));
  line += fmt::format("; command `{}`", command);
  const std::string commit = run_string(run, "commit");
  line += fmt::format("; commit {}", commit.empty() ? "unknown" : "`" + commit + "`");

  // The machine: whatever the run record has about it.
  std::vector<std::string> machine;
  if (const std::string cpus = run_text(run, "host_cpus"); !cpus.empty()) machine.push_back(cpus + " host CPUs");
  if (const std::string qemu = run_string(run, "qemu"); !qemu.empty()) machine.push_back(qemu);
  if (const std::string smp = run_text(run, "smp"); !smp.empty()) machine.push_back("guest -smp " + smp);
  if (const std::string jobs = run_text(run, "jobs"); !jobs.empty()) machine.push_back(jobs + " boots at a time");
  if (const std::string reps = run_text(run, "reps"); !reps.empty()) machine.push_back(reps + " boots per configuration");
  if (const std::string s = run_string(run, "schedule"); !s.empty()) machine.push_back(s + " schedule");
  if (run.value("warmup", false)) machine.push_back("warm-up reps discarded");
  if (run.value("aa", false)) machine.push_back("A/A twins");
  // Keys this line does not know yet still say what they recorded.
  static const std::set<std::string> known{"started", "finished", "wall_s", "command", "commit", "kernel", "qemu",
                                           "icount", "smp", "jobs", "reps", "schedule", "warmup", "aa", "host_cpus",
                                           "cancelled"};
  for (const auto& [key, value] : run.items())
    if (!known.count(key) && !value.is_null()) machine.push_back(fmt::format("{} {}", key, run_text(run, key)));
  if (!machine.empty()) line += fmt::format("; machine: {}", fmt::join(machine, ", "));

  const std::string icount = run_string(run, "icount");
  line += fmt::format("; mode: **{}**", icount.empty() ? "wall time" : "virtual time (-icount " + icount + ")");

  size_t failed = 0;
  for (const auto& b : results.boots) failed += !b.pass;
  line += fmt::format(". {} configurations, {} boots, {}", results.configs.size(), results.boots.size(),
                      failed ? fmt::format("**{} failed**", failed) : std::string("all passed"));
  if (run.value("cancelled", false)) line += ", **cancelled**";
  line += ".";
  return line;
}

std::string figures_block(const Results& results, const std::string& results_name) {
  std::string md = fmt::format(
      "_Written by `tools/pvk figures {}`: do not edit by hand, run it again on a newer run._\n\n", results_name);
  md += figures_provenance(results, results_name) + "\n";
  const std::vector<Ratio> ratios = compute_ratios(results, builtin_ratios());
  md += demote_headings(targets_section(ratios));
  md += demote_headings(seeds_section(results, ratios));
  if (md.back() != '\n') md += '\n';
  return md;
}

std::string replace_figures_block(const std::string& readme, const std::string& block) {
  const auto begins = marker_lines(readme, kFiguresBegin);
  const auto ends = marker_lines(readme, kFiguresEnd);
  if (begins.empty() || ends.empty())
    throw std::runtime_error(fmt::format("no figures block: {} and {} must each stand on a line of their own",
                                         kFiguresBegin, kFiguresEnd));
  if (begins.size() > 1 || ends.size() > 1)
    throw std::runtime_error(fmt::format("{} or {} appears more than once: which block to rewrite is unclear",
                                         kFiguresBegin, kFiguresEnd));
  if (ends[0].first < begins[0].second)
    throw std::runtime_error(fmt::format("{} comes before {}", kFiguresEnd, kFiguresBegin));
  std::string out = readme.substr(0, begins[0].second);
  if (out.back() != '\n') out += '\n';  // the begin marker ended the file without one: impossible with an end after it
  out += block;
  if (!block.empty() && block.back() != '\n') out += '\n';
  out += readme.substr(ends[0].first);
  return out;
}

void rewrite_figures(const std::filesystem::path& figures_results, const std::filesystem::path& readme,
                   const std::filesystem::path& source_dir) {
  namespace fs = std::filesystem;
  Results results = load_results(figures_results);
  if (!results.records.empty()) aggregate(results);  // as --from does: the summary's own rows
  // The run by its own name (not `latest`, which moves), from the source tree's root when inside it.
  std::string name = figures_results.string();
  std::error_code ec;
  const fs::path real = fs::canonical(figures_results, ec);
  if (!ec) {
    const fs::path relative = real.lexically_relative(fs::weakly_canonical(source_dir, ec));
    name = !ec && !relative.empty() && *relative.begin() != ".." ? relative.string() : real.string();
  }
  const std::string block = figures_block(results, name);
  if (readme.empty()) {
    fmt::print("{}", block);
    return;
  }
  const auto text = read_text_file(readme);
  if (!text) throw std::runtime_error(fmt::format("cannot read {}", readme.string()));
  std::string updated;
  try {
    updated = replace_figures_block(*text, block);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", readme.string(), e.what()));
  }
  // Written beside it and renamed over it: an interrupted run leaves the old README.
  const fs::path temp = fs::path(readme.string() + ".figures-tmp");
  {
    std::ofstream out(temp, std::ios::binary);
    out << updated;
    if (!out.flush()) throw std::runtime_error(fmt::format("cannot write {}", temp.string()));
  }
  fs::rename(temp, readme);
  fmt::print(stderr, "pvk figures: rewrote the figures block of {} from {}\n", readme.string(), name);
}


}  // namespace pvk::bench
