// Human-readable console output. Machine-readable records go through
// record.h, which writes the "@pvk {json}" lines of the console protocol.
#pragma once
#include <stdarg.h>
#include <stddef.h>

namespace pvk {

void console_write(const char* s, size_t n);
// Starts a new line unless the console is at the start of one.
void console_begin_line();
// What user programs write to the console: a line they start with "@pvk" is
// written as "@pvk-user", so no program can forge a kernel record (the host
// parser reads those as the program's data, never as the kernel's verdict).
void console_write_user(const char* s, size_t n);
void kprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void vkprintf(const char* fmt, va_list ap);

}  // namespace pvk
