#include "kernel/proc/shebang.h"

namespace pvk {
namespace {

bool blank(char c) { return c == ' ' || c == '\t'; }

}  // namespace

ErrorOr<bool> parse_shebang(char* buf, size_t n, bool whole_file, Shebang& out) {
  out = Shebang{};
  if (n < 2 || buf[0] != '#' || buf[1] != '!') return false;
  size_t end = 2;  // the line: [2, end)
  while (end < n && buf[end] != '\n' && buf[end] != 0) ++end;
  const bool whole_line = end < n || whole_file;
  size_t i = 2;
  while (i < end && blank(buf[i])) ++i;
  const size_t name = i;
  while (i < end && !blank(buf[i])) ++i;
  if (i == name) return Errno::ENOEXEC;
  if (i == end && !whole_line) return Errno::ENOEXEC;  // the name may go on past what was read
  const size_t name_end = i;
  while (i < end && blank(buf[i])) ++i;
  size_t arg_end = end;
  while (arg_end > i && blank(buf[arg_end - 1])) --arg_end;
  if (end == n && !whole_file) {
    // The line runs past the buffer but the name is whole: Linux keeps
    // what it read of the argument; one byte of room for its NUL.
    if (arg_end == n) --arg_end;
  }
  buf[name_end] = 0;
  out.interpreter = buf + name;
  if (arg_end > i) {
    buf[arg_end] = 0;
    out.argument = buf + i;
  }
  return true;
}

}  // namespace pvk
