#include "pvk/bench/host_load.hpp"
#include "pvk/bench/text_file.hpp"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace pvk::bench {

std::optional<double> parse_loadavg(std::string_view text) {
  std::istringstream in{std::string(text)};
  double load = 0;
  if (!(in >> load) || load < 0) return std::nullopt;
  return load;
}

std::optional<CpuTicks> parse_proc_stat(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("cpu ")) continue;
    std::istringstream fields(line.substr(4));
    // user nice system idle iowait irq softirq steal (guest time is already
    // inside user and nice).
    std::vector<double> v;
    double x = 0;
    while (v.size() < 8 && fields >> x) v.push_back(x);
    if (v.size() < 4) return std::nullopt;
    CpuTicks t;
    for (size_t i = 0; i < v.size(); ++i) {
      t.total += v[i];
      if (i != 3 && i != 4) t.busy += v[i];
    }
    return t;
  }
  return std::nullopt;
}

std::optional<double> busy_share(const CpuTicks& before, const CpuTicks& after) {
  const double total = after.total - before.total;
  if (!(total > 0)) return std::nullopt;
  return (after.busy - before.busy) / total;
}

std::optional<double> read_loadavg() {
  const auto text = read_text_file("/proc/loadavg");
  return text ? parse_loadavg(*text) : std::nullopt;
}

std::optional<CpuTicks> read_cpu_ticks() {
  const auto text = read_text_file("/proc/stat");
  return text ? parse_proc_stat(*text) : std::nullopt;
}

}  // namespace pvk::bench
