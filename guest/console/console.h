// Human-readable console output. Machine-readable records go through
// record.h, which writes the "@pvk {json}" lines of the console protocol.
#pragma once
#include <stdarg.h>
#include <stddef.h>

namespace pvk {

void console_write(const char* s, size_t n);
void kprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void vkprintf(const char* fmt, va_list ap);

}  // namespace pvk
