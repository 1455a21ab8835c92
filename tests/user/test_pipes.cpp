// pipes: bulk transfer both ways, EOF, EPIPE/SIGPIPE, dup2 onto stdout;
// pipe_full_writers: two writers blocked on one full pipe.
#include "harness.h"

namespace proctest {
namespace {

constexpr size_t kStreamBytes = 256 * 1024;
// Odd sizes, some larger than a pipe's buffer, so both sides block and wake.
constexpr size_t kWriteChunks[] = {1, 4093, 777, 65537, 13, 8191, 100003};
constexpr size_t kReadChunks[] = {1, 3001, 511, 8192, 65536, 17, 99991};
uint8_t g_buf[100 * 1024];

uint8_t stream_byte(size_t i, uint8_t seed) { return static_cast<uint8_t>((i * 131) ^ (i >> 9) ^ seed); }

uint64_t checksum_step(uint64_t sum, uint8_t b) { return (sum ^ b) * 0x100000001b3ull; }

// Writes kStreamBytes of the seed's stream in kWriteChunks; returns the
// checksum of what was written, or 0 (with a failed check) on a short write.
uint64_t send_stream(int fd, uint8_t seed) {
  uint64_t sum = 0xcbf29ce484222325ull;
  size_t off = 0;
  for (unsigned k = 0; off < kStreamBytes; ++k) {
    size_t n = kWriteChunks[k % (sizeof kWriteChunks / sizeof kWriteChunks[0])];
    if (n > kStreamBytes - off) n = kStreamBytes - off;
    for (size_t j = 0; j < n; ++j) {
      g_buf[j] = stream_byte(off + j, seed);
      sum = checksum_step(sum, g_buf[j]);
    }
    const int64_t r = write_all(fd, g_buf, n);
    CHECK_EQ(r, n);
    if (r != static_cast<int64_t>(n)) return 0;
    off += n;
  }
  return sum;
}

struct Received {
  uint64_t bytes = 0, bad = 0, sum = 0xcbf29ce484222325ull, reads = 0;
  int64_t error = 0;
};

// Reads until EOF in kReadChunks, checking every byte against the stream.
Received recv_stream(int fd, uint8_t seed) {
  Received r;
  for (unsigned k = 0;; ++k) {
    const size_t want = kReadChunks[k % (sizeof kReadChunks / sizeof kReadChunks[0])];
    const int64_t n = read(fd, g_buf, want);
    if (n < 0) {
      r.error = n;
      break;
    }
    if (n == 0) break;
    ++r.reads;
    if (n > static_cast<int64_t>(want)) r.error = -1000;
    for (int64_t j = 0; j < n; ++j) {
      r.bad += g_buf[j] != stream_byte(r.bytes + j, seed);
      r.sum = checksum_step(r.sum, g_buf[j]);
    }
    r.bytes += n;
  }
  return r;
}

}  // namespace

// 256 KiB parent -> child, then 256 KiB child -> parent, each in odd-sized
// writes and reads (both ends block and are woken), every byte checked, the
// checksums compared across the processes; the reader ends on EOF once the
// last writer closed. A short read returns what is there; reads after EOF
// keep returning 0. Writing with no reader gives -EPIPE with SIGPIPE
// ignored, and death by SIGPIPE without. dup2 onto fd 1 redirects stdout.
void test_pipes() {
  int down[2], up[2], back[2];
  CHECK_EQ(pipe(down), 0);
  CHECK_EQ(pipe(up), 0);
  CHECK_EQ(pipe(back), 0);
  CHECK(down[0] >= 0 && down[1] >= 0 && down[0] != down[1]);

  int64_t pid = fork_helper();
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    close(back[0]);
    const Received r = recv_stream(down[0], 0x11);
    CHECK_EQ(r.error, 0);
    CHECK_EQ(r.bytes, kStreamBytes);
    CHECK_EQ(r.bad, 0);
    char c;
    CHECK_EQ(read(down[0], &c, 1), 0);  // still EOF
    CHECK_EQ(write_all(back[1], &r.sum, sizeof r.sum), sizeof r.sum);
    const uint64_t sent = send_stream(up[1], 0x22);
    CHECK_EQ(write_all(back[1], &sent, sizeof sent), sizeof sent);
    helper_exit();
  }
  CHECK(pid > 0);
  CHECK_EQ(close(down[0]), 0);
  CHECK_EQ(close(up[1]), 0);
  CHECK_EQ(close(back[1]), 0);
  const uint64_t t0 = now_ns();
  const uint64_t sent = send_stream(down[1], 0x11);
  CHECK_EQ(close(down[1]), 0);  // the child's read now ends with EOF
  const Received got = recv_stream(up[0], 0x22);
  const uint64_t ns = now_ns() - t0;
  CHECK_EQ(got.error, 0);
  CHECK_EQ(got.bytes, kStreamBytes);
  CHECK_EQ(got.bad, 0);
  uint64_t child_sum = 0, child_sent = 0;
  CHECK_EQ(read_full(back[0], &child_sum, sizeof child_sum), sizeof child_sum);
  CHECK_EQ(read_full(back[0], &child_sent, sizeof child_sent), sizeof child_sent);
  CHECK(child_sum == sent);      // what the child received is what we sent
  CHECK(got.sum == child_sent);  // and the other way round
  CHECK_HELPER_OK(pid);
  detail("bytes_each_way", kStreamBytes);
  detail("reads", got.reads);
  detail("transfer_ns", ns);
  CHECK_EQ(close(up[0]), 0);
  CHECK_EQ(close(back[0]), 0);

  // A read returns what is there instead of waiting for the full count.
  int p[2];
  CHECK_EQ(pipe(p), 0);
  CHECK_EQ(write(p[1], "12345", 5), 5);
  char small[100];
  CHECK_EQ(read(p[0], small, sizeof small), 5);
  CHECK(memcmp(small, "12345", 5) == 0);
  CHECK_EQ(close(p[1]), 0);
  CHECK_EQ(read(p[0], small, sizeof small), 0);  // EOF
  CHECK_EQ(close(p[0]), 0);

  // No reader: -EPIPE with SIGPIPE ignored...
  CHECK_EQ(pipe(p), 0);
  CHECK_EQ(close(p[0]), 0);  // before forking: no read end anywhere
  pid = fork_helper();
  if (pid == 0) {
    CHECK_EQ(sigaction(SIGPIPE, SIG_IGN), 0);
    CHECK_EQ(write(p[1], "x", 1), -EPIPE);
    CHECK_EQ(write(p[1], "x", 1), -EPIPE);
    helper_exit();
  }
  CHECK_HELPER_OK(pid);
  // ...and death by SIGPIPE by default.
  pid = fork_helper();
  if (pid == 0) {
    CHECK_EQ(write(p[1], "x", 1), -EPIPE);  // not reached: SIGPIPE kills first
    helper_exit();
  }
  const int st = pid > 0 ? wait_for(pid) : -1;
  CHECK_KILLED_BY(st, SIGPIPE);
  CHECK_EQ(close(p[1]), 0);

  // dup2 onto stdout.
  static const char kMsg[] = "through dup2'd stdout\n";
  CHECK_EQ(pipe(p), 0);
  pid = fork_helper();
  if (pid == 0) {
    if (dup2(p[1], 1) != 1) exit_group(2);
    if (dup2(1, 1) != 1) exit_group(3);
    close(p[0]);
    close(p[1]);
    // fd 1 is now the only write end.
    if (write(1, kMsg, sizeof kMsg - 1) != sizeof kMsg - 1) exit_group(4);
    exit_group(0);
  }
  CHECK_EQ(close(p[1]), 0);
  char buf[64];
  const int64_t n = read_full(p[0], buf, sizeof buf);
  CHECK_EQ(n, sizeof kMsg - 1);
  CHECK(n == sizeof kMsg - 1 && memcmp(buf, kMsg, sizeof kMsg - 1) == 0);
  CHECK_HELPER_OK(pid);
  CHECK_EQ(close(p[0]), 0);
}

// Two processes write into one pipe, both blocking once it is full, while
// the only reader sleeps on a timer before it drains the pipe. Each
// writer, woken with the pipe still full, must sleep again without waking
// the other: one that woke the pipe's sleepers for bytes it had not
// written woke the other writer, which did the same, and the two passed
// the CPU back and forth in the kernel for ever; with no tick from user
// mode no timer expired, so the reader's sleep never ended. Every byte
// arrives, each writer's exactly once.
void test_pipe_full_writers() {
  constexpr size_t kEach = 72 * 1024;  // more than a pipe holds, on pvk (4 KiB) and on Linux (64 KiB)
  int p[2];
  CHECK_EQ(pipe(p), 0);
  int64_t writer[2];
  for (int i = 0; i < 2; ++i) {
    writer[i] = fork_helper();
    if (writer[i] == 0) {
      close(p[0]);
      memset(g_buf, 'a' + i, kEach);
      CHECK_EQ(write_all(p[1], g_buf, kEach), kEach);
      helper_exit();
    }
    CHECK(writer[i] > 0);
  }
  CHECK_EQ(close(p[1]), 0);
  const Timespec ms20{0, 20 * 1000 * 1000};  // both writers are blocked by now
  CHECK_EQ(nanosleep(&ms20, nullptr), 0);
  uint64_t got[2] = {}, other = 0;
  for (;;) {
    const int64_t n = read(p[0], g_buf, sizeof g_buf);
    CHECK(n >= 0);
    if (n <= 0) break;
    for (int64_t j = 0; j < n; ++j) {
      if (g_buf[j] == 'a' || g_buf[j] == 'b')
        ++got[g_buf[j] - 'a'];
      else
        ++other;
    }
  }
  CHECK_EQ(got[0], kEach);
  CHECK_EQ(got[1], kEach);
  CHECK_EQ(other, 0);
  for (int64_t w : writer)
    if (w > 0) CHECK_HELPER_OK(w);
  CHECK_EQ(close(p[0]), 0);
}

}  // namespace proctest
