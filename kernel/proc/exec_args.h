// execve's argument and environment strings on their way from the caller
// to the new program's stack, with Linux's limits: one string at most
// kMaxArgStrlen bytes with its NUL, argv and envp each at most
// kMaxArgStrings pointers, and all strings plus one pointer for each at
// most kMaxArgBytes (a quarter of the 8 MiB stack limit getrlimit reports).
// Beyond a limit is E2BIG; a pointer that does not read — in either array
// or any string — is EFAULT. The bytes live in frames, never on a kernel
// stack, and every frame goes back on every path (the destructor).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/lib/error_or.h"
#include "base/lib/types.h"

namespace pvk {

inline constexpr uint64_t kMaxArgStrlen = 32 * kPageSize;  // one string with its NUL (Linux: MAX_ARG_STRLEN)
inline constexpr uint64_t kMaxArgStrings = 0x7fffffff;     // pointers in argv, and in envp (MAX_ARG_STRINGS)
inline constexpr uint64_t kMaxArgBytes = uint64_t{2} << 20;  // strings + a pointer each

// Bytes at offsets [0, capacity) held in frames of their own, which one
// index frame lists (32-bit frame numbers: up to 1024 frames, 4 MiB).
class FrameBytes {
 public:
  static constexpr uint64_t kMaxPages = kPageSize / sizeof(uint32_t);

  FrameBytes() = default;
  FrameBytes(const FrameBytes&) = delete;
  FrameBytes& operator=(const FrameBytes&) = delete;
  ~FrameBytes() { release(); }

  // At least `bytes` of room: ENOMEM past kMaxPages or without frames.
  // New frames are cleared when `clear` (what user mode will see).
  ErrorOr<void> reserve(uint64_t bytes, bool clear);
  uint64_t capacity() const { return uint64_t{pages_} * kPageSize; }
  unsigned pages() const { return pages_; }
  Pfn page(unsigned i) const;
  // The byte at `off` and those after it up to the end of its frame.
  uint8_t* at(uint64_t off) const;
  void write(uint64_t off, const void* src, uint64_t len);
  void read(uint64_t off, void* dst, uint64_t len) const;
  // Frames [0, n) now belong to someone else (mapped into a space): the
  // buffer frees only the others and its index.
  void give_away(unsigned n) { given_ = n; }
  void release();

 private:
  uint32_t* index() const;
  Pfn index_{};
  bool have_index_ = false;
  unsigned pages_ = 0;
  unsigned given_ = 0;
};

// The strings themselves, packed one after another: argv's, then envp's.
// A `#!` script's exec puts the interpreter's strings in front in place
// of argv[0] (the prefix: kernel strings that outlive the exec).
class ExecArgs {
 public:
  // Copies the caller's NULL-terminated arrays (0 is an empty array).
  // `reserved` bytes of the total are the file name's. An empty argv
  // becomes {""}, as on Linux, so a program always has an argv[0].
  ErrorOr<void> from_user(uint64_t user_argv, uint64_t user_envp, uint64_t reserved);
  // From kernel strings (init's command line), with the same limits.
  ErrorOr<void> from_kernel(const char* const* argv, const char* const* envp, uint64_t reserved);
  // argv[0] gives way to the n kernel strings of `with` (at most 3).
  ErrorOr<void> replace_argv0(const char* const* with, unsigned n, uint64_t reserved);

  uint64_t argc() const { return argc_; }
  uint64_t envc() const { return envc_; }
  // The bytes of every string with its NUL, in order (prefix, argv, envp).
  uint64_t string_bytes() const { return prefix_bytes_ + used_ - skip_; }
  // Copies every string in order to dst at `off`; calls at(k, offset)
  // for string k's offset in that run.
  template <typename F>
  void lay_out(FrameBytes& dst, uint64_t off, F&& at) const;

 private:
  ErrorOr<void> count(uint64_t user_array, uint64_t& n);
  ErrorOr<void> copy_strings(uint64_t user_array, uint64_t n);
  ErrorOr<void> append(const char* s, uint64_t len_with_nul);
  ErrorOr<void> check_total(uint64_t reserved) const;

  FrameBytes bytes_;
  uint64_t used_ = 0;  // bytes_ in use
  uint64_t skip_ = 0;  // leading bytes of argv[0] that a prefix replaces
  uint64_t argc_ = 0, envc_ = 0;
  const char* prefix_[3] = {};
  unsigned prefix_n_ = 0;
  uint64_t prefix_bytes_ = 0;
  uint64_t limit_ = kMaxArgBytes;  // strings + pointers, minus the file name's share
};

template <typename F>
void ExecArgs::lay_out(FrameBytes& dst, uint64_t off, F&& at) const {
  uint64_t k = 0, pos = 0;
  for (unsigned i = 0; i < prefix_n_; ++i) {
    uint64_t len = 0;
    while (prefix_[i][len]) ++len;
    at(k++, pos);
    dst.write(off + pos, prefix_[i], len + 1);
    pos += len + 1;
  }
  // The stored strings: copied a frame's run at a time, a new string
  // starting after every NUL.
  bool start = true;
  for (uint64_t s = skip_; s < used_;) {
    const uint8_t* src = bytes_.at(s);
    uint64_t run = kPageSize - s % kPageSize;
    if (run > used_ - s) run = used_ - s;
    for (uint64_t j = 0; j < run; ++j) {
      if (start) at(k++, pos + j);
      start = src[j] == 0;
    }
    dst.write(off + pos, src, run);
    pos += run;
    s += run;
  }
}

}  // namespace pvk
