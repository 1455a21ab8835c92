// The runtime's C++ half: sigaction helper, output, numbers, memory; and the
// two hooks the kernel's shared writers need (pvk::console_write for
// base/console/record.cpp, pvk::panic for base/lib/error_or.h).
#include "bench/libc/user.h"

#include "base/console/console.h"
#include "base/lib/error_or.h"
#include "base/lib/format.h"

namespace pvk {

// Records (pvk::Record) and anything else written "to the console" go to
// stdout: on pvk, fd 1 of init is the console. One record, one write().
void console_write(const char* s, size_t n) { user::write_all(1, s, n); }
// Programs print whole lines; the kernel starts a new line itself where a
// kernel line interrupts a partial one of ours.
void console_begin_line() {}

void vkprintf(const char* fmt, va_list ap) { user::vprintf(fmt, ap); }

void kprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  user::vprintf(fmt, ap);
  va_end(ap);
}

[[noreturn]] void panic(const char* fmt, ...) {
  char buf[256];
  size_t n = format(buf, sizeof buf, "user panic (pid %ld): ", user::getpid());
  va_list ap;
  va_start(ap, fmt);
  if (n < sizeof buf) n += vformat(buf + n, sizeof buf - n, fmt, ap);
  va_end(ap);
  if (n > sizeof buf - 2) n = sizeof buf - 2;
  buf[n++] = '\n';
  user::write_all(1, buf, n);
  user::exit_group(127);
}

namespace user {

int64_t sigaction(int sig, uint64_t handler, uint64_t extra_flags, uint64_t mask) {
  KernelSigaction act{};
  act.handler = handler;
  act.flags = SA_RESTORER | extra_flags;
  act.restorer = reinterpret_cast<uint64_t>(&pvk_sigreturn_restorer);
  act.mask = mask;
  return rt_sigaction(sig, &act, nullptr);
}

int64_t sigaction(int sig, void (*handler)(int), uint64_t extra_flags, uint64_t mask) {
  return sigaction(sig, reinterpret_cast<uint64_t>(handler), extra_flags, mask);
}

int64_t write_all(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < n) {
    int64_t r = write(fd, p + done, n - done);
    if (r < 0) return r;
    if (r == 0) break;  // should not happen for a blocking write
    done += static_cast<size_t>(r);
  }
  return static_cast<int64_t>(done);
}

int64_t read_full(int fd, void* buf, size_t n) {
  char* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n) {
    int64_t r = read(fd, p + done, n - done);
    if (r < 0) return r;
    if (r == 0) break;  // EOF
    done += static_cast<size_t>(r);
  }
  return static_cast<int64_t>(done);
}

void print_fd(int fd, const char* s) { write_all(fd, s, strlen(s)); }
void print(const char* s) { print_fd(1, s); }

void vprintf(const char* fmt, va_list ap) {
  char buf[512];
  size_t n = vformat(buf, sizeof buf, fmt, ap);
  write_all(1, buf, n < sizeof buf ? n : sizeof buf - 1);
}

void printf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
}

bool parse_u64(const char* s, uint64_t* out) {
  if (!s || !*s) return false;
  uint64_t v = 0;
  unsigned base = 10;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s += 2;
    if (!*s) return false;
  }
  for (; *s; ++s) {
    unsigned d;
    if (*s >= '0' && *s <= '9')
      d = static_cast<unsigned>(*s - '0');
    else if (base == 16 && *s >= 'a' && *s <= 'f')
      d = static_cast<unsigned>(*s - 'a' + 10);
    else if (base == 16 && *s >= 'A' && *s <= 'F')
      d = static_cast<unsigned>(*s - 'A' + 10);
    else
      return false;
    v = v * base + d;
  }
  *out = v;
  return true;
}

uint64_t now_ns() {
  Timespec ts{};
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void* map_anon(size_t len, uint64_t prot, uint64_t flags) {
  int64_t r = mmap(nullptr, len, prot, flags);
  if (is_err(r)) return nullptr;
  return reinterpret_cast<void*>(r);
}

void* alloc(size_t n) {
  static constexpr size_t kChunk = 64 * 1024;
  static char* cur = nullptr;
  static size_t left = 0;
  n = (n + 15) & ~size_t{15};
  if (n > kChunk / 4) return map_anon((n + kPage - 1) & ~(kPage - 1));
  if (n > left) {
    cur = static_cast<char*>(map_anon(kChunk));
    if (!cur) {
      left = 0;
      return nullptr;
    }
    left = kChunk;
  }
  void* p = cur;
  cur += n;
  left -= n;
  return p;
}

void warm_root_cache(int n) {
  int p[2];
  if (pipe(p) != 0) return;
  int started = 0;
  for (; started < n; ++started) {
    const int64_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      close(p[1]);
      char c;
      read(p[0], &c, 1);  // until EOF
      exit_group(0);
    }
  }
  close(p[0]);
  close(p[1]);
  int st;
  while (started > 0 && wait4(-1, &st, 0) > 0) --started;
}

}  // namespace user
}  // namespace pvk
