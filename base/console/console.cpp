#include "base/console/console.h"

#include "base/arch/platform.h"
#include "base/lib/format.h"

namespace pvk {
namespace {

// Whether the console's last byte ended a line: a record must start on a
// line of its own, whatever was printed before it (a cut kprintf, a user
// program's partial line).
bool g_line_start = true;

// A line a user program starts with this would read as a kernel record.
constexpr char kRecordMark[] = "@pvk";
constexpr size_t kRecordMarkLen = sizeof kRecordMark - 1;
constexpr char kUserRecordMark[] = "@pvk-user";
// How many bytes of kRecordMark the user's current line has matched at its
// start and we hold back (they may arrive one write() at a time).
size_t g_user_held = 0;

}  // namespace

void console_write(const char* s, size_t n) {
  if (!n) return;
  g_platform->console_write(s, n);
  g_line_start = s[n - 1] == '\n';
}

void console_begin_line() {
  if (!g_line_start) console_write("\n", 1);
}

void console_write_user(const char* s, size_t n) {
  bool at_start = g_user_held > 0 || g_line_start;
  size_t run = 0;  // s[run, i) is plain output not written yet
  for (size_t i = 0; i < n; ++i) {
    const char c = s[i];
    if (at_start || g_user_held) {
      if (c == kRecordMark[g_user_held]) {
        console_write(s + run, i - run);
        run = i + 1;
        if (++g_user_held == kRecordMarkLen) {
          console_write(kUserRecordMark, sizeof kUserRecordMark - 1);
          g_user_held = 0;
        }
        at_start = false;
        continue;
      }
      if (g_user_held) {  // not the mark after all: give back what was held
        console_write(s + run, i - run);
        console_write(kRecordMark, g_user_held);
        g_user_held = 0;
        run = i;
      }
    }
    at_start = c == '\n';
  }
  console_write(s + run, n - run);
}

void vkprintf(const char* fmt, va_list ap) {
  char buf[512];
  size_t n = vformat(buf, sizeof buf, fmt, ap);
  console_write(buf, n < sizeof buf ? n : sizeof buf - 1);
}

void kprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vkprintf(fmt, ap);
  va_end(ap);
}

}  // namespace pvk
