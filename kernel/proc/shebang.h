// `#!` lines: what exec runs for a script (Linux's binfmt_script rules).
// Pure, so the host tests run exactly this code.
#pragma once
#include <stddef.h>

#include "base/lib/error_or.h"

namespace pvk {

inline constexpr size_t kShebangBytes = 256;  // what exec reads of a file to decide (BINPRM_BUF_SIZE)

struct Shebang {
  const char* interpreter = nullptr;  // NUL-terminated, inside the buffer
  const char* argument = nullptr;     // the one optional argument, or null
};

// buf[0, n) is the start of a file (`whole_file`: all of it, and then buf
// has room for one more byte, a NUL after the line). False if it does not start with "#!".
// Otherwise the interpreter and its optional argument (everything after
// the interpreter's name up to the end of the line, blanks trimmed at both
// ends) are cut out in place. ENOEXEC for no interpreter, or for a line
// that does not end within the buffer while the interpreter's name still
// runs to its end (it would be cut short) and the file goes on.
ErrorOr<bool> parse_shebang(char* buf, size_t n, bool whole_file, Shebang& out);

}  // namespace pvk
