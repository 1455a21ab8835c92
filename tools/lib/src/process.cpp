#include "pvk/process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace pvk {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

[[noreturn]] void throw_errno(int error, const std::string& what) {
  throw std::system_error(error, std::generic_category(), what);
}

// Owns a file descriptor so every exit path closes it.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// posix_spawn's attribute and file-action objects need explicit destroy calls.
class SpawnSetup {
 public:
  SpawnSetup() {
    if (int e = posix_spawn_file_actions_init(&actions_)) throw_errno(e, "posix_spawn_file_actions_init");
    if (int e = posix_spawnattr_init(&attr_)) {
      posix_spawn_file_actions_destroy(&actions_);
      throw_errno(e, "posix_spawnattr_init");
    }
    try {
      // Own process group: a timeout kills QEMU and anything it started,
      // and nothing of ours. Clean signal state: the test harness or a shell
      // may have blocked or ignored signals the child relies on.
      sigset_t none, all;
      sigemptyset(&none);
      sigfillset(&all);
      sigdelset(&all, SIGKILL);
      sigdelset(&all, SIGSTOP);
      check(posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                 POSIX_SPAWN_SETSIGDEF),
            "posix_spawnattr_setflags");
      check(posix_spawnattr_setpgroup(&attr_, 0), "posix_spawnattr_setpgroup");
      check(posix_spawnattr_setsigmask(&attr_, &none), "posix_spawnattr_setsigmask");
      check(posix_spawnattr_setsigdefault(&attr_, &all), "posix_spawnattr_setsigdefault");
    } catch (...) {
      destroy();
      throw;
    }
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
  ~SpawnSetup() { destroy(); }

  void open(int fd, const char* path, int flags, mode_t mode) {
    check(posix_spawn_file_actions_addopen(&actions_, fd, path, flags, mode), "posix_spawn_file_actions_addopen");
  }
  void dup2(int from, int to) {
    check(posix_spawn_file_actions_adddup2(&actions_, from, to), "posix_spawn_file_actions_adddup2");
  }

  pid_t spawn(const std::vector<std::string>& argv) {
    if (argv.empty()) throw std::invalid_argument("run_process: empty argv");
    std::vector<char*> cargv;
    cargv.reserve(argv.size() + 1);
    for (const auto& arg : argv) cargv.push_back(const_cast<char*>(arg.c_str()));
    cargv.push_back(nullptr);
    pid_t pid = -1;
    if (int e = posix_spawnp(&pid, cargv[0], &actions_, &attr_, cargv.data(), environ))
      throw_errno(e, fmt::format("cannot start {}", argv[0]));
    return pid;
  }

 private:
  static void check(int error, const char* what) {
    if (error) throw_errno(error, what);
  }
  void destroy() {
    posix_spawnattr_destroy(&attr_);
    posix_spawn_file_actions_destroy(&actions_);
  }
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;
};

struct Status {
  int exit_code = -1;
  int term_signal = 0;
};

Status decode(int wstatus) {
  Status s;
  if (WIFEXITED(wstatus)) s.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) s.term_signal = WTERMSIG(wstatus);
  return s;
}

// The spawned child and its process group. Unless reaped, the destructor
// kills the group and reaps, so an exception (e.g. from a line sink) never
// leaves a QEMU running behind us.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (!status_) {
      ::kill(-pid_, SIGKILL);
      wait_blocking();
    }
  }

  void signal_group(int sig) const { ::kill(-pid_, sig); }

  // Non-blocking: true once the child has exited and been reaped.
  bool poll_exit() {
    if (status_) return true;
    int wstatus = 0;
    pid_t r;
    do r = ::waitpid(pid_, &wstatus, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == pid_) status_ = decode(wstatus);
    return status_.has_value();
  }

  Status wait_blocking() {
    if (status_) return *status_;
    int wstatus = 0;
    pid_t r;
    do r = ::waitpid(pid_, &wstatus, 0);
    while (r < 0 && errno == EINTR);
    status_ = r == pid_ ? decode(wstatus) : Status{};
    return *status_;
  }

 private:
  pid_t pid_;
  std::optional<Status> status_;
};

// Splits a byte stream into lines for the sink; "\r" before "\n" is dropped.
class LineSplitter {
 public:
  static constexpr size_t kMaxLine = 64 * 1024;

  explicit LineSplitter(const LineSink& sink) : sink_(sink) {}

  // Returns true if the sink asked to stop; lines after that one are dropped.
  bool feed(const char* data, size_t size) {
    pending_.append(data, size);
    size_t start = 0;
    for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos;) {
      const bool stop = emit(std::string_view(pending_).substr(start, nl - start));
      start = nl + 1;
      if (stop) {
        pending_.clear();
        return true;
      }
    }
    pending_.erase(0, start);
    // A line that never ends (a program writing megabytes without a
    // newline) is delivered in pieces: what we hold stays bounded.
    while (pending_.size() > kMaxLine) {
      const bool stop = emit(std::string_view(pending_).substr(0, kMaxLine));
      pending_.erase(0, kMaxLine);
      if (stop) {
        pending_.clear();
        return true;
      }
    }
    return false;
  }

  // Delivers a last line that had no terminator.
  bool finish() {
    if (pending_.empty()) return false;
    const bool stop = emit(pending_);
    pending_.clear();
    return stop;
  }

 private:
  bool emit(std::string_view line) {
    while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return sink_(line) == LineAction::stop;
  }
  const LineSink& sink_;
  std::string pending_;
};

// Reads what is available on `fd` within `wait`. Returns the number of bytes
// read into buf (0 at EOF), or nullopt if nothing arrived in time.
std::optional<size_t> read_some(int fd, char* buf, size_t size, milliseconds wait) {
  pollfd p{fd, POLLIN, 0};
  int r = ::poll(&p, 1, static_cast<int>(wait.count()));
  if (r < 0 && errno != EINTR) throw_errno(errno, "poll");
  if (r <= 0) return std::nullopt;
  ssize_t n = ::read(fd, buf, size);
  if (n < 0) {
    if (errno == EINTR || errno == EAGAIN) return std::nullopt;
    throw_errno(errno, "read");
  }
  return static_cast<size_t>(n);
}

}  // namespace

ProcessResult run_process(const ProcessOptions& options, const LineSink& sink) {
  const auto start = Clock::now();
  const bool limited = options.timeout.count() > 0;
  const auto deadline = start + options.timeout;
  // Poll in short slices so cancellation and the deadline are noticed
  // promptly even when the child is silent.
  constexpr milliseconds slice{100};

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno(errno, "pipe2");
  Fd read_end(fds[0]);
  Fd write_end(fds[1]);

  SpawnSetup setup;
  setup.open(STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  setup.dup2(write_end.get(), STDOUT_FILENO);
  setup.dup2(write_end.get(), STDERR_FILENO);
  Child child(setup.spawn(options.argv));
  write_end.reset();  // EOF on read_end once the child (and its group) close it

  ProcessResult result;
  LineSplitter lines(sink);
  char buf[4096];
  bool ending = false;  // we decided to end the child; its remaining output is noise
  std::optional<Clock::time_point> kill_at;     // when SIGTERM turns into SIGKILL
  std::optional<Clock::time_point> abandon_at;  // when to stop waiting for EOF

  auto begin_ending = [&] {
    ending = true;
    child.signal_group(SIGTERM);  // lets QEMU exit cleanly
    kill_at = Clock::now() + options.kill_grace;
  };
  // Applies cancellation, the deadline and the kill escalation.
  auto enforce_limits = [&] {
    const auto now = Clock::now();
    if (!ending && options.cancel && options.cancel->load()) {
      result.stopped = true;
      begin_ending();
    } else if (!ending && limited && now >= deadline) {
      result.timed_out = true;
      begin_ending();
    }
    if (kill_at && now >= *kill_at) {
      child.signal_group(SIGKILL);
      kill_at.reset();
      abandon_at = now + options.kill_grace;
    }
  };

  // Phase 1: stream output until EOF, a stop request or the deadline.
  for (bool eof = false; !eof;) {
    enforce_limits();
    // Something outside the process group may still hold the pipe open after
    // the group is dead; do not wait for it forever.
    if (abandon_at && Clock::now() >= *abandon_at) break;

    milliseconds wait = slice;
    if (limited && !ending)
      wait = std::clamp(std::chrono::ceil<milliseconds>(deadline - Clock::now()), milliseconds{0}, slice);
    auto n = read_some(read_end.get(), buf, sizeof buf, wait);
    if (!n) continue;
    if (*n == 0) {
      eof = true;
      if (!ending && lines.finish()) result.stopped = true;
    } else if (!ending && lines.feed(buf, *n)) {
      result.stopped = true;
      begin_ending();
    }
  }

  // Phase 2: output is closed; wait for the exit within the same limits (a
  // child may close its stdout and keep running).
  while (!child.poll_exit()) {
    enforce_limits();
    std::this_thread::sleep_for(milliseconds{10});
  }

  const Status status = child.wait_blocking();
  result.exit_code = status.exit_code;
  result.term_signal = status.term_signal;
  result.elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  return result;
}

int run_to_file(const std::vector<std::string>& argv, const std::filesystem::path& output) {
  SpawnSetup setup;
  setup.open(STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  setup.open(STDOUT_FILENO, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Child child(setup.spawn(argv));
  return child.wait_blocking().exit_code;
}

}  // namespace pvk

namespace pvk {

void run_builder_script(const std::vector<std::string>& argv, std::string_view what,
                        const std::function<void(std::string_view)>& note) {
  ProcessOptions process;
  process.argv = argv;
  process.timeout = std::chrono::minutes{15};
  std::vector<std::string> output;
  const ProcessResult r = run_process(process, [&](std::string_view line) {
    output.emplace_back(line);
    if (note) note(line);
    return LineAction::keep_going;
  });
  if (r.exit_code == 0) return;
  std::string text;
  for (const auto& line : output) text += "\n  " + line;
  throw std::runtime_error(fmt::format("{} failed ({}){}", what,
                                       r.timed_out ? "timed out" : fmt::format("status {}", r.exit_code), text));
}

}  // namespace pvk
