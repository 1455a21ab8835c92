// The host's load, read around every boot: TCG timings stretch
// with what else runs on the host's CPUs, so results.json keeps, per boot,
// the 1-minute load average before and after and the share of CPU time the
// host spent busy while the boot ran.
#pragma once

#include <optional>
#include <string_view>

namespace pvk::bench {

// Cumulative CPU time of every CPU (the "cpu" line of /proc/stat), in ticks.
struct CpuTicks {
  double busy = 0, total = 0;
};

// Parses /proc/loadavg's text: its first field. nullopt when malformed.
std::optional<double> parse_loadavg(std::string_view text);
// Parses /proc/stat's text: the aggregate "cpu" line (idle and iowait are
// not busy). nullopt when there is none.
std::optional<CpuTicks> parse_proc_stat(std::string_view text);
// Busy share between two readings, 0..1; nullopt without a tick in between.
std::optional<double> busy_share(const CpuTicks& before, const CpuTicks& after);

// The live values (nullopt where /proc is not there).
std::optional<double> read_loadavg();
std::optional<CpuTicks> read_cpu_ticks();

}  // namespace pvk::bench
