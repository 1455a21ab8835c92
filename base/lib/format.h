// A small printf for the kernel: %s %c %d %i %u %x %X %p %%, with l/ll/z
// length modifiers, a field width, '0' padding and a %s precision (.N, .*). Enough for diagnostics
// and records; no floating point (the kernel has no FP state).
#pragma once
#include <stdarg.h>
#include <stddef.h>

namespace pvk {

// Formats into buf (always NUL-terminated when cap > 0); returns the length
// the full output would have had.
size_t vformat(char* buf, size_t cap, const char* fmt, va_list ap);
size_t format(char* buf, size_t cap, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

}  // namespace pvk
