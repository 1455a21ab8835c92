#include "boot_support.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cctype>
#include <sstream>

namespace pvk::boot_test {

RunResult boot(Platform platform, const std::string& params, Image image) {
  RunOptions options;
  options.platform = platform;
  options.kernel = image == Image::builtin ? PVK_BUILTIN_KERNEL_PATH : PVK_KERNEL_PATH;
  options.params = params;
  options.xen_cache_dir = PVK_XEN_CACHE_DIR;
  RunResult r = run_kernel(options);
  EXPECT_TRUE(no_frame_leak(r)) << transcript(r);
  return r;
}

RunResult boot_with_initrd(Platform platform, const std::string& params, const std::filesystem::path& initrd) {
  RunOptions options;
  options.platform = platform;
  options.kernel = PVK_KERNEL_PATH;
  options.params = params;
  options.xen_cache_dir = PVK_XEN_CACHE_DIR;
  options.initrd = initrd;
  RunResult r = run_kernel(options);
  EXPECT_TRUE(no_frame_leak(r)) << transcript(r);
  return r;
}

std::string host_command_output(const std::string& command) {
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return "popen failed";
  std::string out;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

std::string guest_output(const RunResult& r) {
  std::string out;
  for (const std::string& line : r.lines) {
    if (line.rfind("@pvk ", 0) == 0 || line.rfind("pvk: ", 0) == 0 || line.rfind("(XEN)", 0) == 0) continue;
    out += line;
    out += '\n';
  }
  return out;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool contains(std::string_view line, std::string_view word) { return line.find(word) != std::string_view::npos; }

std::vector<std::string> text_lines(const RunResult& r) {
  std::vector<std::string> out;
  for (const auto& line : r.lines)
    if (parse_console_line(line).kind == ConsoleLine::Kind::text) out.push_back(line);
  return out;
}

bool any_text_line(const RunResult& r, const std::function<bool(std::string_view)>& pred) {
  const auto lines = text_lines(r);
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return pred(l); });
}

std::string transcript(const RunResult& r) {
  constexpr size_t tail = 80;
  std::ostringstream out;
  out << "\n--- verdict: " << (r.pass ? "pass" : "FAIL") << ": " << r.reason << " (" << r.elapsed.count()
      << " ms)\n--- console";
  if (r.lines.size() > tail) out << " (last " << tail << " of " << r.lines.size() << " lines)";
  out << ":\n";
  // A long console's failing records may lie before its tail (CI shows
  // only this): each one first, wherever it is.
  if (r.lines.size() > tail) {
    unsigned shown = 0;
    for (size_t i = 0; i + tail < r.lines.size() && shown < 20; ++i)
      if (r.lines[i].find("\"pass\":false") != std::string::npos || r.lines[i].find(": FAIL") != std::string::npos) {
        out << "--- failing, line " << i + 1 << ": " << r.lines[i] << "\n";
        ++shown;
      }
  }
  for (size_t i = r.lines.size() > tail ? r.lines.size() - tail : 0; i < r.lines.size(); ++i)
    out << r.lines[i] << "\n";
  for (const auto& line : r.xen_trouble) out << "--- xen trouble: " << line << "\n";
  return out.str();
}

::testing::AssertionResult failed_cleanly(const RunResult& r) {
  if (r.pass) return ::testing::AssertionFailure() << "the run passed";
  if (r.timed_out) return ::testing::AssertionFailure() << "the run timed out";
  if (!r.done || r.done->value("status", "") != "fail")
    return ::testing::AssertionFailure() << "no done record with status fail";
  if (r.platform_exit.verdict != ExitVerdict::fail)
    return ::testing::AssertionFailure() << "the machine did not stop with a failing status ("
                                         << r.platform_exit.description << ")";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult init_exited_cleanly(const RunResult& r, std::string_view program) {
  const auto at = find_record(r, "init_exit", "program", program);
  if (!at) return ::testing::AssertionFailure() << "no init_exit record for " << program;
  const json& rec = r.records[*at];
  if (rec.value("exited", false) != true || rec.value("code", -1) != 0)
    return ::testing::AssertionFailure() << "init did not exit 0: " << rec.dump();
  if (rec.value("free_frames_before", 0u) != rec.value("free_frames_after", 1u))
    return ::testing::AssertionFailure() << "frames leaked: " << rec.dump();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult no_frame_leak(const RunResult& r) {
  size_t reports = 0;
  for (const json& rec : r.records) {
    if (rec.contains("free_frames_before") || rec.contains("free_frames_after")) {
      ++reports;
      if (!rec.contains("free_frames_before") || !rec.contains("free_frames_after") ||
          rec["free_frames_after"] != rec["free_frames_before"])
        return ::testing::AssertionFailure() << "frame leak: " << rec.dump();
    }
    if (rec.contains("leak") && rec["leak"] != false)
      return ::testing::AssertionFailure() << "frame leak reported: " << rec.dump();
  }
  if (r.pass && reports == 0)
    return ::testing::AssertionFailure() << "the run passed without reporting free_frames_before/after";
  return ::testing::AssertionSuccess();
}

std::optional<size_t> find_record(const RunResult& r, std::string_view event,
                                  const std::function<bool(const json&)>& pred) {
  for (size_t i = 0; i < r.records.size(); ++i) {
    const json& rec = r.records[i];
    if (rec.value("event", "") == event && (!pred || pred(rec))) return i;
  }
  return std::nullopt;
}

std::optional<size_t> find_record(const RunResult& r, std::string_view event, std::string_view key,
                                  std::string_view value) {
  return find_record(r, event, [&](const json& rec) {
    const auto it = rec.find(key);
    return it != rec.end() && it->is_string() && it->get<std::string>() == value;
  });
}

::testing::AssertionResult booted_with(const RunResult& r, std::string_view key, std::string_view expected) {
  const auto at = find_record(r, "boot");
  if (!at) return ::testing::AssertionFailure() << "no {\"event\":\"boot\",...} record";
  const json& rec = r.records[*at];
  const auto it = rec.find(key);
  if (it == rec.end() || !it->is_string() || it->get<std::string>() != expected)
    return ::testing::AssertionFailure() << "boot record should have \"" << key << "\":\"" << expected
                                         << "\": " << rec.dump();
  return ::testing::AssertionSuccess();
}

std::optional<StepCounters> step_counters(const RunResult& r, std::string_view test, std::string_view step,
                                          std::string* why) {
  const auto at = find_record(r, "selftest_step", [&](const json& rec) {
    return rec.value("name", "") == test && rec.value("step", "") == step;
  });
  if (!at) {
    *why = "no {\"event\":\"selftest_step\",\"name\":\"" + std::string(test) + "\",\"step\":\"" +
           std::string(step) + "\",...} record";
    return std::nullopt;
  }
  const json& rec = r.records[*at];
  StepCounters c;
  const std::pair<const char*, uint64_t*> fields[] = {
      {"pages", &c.pages},           {"hypercalls", &c.hypercalls}, {"mmu_update_entries", &c.mmu_update_entries},
      {"multicalls", &c.multicalls}, {"mmuext_ops", &c.mmuext_ops}, {"ptwr_traps", &c.ptwr_traps},
      {"pte_writes", &c.pte_writes},
  };
  for (const auto& [key, out] : fields) {
    const auto it = rec.find(key);
    if (it == rec.end() || !it->is_number_unsigned()) {
      *why = std::string("step record without an unsigned \"") + key + "\": " + rec.dump();
      return std::nullopt;
    }
    *out = it->get<uint64_t>();
  }
  if (rec.value("pass", false) != true) {
    *why = "step did not pass: " + rec.dump();
    return std::nullopt;
  }
  return c;
}

}  // namespace pvk::boot_test
