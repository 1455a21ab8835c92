// What every boot test shares: booting the real pvk.elf on a platform
// through pvk_hostlib (exactly as `pvk run` does), reading its console and
// records, and the checks that apply to every boot (no frame leak).
#pragma once

#include "pvk/platform.hpp"
#include "pvk/record.hpp"
#include "pvk/run.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pvk::boot_test {

using nlohmann::json;

// Boots pvk.elf once with this kernel command line and the platform's default
// runner timeout. Every boot is also checked for frame leaks (see
// no_frame_leak), so no test can forget it.
// Which kernel image: pvk.elf, or pvk-builtin.elf (the compiled-in native
// baseline: no pvops table; boots natively only).
enum class Image { pvops, builtin };
RunResult boot(Platform platform, const std::string& params, Image image = Image::pvops);
// The same with a root filesystem archive (a newc cpio file) as the initrd.
RunResult boot_with_initrd(Platform platform, const std::string& params, const std::filesystem::path& initrd);

std::string lower(std::string_view text);
bool contains(std::string_view line, std::string_view word);

// Human-text lines only: the contract puts error messages and fault reports
// in text, not records.
std::vector<std::string> text_lines(const RunResult& r);
bool any_text_line(const RunResult& r, const std::function<bool(std::string_view)>& pred);

// Attached to failed assertions: the verdict, the end of the console and the
// Xen lines that indicate trouble.
std::string transcript(const RunResult& r);
// What a command run on the build host printed (stdout and whatever it
// sends to 2>&1), for tests that compare pvk's console with the host's.
std::string host_command_output(const std::string& command);
// What user programs printed on pvk's console: every line that is neither
// a record nor the kernel's or Xen's own.
std::string guest_output(const RunResult& r);

// A failure the kernel handled itself: it printed done/fail and shut the
// machine down with a failing status, rather than hanging or crashing.
::testing::AssertionResult failed_cleanly(const RunResult& r);

// Wherever the kernel reports free-frame counts around a piece of work
// (free_frames_before/free_frames_after, or "leak"), they must match; a run
// that passed must have reported at least one such record.
::testing::AssertionResult no_frame_leak(const RunResult& r);

// The init_exit record of `program`: it exited with status 0 and the free
// frames were back at their count from before it.
::testing::AssertionResult init_exited_cleanly(const RunResult& r, std::string_view program);

// The first record {"event":<event>, <key>:<value>, ...}; index into r.records.
std::optional<size_t> find_record(const RunResult& r, std::string_view event,
                                  const std::function<bool(const json&)>& pred = {});
std::optional<size_t> find_record(const RunResult& r, std::string_view event, std::string_view key,
                                  std::string_view value);

// {"event":"boot",...}: what the kernel says it booted with (mmu, pte, ...).
// Fails if there is no boot record or it disagrees with `expected`.
::testing::AssertionResult booted_with(const RunResult& r, std::string_view key, std::string_view expected);

// The counter deltas a selftest step reports with its work.
struct StepCounters {
  uint64_t pages = 0;
  uint64_t hypercalls = 0;
  uint64_t mmu_update_entries = 0;
  uint64_t multicalls = 0;
  uint64_t mmuext_ops = 0;
  uint64_t ptwr_traps = 0;
  uint64_t pte_writes = 0;
};

// Reads {"event":"selftest_step","name":<test>,"step":<step>,...}: every
// counter must be present as an unsigned integer. nullopt (with the reason in
// *why) if the record is missing or incomplete.
std::optional<StepCounters> step_counters(const RunResult& r, std::string_view test, std::string_view step,
                                          std::string* why);

}  // namespace pvk::boot_test
