// The kernel's printf (base/lib/format.{h,cpp}), checked against the C
// library's snprintf wherever the two are meant to agree.
#include "host_compat.h"  // first: see there

#include <gtest/gtest.h>

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "base/lib/format.h"

#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"

namespace pvk {
namespace {

// format() and snprintf() on the same input: same text, same return value.
template <typename... Args>
void expect_like_printf(const char* fmt, Args... args) {
  char mine[256], libc[256];
  memset(mine, 0x7f, sizeof mine);
  const size_t n = format(mine, sizeof mine, fmt, args...);
  const int m = snprintf(libc, sizeof libc, fmt, args...);
  EXPECT_STREQ(mine, libc) << "format \"" << fmt << "\"";
  EXPECT_EQ(n, static_cast<size_t>(m)) << "format \"" << fmt << "\"";
}

// Without the printf attribute, for inputs the compiler would (rightly) warn about.
std::string fmt_unchecked(const char* f, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, f);
  vformat(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, f);
  vformat(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

TEST(Format, PlainTextAndPercent) {
  expect_like_printf("hello, world");
  expect_like_printf("");
  expect_like_printf("100%% sure");
  expect_like_printf("%c%c%c", 'p', 'v', 'k');
}

TEST(Format, Strings) {
  expect_like_printf("[%s]", "abc");
  expect_like_printf("[%s|%s]", "", "x");
  expect_like_printf("%s=%s", "mmu", "batched");
  EXPECT_EQ(fmt_unchecked("%s", static_cast<const char*>(nullptr)), "(null)");
}

TEST(Format, StringPrecision) {
  const char* s = "abcdef";
  for (int prec : {0, 1, 3, 6, 7, 100}) {
    SCOPED_TRACE(prec);
    expect_like_printf("[%.*s]", prec, s);
  }
  expect_like_printf("[%.2s]", s);
  expect_like_printf("[%.0s]", s);
  expect_like_printf("[%.10s]", s);
  expect_like_printf("%.*s and %s", 2, "xyz", "rest");  // .* consumes its argument
}

// With a precision, %s may be given an array that is not NUL-terminated
// (C11 7.21.6.1p8), e.g. a word inside the command line. format() tests
// s[n] before the precision, so it reads one byte past such a word: here
// the word ends a page followed by a guard page, and the read faults. (The
// sanitize build reports it as a stack-buffer-overflow with a stack array.)
// See the report.
TEST(Format, PrecisionNeverReadsPastTheLimit) {
  const long page = sysconf(_SC_PAGESIZE);
  char* two = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(two, MAP_FAILED);
  ASSERT_EQ(mprotect(two + page, page, PROT_NONE), 0);
  char* word = two + page - 4;
  memcpy(word, "wrpt", 4);  // no terminator: the next byte is unmapped
  EXPECT_EQ(fmt("%.*s!", 4, word), "wrpt!");
  munmap(two, 2 * page);
}

TEST(Format, Unsigned) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{9}, uint64_t{10}, uint64_t{4096}, uint64_t{UINT32_MAX},
                     uint64_t{UINT32_MAX} + 1, uint64_t{UINT64_MAX}}) {
    SCOPED_TRACE(v);
    expect_like_printf("%lu", static_cast<unsigned long>(v));
    expect_like_printf("%llu", static_cast<unsigned long long>(v));
    expect_like_printf("%lx", static_cast<unsigned long>(v));
    expect_like_printf("%lX", static_cast<unsigned long>(v));
    expect_like_printf("%016lx", static_cast<unsigned long>(v));
    expect_like_printf("%zu", static_cast<size_t>(v));
  }
  for (unsigned v : {0u, 7u, 255u, 0xdeadbeefu, UINT_MAX}) {
    SCOPED_TRACE(v);
    expect_like_printf("%u", v);
    expect_like_printf("%x", v);
    expect_like_printf("%08x", v);
    expect_like_printf("%04X", v);
  }
}

TEST(Format, Signed) {
  for (int v : {0, 1, -1, 42, -42, 1000000, INT_MAX, INT_MIN}) {
    SCOPED_TRACE(v);
    expect_like_printf("%d", v);
    expect_like_printf("%i", v);
    expect_like_printf("%05d", v);
    expect_like_printf("%012d", v);
  }
  for (long v : {0L, -1L, LONG_MAX, LONG_MIN, -1234567890123L}) {
    SCOPED_TRACE(v);
    expect_like_printf("%ld", v);
    expect_like_printf("%lld", static_cast<long long>(v));
  }
}

TEST(Format, WidthNarrowerThanTheNumber) {
  expect_like_printf("%2d", 12345);
  expect_like_printf("%02lx", 0xabcdefUL);
  expect_like_printf("%1u", 99u);
}

TEST(Format, Pointer) {
  // The kernel always prints all 16 digits (glibc does not), null included.
  for (uint64_t v : {uint64_t{0}, uint64_t{0x1234}, uint64_t{0xffff888000000000}}) {
    char expected[32];
    snprintf(expected, sizeof expected, "0x%016lx", static_cast<unsigned long>(v));
    EXPECT_EQ(fmt("%p", reinterpret_cast<void*>(v)), expected);
  }
}

TEST(Format, MixedArgumentsStayInStep) {
  expect_like_printf("%s %d %lu %x %c %s", "a", -5, 1ul << 40, 0xbeefu, 'z', "end");
  expect_like_printf("%lu/%u/%ld/%d", ~0ul, 3u, -7L, -8);
}

TEST(Format, TruncationReturnsTheFullLengthAndTerminates) {
  char buf[16];
  memset(buf, 'X', sizeof buf);
  size_t n = format(buf, 8, "hello world");
  EXPECT_EQ(n, strlen("hello world"));
  EXPECT_STREQ(buf, "hello w");
  for (size_t i = 8; i < sizeof buf; ++i) EXPECT_EQ(buf[i], 'X') << "wrote past cap at " << i;

  memset(buf, 'X', sizeof buf);
  n = format(buf, 5, "%lu", 1234567890ul);
  EXPECT_EQ(n, 10u);
  EXPECT_STREQ(buf, "1234");
  EXPECT_EQ(buf[5], 'X');

  // Every cap, against snprintf.
  const char* f = "%s:%016lx:%d";
  char full[64];
  const int len = snprintf(full, sizeof full, f, "rec", 0xfeedUL, -3);
  for (size_t cap = 1; cap <= static_cast<size_t>(len) + 2; ++cap) {
    char mine[64], libc[64];
    memset(mine, 'X', sizeof mine);
    EXPECT_EQ(format(mine, cap, f, "rec", 0xfeedUL, -3), static_cast<size_t>(len)) << cap;
    snprintf(libc, cap, f, "rec", 0xfeedUL, -3);
    EXPECT_STREQ(mine, libc) << cap;
    EXPECT_EQ(mine[cap], 'X') << cap;
  }
}

TEST(Format, CapacityOneAndZero) {
  char buf[4] = {'X', 'X', 'X', 'X'};
  EXPECT_EQ(format(buf, 1, "abc"), 3u);
  EXPECT_EQ(buf[0], '\0');
  EXPECT_EQ(buf[1], 'X');
  buf[0] = 'X';
  EXPECT_EQ(format(buf, 0, "abc%d", 12), 5u) << "sizing call";
  EXPECT_EQ(buf[0], 'X') << "cap 0 writes nothing";
  EXPECT_EQ(format(nullptr, 0, "%s", "sized"), 5u);
}

TEST(Format, UnknownConversionsAreShownAndConsumeNothing) {
  EXPECT_EQ(fmt_unchecked("%q %d", 5), "%q 5");
  EXPECT_EQ(fmt_unchecked("tail %"), "tail ");
}

// printf right-justifies in a field width; format() pads *after* a string
// (left-justifies) and puts the '-' of a space-padded negative number before
// the padding ("-  42" where printf prints "  -42"). No caller uses a
// space-padded width yet, but format() carries printf's format attribute,
// so callers will expect printf's output. See the report.
TEST(Format, SpacePaddedWidthRightJustifiesLikePrintf) {
  expect_like_printf("[%5s]", "ab");
  expect_like_printf("[%8.3s]", "abcdef");
  expect_like_printf("[%5d]", -42);
  expect_like_printf("[%6ld]", -1L);
}

}  // namespace
}  // namespace pvk
