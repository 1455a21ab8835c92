// Runs a child process with stdout and stderr merged into one pipe and hands
// each output line to a callback as soon as it arrives, so a console can be
// watched live and a run can be cut short the moment its outcome is known.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pvk {

enum class LineAction { keep_going, stop };

// Called once per output line, without the "\n" (and without trailing "\r":
// serial consoles send "\r\n"). Returning stop ends the child.
using LineSink = std::function<LineAction(std::string_view line)>;

struct ProcessOptions {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH; no shell involved
  std::chrono::milliseconds timeout{0};  // 0 = no limit
  // How long a SIGTERM may take before the process group gets SIGKILL.
  std::chrono::milliseconds kill_grace{2000};
  // Polled while waiting; when it becomes true the child is ended as if the
  // sink had asked to stop (lets a signal handler cancel a run).
  const std::atomic<bool>* cancel = nullptr;
};

struct ProcessResult {
  int exit_code = -1;    // the child's exit status, -1 if it died of a signal
  int term_signal = 0;   // the signal that ended the child, 0 if it exited
  bool timed_out = false;
  bool stopped = false;  // ended because the sink or `cancel` asked
  std::chrono::milliseconds elapsed{0};
};

// Spawns argv in its own process group (so the whole group can be killed on
// timeout, QEMU helpers included), stdin from /dev/null. Throws
// std::system_error if the program cannot be started.
ProcessResult run_process(const ProcessOptions& options, const LineSink& sink);

// Runs argv with stdout written to `output` (stderr stays ours) and waits for
// it. Returns the exit status, or -1 if it died of a signal.
int run_to_file(const std::vector<std::string>& argv, const std::filesystem::path& output);

}  // namespace pvk

namespace pvk {

// Runs one of tools/'s cache-building scripts (`bash SCRIPT ARGS...`, up to
// 15 minutes), passing each output line to `note`; throws with the script's
// whole output if it fails, naming `what` ("building the dom0 image").
void run_builder_script(const std::vector<std::string>& argv, std::string_view what,
                        const std::function<void(std::string_view)>& note);

}  // namespace pvk
