// The C memory/string functions. The kernel provides its own (the compiler
// emits calls to memset/memcpy even in freestanding code); host builds of the
// shared mm/ and pvops/ code use the C library's.
#pragma once
#include <stddef.h>
#ifdef PVK_FREESTANDING
extern "C" {
void* memset(void* dst, int c, size_t n);
void* memcpy(void* dst, const void* src, size_t n);
void* memmove(void* dst, const void* src, size_t n);
int memcmp(const void* a, const void* b, size_t n);
size_t strlen(const char* s);
int strcmp(const char* a, const char* b);
int strncmp(const char* a, const char* b, size_t n);
}
#else
#include <string.h>
#endif
