// fstest: the root filesystem from user mode (init=fstest, booted with the
// tree tests/boot/rootfs_boot_test.cpp packs). Reads the files back and
// checks contents and stat fields, writes, renames and unlinks under /tmp,
// checks the errno of bad calls, and leaves /tmp as it found it (the
// kernel's leak check then needs every frame back). Arguments: uid=N gid=N,
// the owner the host gave the files.
#include "base/console/record.h"
#include "bench/libc/files.h"
#include "tests/user/checks.h"

using namespace pvk;
using namespace pvk::user;
using namespace pvk::user::checks;

namespace {

uint64_t g_uid = 0, g_gid = 0;
constexpr int64_t kMtime = 1700000000;

uint8_t pattern(uint64_t i) { return static_cast<uint8_t>(i * 7 + 3); }

void read_files() {
  char buf[64] = {};
  const int fd = static_cast<int>(open("/etc/hello.txt", O_RDONLY));
  CHECK(fd >= 0);
  CHECK_EQ(read(fd, buf, sizeof buf), 14);
  CHECK(memcmp(buf, "hello, rootfs\n", 14) == 0);
  CHECK_EQ(read(fd, buf, sizeof buf), 0);  // EOF
  Stat st{};
  CHECK_EQ(fstat(fd, &st), 0);
  CHECK_EQ(st.st_size, 14);
  CHECK_EQ(st.st_mode, S_IFREG | 0644);
  CHECK_EQ(st.st_nlink, 1);
  CHECK_EQ(st.st_uid, g_uid);
  CHECK_EQ(st.st_gid, g_gid);
  CHECK_EQ(st.st_mtime, kMtime);
  CHECK_EQ(lseek(fd, 7, SEEK_SET), 7);
  CHECK_EQ(read(fd, buf, 6), 6);
  CHECK(memcmp(buf, "rootfs", 6) == 0);
  CHECK_EQ(close(fd), 0);

  CHECK_EQ(stat("/etc/secret", &st), 0);
  CHECK_EQ(st.st_mode, S_IFREG | 0600);
  CHECK_EQ(stat("/bin/tool", &st), 0);
  CHECK_EQ(st.st_mode, S_IFREG | 0755);
  CHECK_EQ(access("/bin/tool", X_OK), 0);
  CHECK_EQ(access("/etc/hello.txt", X_OK), -EACCES);
  CHECK_EQ(stat("/data/nested", &st), 0);
  CHECK_EQ(st.st_mode, S_IFDIR | 0750);

  // A file over several pages, read whole and at an offset.
  static uint8_t big[10000];
  const int b = static_cast<int>(open("/data/nested/deep/file.bin", O_RDONLY | O_CLOEXEC));
  CHECK(b >= 0);
  CHECK_EQ(read_full(b, big, sizeof big), 10000);
  bool same = true;
  for (uint64_t i = 0; i < sizeof big; ++i) same &= big[i] == pattern(i);
  CHECK(same);
  uint8_t mid[100];
  CHECK_EQ(pread(b, mid, sizeof mid, 5000), 100);
  CHECK(mid[0] == pattern(5000) && mid[99] == pattern(5099));
  CHECK_EQ(fcntl(b, F_GETFD), FD_CLOEXEC);
  CHECK_EQ(close(b), 0);

  // The symlink: readlink, lstat, and opening through it.
  char target[32] = {};
  CHECK_EQ(readlink("/etc/link", target, sizeof target), 9);
  CHECK(memcmp(target, "hello.txt", 9) == 0);
  CHECK_EQ(lstat("/etc/link", &st), 0);
  CHECK_EQ(st.st_mode & S_IFMT, S_IFLNK);
  CHECK_EQ(stat("/etc/link", &st), 0);
  CHECK_EQ(st.st_size, 14);
  CHECK_EQ(readlink("/etc/hello.txt", target, sizeof target), -EINVAL);
}

// Every name of /etc, through getdents64 with a small buffer (several calls).
void list_directory() {
  const int fd = static_cast<int>(open("/etc", O_RDONLY | O_DIRECTORY));
  CHECK(fd >= 0);
  alignas(8) char buf[64];
  unsigned seen = 0, total = 0;
  int64_t n;
  while ((n = getdents64(fd, buf, sizeof buf)) > 0) {
    for (int64_t at = 0; at < n;) {
      const auto* d = reinterpret_cast<const Dirent64*>(buf + at);
      if (!strcmp(d->d_name, ".")) {
        seen |= 1;
        CHECK_EQ(d->d_type, DT_DIR);
      }
      if (!strcmp(d->d_name, "..")) seen |= 2;
      if (!strcmp(d->d_name, "hello.txt")) {
        seen |= 4;
        CHECK_EQ(d->d_type, DT_REG);
      }
      if (!strcmp(d->d_name, "link")) {
        seen |= 8;
        CHECK_EQ(d->d_type, DT_LNK);
      }
      if (!strcmp(d->d_name, "secret")) seen |= 16;
      ++total;
      at += d->d_reclen;
    }
  }
  CHECK_EQ(n, 0);
  CHECK_EQ(seen, 31);
  CHECK_EQ(total, 5);
  alignas(8) char tiny[8];
  CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
  CHECK_EQ(getdents64(fd, tiny, sizeof tiny), -EINVAL);
  CHECK_EQ(close(fd), 0);
}

void write_tmp() {
  static uint8_t data[9000], back[9000];
  for (uint64_t i = 0; i < sizeof data; ++i) data[i] = pattern(i + 11);
  int fd = static_cast<int>(open("/tmp/a", O_CREAT | O_EXCL | O_RDWR, 0640));
  CHECK(fd >= 0);
  CHECK_EQ(write(fd, data, sizeof data), 9000);
  CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
  CHECK_EQ(read_full(fd, back, sizeof back), 9000);
  CHECK(memcmp(data, back, sizeof data) == 0);
  Stat st{};
  CHECK_EQ(fstat(fd, &st), 0);
  CHECK_EQ(st.st_size, 9000);
  CHECK_EQ(st.st_mode, S_IFREG | 0640);
  CHECK_EQ(ftruncate(fd, 100), 0);
  CHECK_EQ(fstat(fd, &st), 0);
  CHECK_EQ(st.st_size, 100);
  CHECK_EQ(pwrite(fd, "xyz", 3, 200), 3);  // a hole from 100 to 200 reads as zeros
  uint8_t hole[4] = {1, 1, 1, 1};
  CHECK_EQ(pread(fd, hole, 4, 150), 4);
  CHECK(hole[0] == 0 && hole[3] == 0);
  CHECK_EQ(close(fd), 0);
  CHECK_EQ(open("/tmp/a", O_CREAT | O_EXCL | O_WRONLY, 0644), -EEXIST);

  // O_APPEND and O_TRUNC.
  fd = static_cast<int>(open("/tmp/a", O_WRONLY | O_APPEND));
  CHECK_EQ(write(fd, "end", 3), 3);
  CHECK_EQ(fstat(fd, &st), 0);
  CHECK_EQ(st.st_size, 206);
  CHECK_EQ(close(fd), 0);
  fd = static_cast<int>(open("/tmp/a", O_WRONLY | O_TRUNC));
  CHECK_EQ(fstat(fd, &st), 0);
  CHECK_EQ(st.st_size, 0);
  CHECK_EQ(write(fd, "short", 5), 5);
  CHECK_EQ(close(fd), 0);

  // Renames, directories, and removing them again.
  CHECK_EQ(rename("/tmp/a", "/tmp/b"), 0);
  CHECK_EQ(open("/tmp/a", O_RDONLY), -ENOENT);
  CHECK_EQ(mkdir("/tmp/d", 0755), 0);
  CHECK_EQ(mkdir("/tmp/d", 0755), -EEXIST);
  CHECK_EQ(rename("/tmp/b", "/tmp/d/b"), 0);
  CHECK_EQ(stat("/tmp/d/b", &st), 0);
  CHECK_EQ(st.st_size, 5);
  CHECK_EQ(rmdir("/tmp/d"), -ENOTEMPTY);
  CHECK_EQ(unlink("/tmp/d"), -EISDIR);
  CHECK_EQ(rename("/tmp/d", "/tmp/d/b/x"), -ENOTDIR);
  CHECK_EQ(rename("/tmp/d", "/tmp/d/sub"), -EINVAL);
  CHECK_EQ(chdir("/tmp/d"), 0);
  char cwd[64] = {};
  CHECK_EQ(getcwd(cwd, sizeof cwd), 7);
  CHECK(!strcmp(cwd, "/tmp/d"));
  CHECK_EQ(getcwd(cwd, 3), -ERANGE);
  CHECK_EQ(stat("b", &st), 0);  // relative to the working directory
  CHECK_EQ(unlink("b"), 0);
  CHECK_EQ(chdir("/"), 0);
  CHECK_EQ(rmdir("/tmp/d"), 0);
  CHECK_EQ(stat("/tmp/d", &st), -ENOENT);

  // An open file outlives its name.
  fd = static_cast<int>(open("/tmp/u", O_CREAT | O_RDWR, 0600));
  CHECK_EQ(write(fd, data, 5000), 5000);
  CHECK_EQ(unlink("/tmp/u"), 0);
  CHECK_EQ(stat("/tmp/u", &st), -ENOENT);
  CHECK_EQ(fstat(fd, &st), 0);
  CHECK_EQ(st.st_nlink, 0);
  CHECK_EQ(pread(fd, back, 5000, 0), 5000);
  CHECK(memcmp(back, data, 5000) == 0);
  CHECK_EQ(close(fd), 0);
}

void bad_calls() {
  Stat st{};
  CHECK_EQ(open("/nonexistent", O_RDONLY), -ENOENT);
  CHECK_EQ(open("/etc/hello.txt/x", O_RDONLY), -ENOTDIR);
  CHECK_EQ(open("/etc", O_WRONLY), -EISDIR);
  CHECK_EQ(open("/etc/hello.txt", O_RDONLY | O_DIRECTORY), -ENOTDIR);
  CHECK_EQ(open("/loop1", O_RDONLY), -ELOOP);
  CHECK_EQ(open("/etc/link", O_RDONLY | O_NOFOLLOW), -ELOOP);
  CHECK_EQ(open(reinterpret_cast<const char*>(8), O_RDONLY), -EFAULT);
  CHECK_EQ(stat("/etc/hello.txt", reinterpret_cast<Stat*>(8)), -EFAULT);
  CHECK_EQ(open("", O_RDONLY), -ENOENT);
  static char longpath[5000];
  memset(longpath, 'a', sizeof longpath - 1);
  CHECK_EQ(open(longpath, O_RDONLY), -ENAMETOOLONG);
  char longname[300];
  memset(longname, 'b', sizeof longname - 1);
  longname[0] = '/', longname[sizeof longname - 1] = 0;
  CHECK_EQ(stat(longname, &st), -ENAMETOOLONG);
  CHECK_EQ(mkdir("/etc", 0755), -EEXIST);
  CHECK_EQ(rmdir("/etc"), -ENOTEMPTY);
  CHECK_EQ(rmdir("/etc/hello.txt"), -ENOTDIR);
  CHECK_EQ(unlink("/nonexistent"), -ENOENT);
  CHECK_EQ(mkdir("/nonexistent/x", 0755), -ENOENT);
  CHECK_EQ(read(99, nullptr, 1), -EBADF);
  CHECK_EQ(fstat(99, &st), -EBADF);

  const int fd = static_cast<int>(open("/etc/hello.txt", O_RDONLY));
  CHECK_EQ(write(fd, "x", 1), -EBADF);
  CHECK_EQ(getdents64(fd, longpath, 100), -ENOTDIR);
  Termios t{};
  CHECK_EQ(ioctl(fd, TCGETS, &t), -ENOTTY);
  CHECK_EQ(lseek(fd, -1, SEEK_SET), -EINVAL);
  CHECK_EQ(read(fd, reinterpret_cast<void*>(8), 4), -EFAULT);
  CHECK_EQ(close(fd), 0);
}

void devices_and_descriptors() {
  // The console is a terminal.
  Termios t{};
  CHECK_EQ(ioctl(1, TCGETS, &t), 0);
  CHECK(t.c_lflag != 0);
  Winsize w{};
  CHECK_EQ(ioctl(1, TIOCGWINSZ, &w), 0);
  CHECK(w.ws_row == 24 && w.ws_col == 80);
  CHECK_EQ(ioctl(1, TCGETS, reinterpret_cast<void*>(8)), -EFAULT);
  Stat st{};
  CHECK_EQ(fstat(1, &st), 0);
  CHECK_EQ(st.st_mode & S_IFMT, S_IFCHR);
  const int con = static_cast<int>(open("/dev/console", O_WRONLY));
  CHECK(con >= 0);
  CHECK_EQ(ioctl(con, TIOCGWINSZ, &w), 0);
  CHECK_EQ(close(con), 0);

  const int null = static_cast<int>(open("/dev/null", O_RDWR));
  char buf[16];
  CHECK_EQ(write(null, "discard", 7), 7);
  CHECK_EQ(read(null, buf, sizeof buf), 0);
  CHECK_EQ(close(null), 0);
  const int zero = static_cast<int>(open("/dev/zero", O_RDONLY));
  memset(buf, 1, sizeof buf);
  CHECK_EQ(read(zero, buf, sizeof buf), 16);
  CHECK(buf[0] == 0 && buf[15] == 0);
  CHECK_EQ(close(zero), 0);

  // dup, dup3, fcntl, pipe2.
  const int d = static_cast<int>(dup(1));
  CHECK(d > 2);
  CHECK_EQ(fcntl(d, F_GETFD), 0);
  CHECK_EQ(fcntl(d, F_SETFD, FD_CLOEXEC), 0);
  CHECK_EQ(fcntl(d, F_GETFD), FD_CLOEXEC);
  CHECK_EQ(dup3(1, d, O_CLOEXEC), d);
  CHECK_EQ(dup3(d, d, 0), -EINVAL);
  CHECK_EQ(dup3(1, d, 1), -EINVAL);
  CHECK_EQ(fcntl(d, F_GETFL) & O_ACCMODE, O_RDWR);
  const int d2 = static_cast<int>(fcntl(1, F_DUPFD_CLOEXEC, 10));
  CHECK(d2 >= 10);
  CHECK_EQ(fcntl(d2, F_GETFD), FD_CLOEXEC);
  CHECK_EQ(close(d2), 0);
  CHECK_EQ(close(d), 0);
  int p[2] = {-1, -1};
  CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
  CHECK_EQ(fcntl(p[0], F_GETFD), FD_CLOEXEC);
  CHECK_EQ(write(p[1], "pipe", 4), 4);
  CHECK_EQ(read(p[0], buf, 4), 4);
  CHECK_EQ(lseek(p[0], 0, SEEK_SET), -ESPIPE);
  CHECK_EQ(close(p[0]), 0);
  CHECK_EQ(close(p[1]), 0);
  CHECK_EQ(pipe2(p, 1), -EINVAL);

  // O_NONBLOCK: a call that would wait returns what it moved, or EAGAIN.
  CHECK_EQ(pipe2(p, O_NONBLOCK), 0);
  CHECK_EQ(fcntl(p[0], F_GETFL), O_RDONLY | O_NONBLOCK);
  CHECK_EQ(read(p[0], buf, 1), -EAGAIN);  // empty, a writer open
  static char big[8192];
  memset(big, 'n', sizeof big);
  CHECK_EQ(write(p[1], big, sizeof big), 4096);     // what fits, then no wait
  CHECK_EQ(write(p[1], big, 1), -EAGAIN);           // full
  CHECK_EQ(read(p[0], buf, 16), 16);
  CHECK_EQ(write(p[1], big, 17), -EAGAIN);          // at most PIPE_BUF: whole or nothing
  CHECK_EQ(write(p[1], big, 16), 16);
  // Cleared on the read end: a read with bytes there still returns at once.
  CHECK_EQ(fcntl(p[0], F_SETFL, 0), 0);
  CHECK_EQ(fcntl(p[0], F_GETFL), O_RDONLY);
  CHECK_EQ(read(p[0], big, sizeof big), 4096);
  CHECK_EQ(close(p[1]), 0);
  CHECK_EQ(read(p[0], buf, 1), 0);  // EOF, not EAGAIN
  CHECK_EQ(close(p[0]), 0);
}

// mmap of a file, MAP_PRIVATE: the file's bytes (zeros past its end in
// the last page), at an offset; a write through the mapping (also after
// mprotect gives write to a read-only one, also in a forked child) changes
// the process' copy, never the file; a mapping outlives the unlinked file
// it maps; and Linux's errors.
void file_mappings() {
  const int b = static_cast<int>(open("/data/nested/deep/file.bin", O_RDONLY));
  CHECK(b >= 0);
  auto* m = reinterpret_cast<uint8_t*>(mmap(nullptr, 3 * 4096, PROT_READ, MAP_PRIVATE, b, 0));
  CHECK(!is_err(reinterpret_cast<int64_t>(m)));
  if (is_err(reinterpret_cast<int64_t>(m))) return;
  bool same = true, zeros = true;
  for (uint64_t i = 0; i < 10000; ++i) same &= m[i] == pattern(i);
  for (uint64_t i = 10000; i < 3 * 4096; ++i) zeros &= m[i] == 0;
  CHECK(same);
  CHECK(zeros);
  // Writable after mprotect: the page gets a copy, the file keeps its bytes.
  CHECK_EQ(mprotect(m, 4096, PROT_READ | PROT_WRITE), 0);
  m[1] = static_cast<uint8_t>(pattern(1) + 1);
  uint8_t back[2];
  CHECK_EQ(pread(b, back, 2, 0), 2);
  CHECK(back[1] == pattern(1));
  CHECK(m[1] == static_cast<uint8_t>(pattern(1) + 1));
  CHECK_EQ(munmap(m, 3 * 4096), 0);
  // At an offset, writable from the start; a child's writes stay its own.
  auto* w = reinterpret_cast<uint8_t*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, b, 4096));
  CHECK(!is_err(reinterpret_cast<int64_t>(w)));
  if (!is_err(reinterpret_cast<int64_t>(w))) {
    CHECK(w[0] == pattern(4096) && w[4095] == pattern(8191));
    const int64_t pid = fork();
    if (pid == 0) {
      w[0] = static_cast<uint8_t>(pattern(4096) + 7);
      exit_group(w[0] == static_cast<uint8_t>(pattern(4096) + 7) ? 0 : 1);
    }
    int st = -1;
    CHECK_EQ(wait4(pid, &st, 0), pid);
    CHECK_EQ(st, 0);
    CHECK(w[0] == pattern(4096));
    w[5] = 0;
    CHECK_EQ(pread(b, back, 1, 4096 + 5), 1);
    CHECK(back[0] == pattern(4096 + 5));
    CHECK_EQ(munmap(w, 4096), 0);
  }
  // Linux's errors.
  CHECK_EQ(mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, b, 100), -EINVAL);
  CHECK_EQ(mmap(nullptr, 4096, PROT_READ, MAP_SHARED, b, 0), -ENODEV);
  CHECK_EQ(mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, 99, 0), -EBADF);
  CHECK_EQ(mmap(nullptr, 0, PROT_READ, MAP_PRIVATE, b, 0), -EINVAL);
  int p[2] = {-1, -1};
  CHECK_EQ(pipe2(p, 0), 0);
  CHECK_EQ(mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, p[0], 0), -ENODEV);
  CHECK_EQ(close(p[0]), 0);
  CHECK_EQ(close(p[1]), 0);
  const int d = static_cast<int>(open("/data", O_RDONLY));
  CHECK_EQ(mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, d, 0), -ENODEV);
  CHECK_EQ(close(d), 0);
  CHECK_EQ(close(b), 0);
  // A file of /tmp, mapped, then unlinked and closed: the mapping keeps its
  // frames (freed with it: the leak check at the end of init), and a file
  // opened only for writing cannot be mapped.
  const int t = static_cast<int>(open("/tmp/mapped", O_RDWR | O_CREAT, 0644));
  CHECK(t >= 0);
  static uint8_t data[8192];
  for (uint64_t i = 0; i < sizeof data; ++i) data[i] = static_cast<uint8_t>(i * 7);
  CHECK_EQ(write(t, data, sizeof data), 8192);
  auto* u = reinterpret_cast<uint8_t*>(mmap(nullptr, 8192, PROT_READ, MAP_PRIVATE, t, 0));
  CHECK(!is_err(reinterpret_cast<int64_t>(u)));
  const int wo = static_cast<int>(open("/tmp/mapped", O_WRONLY));
  CHECK_EQ(mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, wo, 0), -EACCES);
  CHECK_EQ(close(wo), 0);
  CHECK_EQ(unlink("/tmp/mapped"), 0);
  CHECK_EQ(close(t), 0);
  if (!is_err(reinterpret_cast<int64_t>(u))) {
    CHECK(u[1] == 7 && u[8191] == static_cast<uint8_t>(8191 * 7));
    CHECK_EQ(munmap(u, 8192), 0);
  }
}

// sendfile: a file's bytes to another file and to a pipe, from the file's
// offset or an explicit one, and Linux's errors.
void send_files() {
  static uint8_t data[10000], back[10000];
  for (uint64_t i = 0; i < sizeof data; ++i) data[i] = pattern(i + 5);
  const int in = static_cast<int>(open("/tmp/sf_in", O_CREAT | O_EXCL | O_RDWR, 0600));
  CHECK(in >= 0);
  CHECK_EQ(write(in, data, sizeof data), 10000);
  CHECK_EQ(lseek(in, 0, SEEK_SET), 0);
  const int out = static_cast<int>(open("/tmp/sf_out", O_CREAT | O_EXCL | O_RDWR, 0600));
  CHECK(out >= 0);
  // From the file's offset, which moves; more asked than there is.
  CHECK_EQ(sendfile(out, in, nullptr, 7000), 7000);
  CHECK_EQ(lseek(in, 0, SEEK_CUR), 7000);
  CHECK_EQ(sendfile(out, in, nullptr, 1 << 20), 3000);
  CHECK_EQ(sendfile(out, in, nullptr, 100), 0);  // at the end
  CHECK_EQ(pread(out, back, sizeof back, 0), 10000);
  CHECK(memcmp(back, data, sizeof data) == 0);
  // From an explicit offset, which moves while the file's stays.
  int64_t off = 9000;
  CHECK_EQ(lseek(in, 123, SEEK_SET), 123);
  CHECK_EQ(sendfile(out, in, &off, 5000), 1000);
  CHECK_EQ(off, 10000);
  CHECK_EQ(lseek(in, 0, SEEK_CUR), 123);
  // Into a pipe.
  int p[2];
  CHECK_EQ(pipe(p), 0);
  off = 4000;
  CHECK_EQ(sendfile(p[1], in, &off, 3000), 3000);
  CHECK_EQ(read_full(p[0], back, 3000), 3000);
  CHECK(memcmp(back, data + 4000, 3000) == 0);
  CHECK_EQ(sendfile(out, in, &off, 0), 0);
  // Errors.
  off = -1;
  CHECK_EQ(sendfile(out, in, &off, 10), -EINVAL);
  CHECK_EQ(sendfile(out, in, reinterpret_cast<int64_t*>(0x10), 10), -EFAULT);
  CHECK_EQ(sendfile(out, in, reinterpret_cast<int64_t*>(0xffff800000000000ull), 10), -EFAULT);
  CHECK_EQ(sendfile(99, in, nullptr, 10), -EBADF);
  CHECK_EQ(sendfile(out, 99, nullptr, 10), -EBADF);
  CHECK_EQ(sendfile(out, p[0], nullptr, 10), -EINVAL);  // not a regular file
  CHECK_EQ(sendfile(p[0], in, nullptr, 10), -EBADF);   // a read end
  const int ro = static_cast<int>(open("/tmp/sf_out", O_RDONLY));
  CHECK_EQ(sendfile(ro, in, nullptr, 10), -EBADF);
  const int wo = static_cast<int>(open("/tmp/sf_in", O_WRONLY));
  CHECK_EQ(sendfile(out, wo, nullptr, 10), -EBADF);
  const int app = static_cast<int>(open("/tmp/sf_out", O_WRONLY | O_APPEND));
  CHECK_EQ(sendfile(app, in, nullptr, 10), -EINVAL);
  const int dir = static_cast<int>(open("/tmp", O_RDONLY));
  CHECK_EQ(sendfile(out, dir, nullptr, 10), -EINVAL);
  const int fds[] = {in, out, p[0], p[1], ro, wo, app, dir};
  for (int fd : fds) CHECK_EQ(close(fd), 0);
  CHECK_EQ(unlink("/tmp/sf_in"), 0);
  CHECK_EQ(unlink("/tmp/sf_out"), 0);
}

}  // namespace

int main(int argc, char** argv, char**) {
  g_program = "fstest";
  for (int i = 1; i < argc; ++i) {
    if (!memcmp(argv[i], "uid=", 4)) parse_u64(argv[i] + 4, &g_uid);
    if (!memcmp(argv[i], "gid=", 4)) parse_u64(argv[i] + 4, &g_gid);
  }
  read_files();
  list_directory();
  write_tmp();
  bad_calls();
  devices_and_descriptors();
  file_mappings();
  send_files();
  // Everything made under /tmp is gone again: the kernel's leak check
  // at the end of init sees whether its frames are too.
  Record("fstest").u64("checks", g_checks).u64("failures", g_failures);
  return g_failures ? 1 : 0;
}
