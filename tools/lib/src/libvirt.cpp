#include "pvk/libvirt.hpp"

#include "pvk/record.hpp"
#include "pvk/verdict.hpp"

#include <fmt/format.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace pvk {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path.string()));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> read_lines(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// libvirt prints every error to stderr unless told otherwise; ours are
// reported through exceptions instead.
void quiet_libvirt_errors() {
  virSetErrorFunc(nullptr, [](void*, virErrorPtr) {});
}

std::string libvirt_error(std::string_view what) {
  const char* msg = virGetLastErrorMessage();
  return fmt::format("libvirt: {}: {}", what, msg ? msg : "unknown error");
}

fs::path make_temp_dir(std::string_view prefix) {
  // Short and under /tmp: the libvirtd socket path must fit sockaddr_un.
  std::string templ = fmt::format("/tmp/{}.XXXXXX", prefix);
  if (!::mkdtemp(templ.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp");
  return templ;
}

struct ConnectDeleter {
  void operator()(virConnectPtr c) const { virConnectClose(c); }
};
struct DomainDeleter {
  void operator()(virDomainPtr d) const { virDomainFree(d); }
};

const char* shutoff_reason(int reason) {
  switch (reason) {
    case VIR_DOMAIN_SHUTOFF_SHUTDOWN: return "shutdown";
    case VIR_DOMAIN_SHUTOFF_DESTROYED: return "destroyed";
    case VIR_DOMAIN_SHUTOFF_CRASHED: return "crashed";
    case VIR_DOMAIN_SHUTOFF_FAILED: return "failed";
    case VIR_DOMAIN_SHUTOFF_FROM_SNAPSHOT: return "from snapshot";
    default: return "unknown";
  }
}

// Feeds a growing file to a line callback, complete lines only (until `flush`).
class FileTail {
 public:
  explicit FileTail(fs::path path) : path_(std::move(path)) {}
  template <typename F>
  void poll(F&& on_line, bool flush = false) {
    std::ifstream in(path_, std::ios::binary);
    if (!in) return;
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string chunk{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    offset_ += chunk.size();
    pending_ += chunk;
    size_t start = 0;
    for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string_view line = std::string_view(pending_).substr(start, nl - start);
      while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      on_line(line);
    }
    pending_.erase(0, start);
    if (flush && !pending_.empty()) {
      on_line(std::string_view(pending_));
      pending_.clear();
    }
  }

 private:
  fs::path path_;
  size_t offset_ = 0;
  std::string pending_;
};

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_domain_xml(std::string_view xml_template, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t pos = 0;
  for (size_t at; (at = xml_template.find('@', pos)) != std::string_view::npos;) {
    const size_t end = xml_template.find('@', at + 1);
    const std::string_view key = end == std::string_view::npos ? "" : xml_template.substr(at + 1, end - at - 1);
    const bool placeholder = !key.empty() && key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == std::string_view::npos;
    if (!placeholder) {  // a lone '@' is text
      out += xml_template.substr(pos, at + 1 - pos);
      pos = at + 1;
      continue;
    }
    const auto value = values.find(std::string(key));
    if (value == values.end()) throw std::invalid_argument(fmt::format("no value for @{}@ in the domain template", key));
    out += xml_template.substr(pos, at - pos);
    out += xml_escape(value->second);
    pos = end + 1;
  }
  out += xml_template.substr(pos);
  return out;
}

PrivateLibvirtd::PrivateLibvirtd(const fs::path& tools_dir, std::chrono::seconds startup) {
  const fs::path script = tools_dir / private_libvirtd_script;
  if (!fs::is_regular_file(script)) throw std::runtime_error(fmt::format("{} not found", script.string()));
  dir_ = make_temp_dir("pvk-libvirtd");

  // `unshare -m`: the mounts the script makes (private state directories, our
  // qemu.conf) exist only for this libvirtd and the QEMU it starts.
  const std::string out = (dir_ / "libvirtd.out").string();
  std::vector<std::string> argv{"unshare", "-m", "--propagation", "private", "sh", script.string(), dir_.string()};
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  pid_t pid = -1;
  const int e = posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (e != 0) {
    fs::remove_all(dir_);
    throw std::system_error(e, std::generic_category(), "cannot start unshare (util-linux)");
  }
  pid_ = pid;

  const auto deadline = Clock::now() + startup;
  while (!fs::exists(dir_ / "libvirt-sock")) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      std::string log = read_file(out);
      fs::remove_all(dir_);
      throw std::runtime_error(fmt::format("private libvirtd exited at once (status {}):\n{}",
                                           WIFEXITED(status) ? WEXITSTATUS(status) : -1, log));
    }
    if (Clock::now() >= deadline) {
      const std::string log = read_file(out);
      stop();
      throw std::runtime_error(fmt::format("private libvirtd did not open its socket in {} s:\n{}",
                                           startup.count(), log));
    }
    std::this_thread::sleep_for(50ms);
  }
}

PrivateLibvirtd::~PrivateLibvirtd() { stop(); }

void PrivateLibvirtd::stop() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGTERM);
    const auto deadline = Clock::now() + 10s;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) != pid_) {
      if (Clock::now() >= deadline) {
        ::kill(-pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    pid_ = -1;
  }
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
  dir_.clear();
}

std::string PrivateLibvirtd::uri() const { return fmt::format("qemu:///system?socket={}/libvirt-sock", dir_.string()); }

std::vector<std::string> PrivateLibvirtd::logs(const std::string& domain) const {
  std::vector<std::string> out;
  for (const fs::path& p : {dir_ / "log" / "qemu" / (domain + ".log"), dir_ / "libvirtd.log"}) {
    for (auto& line : read_lines(p)) out.push_back(fmt::format("{}: {}", p.filename().string(), line));
  }
  return out;
}

namespace {

// The domain template of a native run and where it came from (for errors).
struct DomainTemplate {
  fs::path path;
  std::string text;
};

DomainTemplate read_native_template(const fs::path& tools_dir) {
  const fs::path path = tools_dir / libvirt_native_template;
  if (!fs::is_regular_file(path))
    throw std::runtime_error(fmt::format("domain template {} not found", path.string()));
  return {path, read_file(path)};
}

// The directory of the console file: somewhere QEMU (root, started by
// libvirtd) can write and we can read. The private libvirtd's own directory
// when there is one (it goes with the daemon), else a temporary directory
// removed with this object.
class ConsoleDir {
 public:
  explicit ConsoleDir(const std::optional<PrivateLibvirtd>& daemon)
      : dir_(daemon ? daemon->dir() : make_temp_dir("pvk-libvirt")), owned_(!daemon) {}
  ConsoleDir(const ConsoleDir&) = delete;
  ConsoleDir& operator=(const ConsoleDir&) = delete;
  ~ConsoleDir() {
    std::error_code ec;
    if (owned_) fs::remove_all(dir_, ec);
  }
  fs::path console_log() const { return dir_ / "console.log"; }

 private:
  fs::path dir_;
  bool owned_;
};

// pvk-<pid>-<n>: unique per process and run.
std::string next_domain_name() {
  static int runs = 0;
  return fmt::format("pvk-{}-{}", ::getpid(), ++runs);
}

std::string native_domain_xml(const DomainTemplate& templ, const std::string& name, const RunOptions& options,
                              const fs::path& console_log) {
  return render_domain_xml(templ.text, {{"NAME", name},
                                        {"KERNEL", fs::absolute(options.kernel).string()},
                                        {"CMDLINE", options.params},
                                        {"CONSOLE_LOG", console_log.string()},
                                        {"MEMORY_MIB", "512"}});
}

using Connection = std::unique_ptr<virConnect, ConnectDeleter>;
using Domain = std::unique_ptr<virDomain, DomainDeleter>;

// A fresh libvirtd creates its socket file (bind) a moment before it
// listens on it: a refused connection right after start is retried.
Connection connect_with_retries(const std::string& uri) {
  Connection conn(virConnectOpen(uri.c_str()));
  for (int attempt = 0; !conn && attempt < 100; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
    conn.reset(virConnectOpen(uri.c_str()));
  }
  if (!conn) throw std::runtime_error(libvirt_error(fmt::format("cannot connect to {}", uri)));
  return conn;
}

Domain define_domain(virConnectPtr conn, const std::string& xml, const fs::path& templ_path) {
  Domain dom(virDomainDefineXML(conn, xml.c_str()));
  if (!dom) throw std::runtime_error(libvirt_error("cannot define the domain from " + templ_path.string()));
  return dom;
}

// However the run ends: the domain is destroyed if it still runs, then
// undefined.
class UndefineAtEnd {
 public:
  explicit UndefineAtEnd(virDomainPtr dom) : dom_(dom) {}
  UndefineAtEnd(const UndefineAtEnd&) = delete;
  UndefineAtEnd& operator=(const UndefineAtEnd&) = delete;
  ~UndefineAtEnd() {
    int state = 0, reason = 0;
    if (virDomainGetState(dom_, &state, &reason, 0) == 0 && state != VIR_DOMAIN_SHUTOFF) virDomainDestroy(dom_);
    virDomainUndefine(dom_);
  }

 private:
  virDomainPtr dom_;
};

// How the domain stopped: by itself (reason: libvirt's shutoff reason), or
// destroyed by the runner because the run was cancelled or timed out
// (result.timed_out).
struct DomainEnd {
  bool cancelled = false;
  int reason = 0;
};

// Starts the domain and streams its console file into `result` (and `echo`)
// until the domain is shut off, destroying it on cancel or timeout; sets the
// run's elapsed time.
DomainEnd boot_and_watch(virDomainPtr dom, const fs::path& console_log, const RunOptions& options,
                         const ConsoleEcho& echo, std::chrono::seconds timeout, RunResult& result) {
  const auto start = Clock::now();
  if (virDomainCreate(dom) < 0) throw std::runtime_error(libvirt_error("cannot start the domain"));

  FileTail tail(console_log);
  auto on_line = [&](std::string_view line) {
    if (echo) echo(line);
    result.add_console_line(line);
  };
  const bool limited = timeout.count() > 0;
  DomainEnd end;
  int state = 0;
  for (;;) {
    tail.poll(on_line);
    if (virDomainGetState(dom, &state, &end.reason, 0) < 0)
      throw std::runtime_error(libvirt_error("cannot read the domain's state"));
    if (state == VIR_DOMAIN_SHUTOFF) break;
    if (options.cancel && options.cancel->load()) end.cancelled = true;
    if (limited && Clock::now() - start >= timeout) result.timed_out = true;
    if (end.cancelled || result.timed_out) {
      virDomainDestroy(dom);
      virDomainGetState(dom, &state, &end.reason, 0);
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  tail.poll(on_line, /*flush=*/true);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return end;
}

// QEMU's exit status (isa-debug-exit's pass/fail) does not reach libvirt:
// the domain stopping by itself is the platform's whole say, so the done
// record decides.
PlatformExit domain_exit(const DomainEnd& end, bool timed_out) {
  if (timed_out || end.cancelled) return {ExitVerdict::none, "the domain was destroyed by the runner"};
  if (end.reason == VIR_DOMAIN_SHUTOFF_DESTROYED) return {ExitVerdict::none, "the domain was destroyed from outside"};
  return {ExitVerdict::pass, fmt::format("QEMU ended the domain itself (isa-debug-exit; libvirt reports: shut off, {})",
                                         shutoff_reason(end.reason))};
}

// The verdict from the records and the platform's say.
void judge(RunResult& result, std::chrono::seconds timeout, bool cancelled) {
  result.done = find_done_record(result.records);
  const Verdict verdict =
      decide({result.records, result.protocol_errors, result.timed_out, timeout, result.platform_exit});
  result.pass = verdict.pass;
  result.reason = cancelled && !verdict.pass ? "run cancelled before the kernel finished" : verdict.reason;
}

}  // namespace

RunResult run_libvirt_native(const RunOptions& options, const ConsoleEcho& echo, std::chrono::seconds timeout) {
  const DomainTemplate templ = read_native_template(options.tools_dir);

  std::optional<PrivateLibvirtd> daemon;
  std::string uri = options.libvirt_uri;
  if (uri.empty()) {
    daemon.emplace(options.tools_dir);
    uri = daemon->uri();
  }
  const ConsoleDir console_dir(daemon);
  const fs::path console_log = console_dir.console_log();
  const std::string name = next_domain_name();
  const std::string xml = native_domain_xml(templ, name, options, console_log);

  quiet_libvirt_errors();
  const Connection conn = connect_with_retries(uri);
  const Domain dom = define_domain(conn.get(), xml, templ.path);
  const UndefineAtEnd undefine(dom.get());

  RunResult result;
  const DomainEnd end = boot_and_watch(dom.get(), console_log, options, echo, timeout, result);
  result.platform_exit = domain_exit(end, result.timed_out);
  judge(result, timeout, end.cancelled);
  if (!result.pass && daemon) result.hidden_lines = daemon->logs(name);
  return result;
}

}  // namespace pvk
